"""Filecoin's registered seal proofs, the SDR graph, its parent cache and interactive challenges,
against independent oracles: Filecoin's published parent-cache digests and cache names
(storage-proofs-porep/parent_cache.json), published ChaCha test vectors, hashlib's BLAKE2b and
SHA-256, the ``cryptography`` package's ChaCha20, and a pure-Python re-derivation of the graph
rules written here from the Rust sources (not from engine/seal)."""

from __future__ import annotations

import hashlib
import math
import os
import struct
import time

import numpy as np
import pytest
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.seal import graph
from engine.seal import parent_cache as pc
from engine.seal.chacha import chacha_u64s, chacha_words
from engine.seal.challenges import all_interactive_challenges, interactive_challenges
from engine.seal.feistel import blake2b_16, invert_permute, permute, precompute
from engine.seal.graph import node_parents, sdr_parents
from engine.seal.registry import SEAL_PROOFS, SealProof, by_size, seal_proof

KIB, MIB, GIB = 1 << 10, 1 << 20, 1 << 30

# ---------------------------------------------------------------- the registry

# name: (registered id, sector size, api version, layers, challenges per partition, partitions,
# tree arities), from rust-filecoin-proofs-api src/registry.rs (REGISTERED_PROOF_IDS, version())
# and filecoin-proofs src/constants.rs (LAYERS, POREP_PARTITIONS, minimum challenges 2 / 176,
# SectorShape* = LCTree<Poseidon, U8, sub, top>).
REGISTRY = {
    "StackedDrg2KiBV1": (0, 2 * KIB, "1.0.0", 2, 2, 1, (8, 0, 0)),
    "StackedDrg8MiBV1": (1, 8 * MIB, "1.0.0", 2, 2, 1, (8, 0, 0)),
    "StackedDrg512MiBV1": (2, 512 * MIB, "1.0.0", 2, 2, 1, (8, 0, 0)),
    "StackedDrg32GiBV1": (3, 32 * GIB, "1.0.0", 11, 18, 10, (8, 8, 0)),
    "StackedDrg64GiBV1": (4, 64 * GIB, "1.0.0", 11, 18, 10, (8, 8, 2)),
    "StackedDrg2KiBV1_1": (5, 2 * KIB, "1.1.0", 2, 2, 1, (8, 0, 0)),
    "StackedDrg8MiBV1_1": (6, 8 * MIB, "1.1.0", 2, 2, 1, (8, 0, 0)),
    "StackedDrg512MiBV1_1": (7, 512 * MIB, "1.1.0", 2, 2, 1, (8, 0, 0)),
    "StackedDrg32GiBV1_1": (8, 32 * GIB, "1.1.0", 11, 18, 10, (8, 8, 0)),
    "StackedDrg64GiBV1_1": (9, 64 * GIB, "1.1.0", 11, 18, 10, (8, 8, 2)),
}


def test_registry_table_is_filecoins() -> None:
    assert list(SEAL_PROOFS) == list(REGISTRY)
    for name, (rid, size, api, layers, challenges, partitions, arities) in REGISTRY.items():
        p = seal_proof(name)
        assert p.name == name
        assert p.registered_id == rid
        assert p.sector_size == size
        assert p.nodes == size // 32
        assert p.api_version == api
        assert p.layers == layers
        assert p.challenges == challenges
        assert p.partitions == partitions
        assert p.challenges * p.partitions >= (176 if size >= 32 * GIB else 2)
        assert p.base_degree == 6 and p.exp_degree == 8 and p.degree == 14
        assert p.tree_arities == arities
        assert by_size(size, v1_1=api == "1.1.0") is p


def test_porep_ids() -> None:
    # porep_id = registered proof id (u64 LE) || nonce 0 (u64 LE) || 16 zero bytes
    assert seal_proof("StackedDrg2KiBV1").porep_id == bytes(32)
    assert seal_proof("StackedDrg32GiBV1_1").porep_id == bytes([8]) + bytes(31)
    assert seal_proof("StackedDrg64GiBV1_1").porep_id.hex() == "09" + "00" * 31
    ids = [p.porep_id for p in SEAL_PROOFS.values()]
    assert len(set(ids)) == 10 and all(len(i) == 32 for i in ids)


def test_graph_seed_and_feistel_keys_from_porep_id() -> None:
    for p in SEAL_PROOFS.values():
        drg = hashlib.sha256(b"Filecoin_DRSample" + p.porep_id).digest()
        assert p.graph_seed == drg[:28]
        fk = hashlib.sha256(b"Filecoin_Feistel" + p.porep_id).digest()
        assert p.feistel_keys == tuple(int.from_bytes(fk[i:i + 8], "little") for i in (0, 8, 16, 24))


def test_unknown_proof_and_size_are_one_line_errors() -> None:
    with pytest.raises(ValueError, match="unknown seal proof 'StackedDrg4KiBV1'") as e:
        seal_proof("StackedDrg4KiBV1")
    assert "\n" not in str(e.value)
    with pytest.raises(ValueError, match="sector size 4096") as e:
        by_size(4096)
    assert "\n" not in str(e.value)
    assert by_size(2048, v1_1=False).name == "StackedDrg2KiBV1"
    assert by_size(2048).name == "StackedDrg2KiBV1_1"


# ---------------------------------------------------------------- ChaCha

def test_chacha8_reference_vectors() -> None:
    # draft-strombergson-chacha-test-vectors-01, TC1 (8 rounds, 256-bit all-zero key, all-zero
    # IV), the first two 64-byte blocks of keystream.
    tc1 = bytes.fromhex(
        "3e00ef2f895f40d67f5bb8e81f09a5a12c840ec3ce9a7f3b181be188ef711a1e"
        "984ce172b9216f419f445367456d5619314a42a3da86b001387bfdb80e0cfe42"
        "d2aefa0deaa5c151bf0adb6c01f2a5adc0fd581259f9a2aadcf20f8fd566a26b"
        "5032ec38bbc5da98ee0c6f568b872a65a08abf251deb21bb4b56e5d8821e68aa")
    assert struct.pack("<32I", *chacha_words(bytes(32), 32, rounds=8)) == tc1
    # The same draft's TC2 (key 01 00 .. 00), first block.
    tc2 = bytes.fromhex(
        "cf5ee9a0494aa9613e05d5ed725b804b12f4a465ee635acc3a311de8740489ea"
        "289d04f43c7518db56eb4433e498a1238cd8464d3763ddbb9222ee3bd8fae3c8")
    assert struct.pack("<16I", *chacha_words(bytes([1]) + bytes(31), 16, rounds=8)) == tc2


def test_chacha20_rand_chacha_vector() -> None:
    # rand_chacha 0.3.1 src/chacha.rs test_chacha_true_values_a (ChaChaRng = 20 rounds, zero
    # seed): the first two blocks as next_u32 words. Same block function, rounds as a parameter.
    expected = [
        0xade0b876, 0x903df1a0, 0xe56a5d40, 0x28bd8653, 0xb819d2bd, 0x1aed8da0, 0xccef36a8,
        0xc70d778b, 0x7c5941da, 0x8d485751, 0x3fe02477, 0x374ad8b8, 0xf4b8436a, 0x1ca11815,
        0x69b687c3, 0x8665eeb2,
        0xbee7079f, 0x7a385155, 0x7c97ba98, 0x0d082d73, 0xa0290fcb, 0x6965e348, 0x3e53c612,
        0xed7aee32, 0x7621b729, 0x434ee69c, 0xb03371d5, 0xd539d874, 0x281fed31, 0x45fb0a51,
        0x1f0ae1ac, 0x6f4d794b,
    ]
    assert chacha_words(bytes(32), 32, rounds=20) == expected


@settings(max_examples=25, deadline=None)
@given(st.binary(min_size=32, max_size=32))
def test_chacha20_against_cryptography(key: bytes) -> None:
    # OpenSSL's ChaCha20 takes a 16-byte IV: a 32-bit LE block counter then the nonce; with a zero
    # nonce its state is rand_chacha's (64-bit counter from 0, zero stream).
    enc = Cipher(algorithms.ChaCha20(key, bytes(16)), mode=None).encryptor()
    stream = enc.update(bytes(64 * 3))
    assert struct.pack("<48I", *chacha_words(key, 48, rounds=20)) == stream


def test_next_u64_is_two_words_low_first() -> None:
    seed = os.urandom(32)
    w = chacha_words(seed, 40)
    u = chacha_u64s(seed, 20)
    assert u == [w[2 * i] + (w[2 * i + 1] << 32) for i in range(20)]


# ---------------------------------------------------------------- BLAKE2b and Feistel

@settings(max_examples=200, deadline=None)
@given(st.binary(min_size=16, max_size=16))
def test_blake2b_16_against_hashlib(msg: bytes) -> None:
    m0, m1 = struct.unpack("<2Q", msg)
    want = int.from_bytes(hashlib.blake2b(msg).digest()[:8], "little")
    assert int(blake2b_16(np.uint64(m0), np.uint64(m1))) == want


def _ref_round(right: int, key: int, right_mask: int) -> int:
    digest = hashlib.blake2b(right.to_bytes(8, "big") + key.to_bytes(8, "big")).digest()
    return int.from_bytes(digest[:8], "big") & right_mask


def _ref_permute(n: int, index: int, keys: tuple[int, ...]) -> int:
    log4 = 1
    while 4 ** log4 < n:
        log4 += 1
    half, mask = log4, (1 << log4) - 1

    def enc(x: int) -> int:
        left, right = x >> half, x & mask
        for k in keys[:3]:
            left, right = right, left ^ _ref_round(right, k, mask)
        return (left << half) | right

    u = enc(index)
    while u >= n:
        u = enc(u)
    return u


def test_feistel_precompute() -> None:
    assert precompute(512) == (0b1111100000, 0b11111, 5)
    assert precompute(4) == (0b10, 0b1, 1)
    assert precompute(1 << 33)[2] == 17


@pytest.mark.parametrize("n", [5, 17, 500, 2048])
def test_feistel_is_a_permutation_with_an_inverse(n: int) -> None:
    keys = tuple(int.from_bytes(os.urandom(8), "little") for _ in range(4))
    images = [permute(n, i, keys) for i in range(n)]
    assert sorted(images) == list(range(n))
    assert [invert_permute(n, y, keys) for y in images] == list(range(n))
    for i in range(0, n, max(1, n // 25)):
        assert images[i] == _ref_permute(n, i, keys)


# ---------------------------------------------------------------- the graph, re-derived in Python

def _ref_chacha8_words(seed: bytes, n: int) -> list[int]:
    def rotl(x: int, k: int) -> int:
        return ((x << k) | (x >> (32 - k))) & 0xFFFFFFFF

    out: list[int] = []
    counter = 0
    while len(out) < n:
        st0 = [0x61707865, 0x3320646E, 0x79622D32, 0x6B206574, *struct.unpack("<8I", seed),
               counter & 0xFFFFFFFF, counter >> 32, 0, 0]
        x = list(st0)
        for _ in range(4):
            for a, b, c, d in ((0, 4, 8, 12), (1, 5, 9, 13), (2, 6, 10, 14), (3, 7, 11, 15),
                               (0, 5, 10, 15), (1, 6, 11, 12), (2, 7, 8, 13), (3, 4, 9, 14)):
                x[a] = (x[a] + x[b]) & 0xFFFFFFFF
                x[d] = rotl(x[d] ^ x[a], 16)
                x[c] = (x[c] + x[d]) & 0xFFFFFFFF
                x[b] = rotl(x[b] ^ x[c], 12)
                x[a] = (x[a] + x[b]) & 0xFFFFFFFF
                x[d] = rotl(x[d] ^ x[a], 8)
                x[c] = (x[c] + x[d]) & 0xFFFFFFFF
                x[b] = rotl(x[b] ^ x[c], 7)
        out += [(x[i] + st0[i]) & 0xFFFFFFFF for i in range(16)]
        counter += 1
    return out[:n]


def _ref_parents(p: SealProof, node: int) -> list[int]:
    """drgraph.rs BucketGraph::parents then graph.rs correspondent, in Python."""
    v1_1 = p.api_version != "1.0.0"
    seed = hashlib.sha256(b"Filecoin_DRSample" + p.porep_id).digest()[:28]
    fk = hashlib.sha256(b"Filecoin_Feistel" + p.porep_id).digest()
    keys = tuple(int.from_bytes(fk[i:i + 8], "little") for i in (0, 8, 16, 24))
    base = [0] * 6
    if node >= 2:
        w = _ref_chacha8_words(seed + node.to_bytes(4, "little"), 20)
        rng = iter(w[2 * i] | (w[2 * i + 1] << 32) for i in range(10))
        meta = node * 5
        n_buckets = math.ceil(math.log2(meta))
        drawn = []
        for _ in range(5):
            bucket = next(rng) % n_buckets + 1
            largest = min(meta, 1 << bucket)
            smallest = max(2, largest >> 1)
            distance = smallest + next(rng) % (largest - smallest + 1)
            mapped = (meta - distance) // 5
            drawn.append(node - 1 if mapped == node else mapped)
        base = [node - 1, *drawn] if v1_1 else [*drawn, node - 1]
    exp = []
    for i in range(8):
        t = _ref_permute(p.nodes * 8, node * 8 + i, keys)
        exp.append(t // 8 if v1_1 else (t & 0xFFFFFFFF) // 8)
    return base + exp


@settings(max_examples=12, deadline=None)
@given(st.sampled_from(list(REGISTRY)), st.data())
def test_node_parents_equal_python_rules_at_every_size(name: str, data: st.DataObject) -> None:
    # Every size, 32 and 64 GiB included, where V1's u32 truncation and wide buckets matter.
    p = seal_proof(name)
    node = data.draw(st.one_of(st.integers(0, 3), st.integers(0, p.nodes - 1)))
    assert node_parents(p, node) == _ref_parents(p, node)


def test_v1_expander_truncates_to_u32_at_64_gib() -> None:
    # At 2^31 nodes the expander space is 2^34: a V1 parent is (permuted mod 2^32) // 8, so it
    # never reaches 2^29; V1_1 parents do. Filecoin's test_graph_distribution_pathology shows
    # the same.
    v1, v11 = seal_proof("StackedDrg64GiBV1"), seal_proof("StackedDrg64GiBV1_1")
    nodes = [int(x) for x in np.random.default_rng().integers(2, v1.nodes, 6)]
    legacy = [q for n in nodes for q in node_parents(v1, n)[6:]]
    fixed = [q for n in nodes for q in node_parents(v11, n)[6:]]
    assert max(legacy) < 1 << 29
    assert max(fixed) >= 1 << 29


@pytest.fixture(scope="module")
def graphs() -> dict[str, np.ndarray]:
    return {n: sdr_parents(seal_proof(n))
            for n in ("StackedDrg2KiBV1", "StackedDrg2KiBV1_1", "StackedDrg8MiBV1_1")}


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(["StackedDrg2KiBV1", "StackedDrg2KiBV1_1", "StackedDrg8MiBV1_1"]),
       st.data())
def test_node_parents_is_the_cache_row(graphs: dict[str, np.ndarray], name: str,
                                       data: st.DataObject) -> None:
    p = seal_proof(name)
    node = data.draw(st.integers(0, p.nodes - 1))
    assert node_parents(p, node) == graphs[name][node].tolist()


def test_graph_shape(graphs: dict[str, np.ndarray]) -> None:
    for name, g in graphs.items():
        p = seal_proof(name)
        assert g.shape == (p.nodes, 14) and g.dtype == np.uint32
        assert int(g.max()) < p.nodes
        assert not g[:2, :6].any()  # nodes 0 and 1: all base parents are node 0
        idx = np.arange(p.nodes)[2:, None]
        assert (g[2:, :6] < idx).all()  # base parents are earlier nodes
        pred = g[2:, 0] if p.v1_1 else g[2:, 5]
        assert (pred == idx[:, 0] - 1).all()  # the immediate predecessor's place
        # The expander is a permutation of 8 * nodes collapsed by 8: each node is hit 8 times.
        assert (np.bincount(g[:, 6:].ravel(), minlength=p.nodes) == 8).all()


def test_sdr_parents_reports_progress(graphs: dict[str, np.ndarray]) -> None:
    seen: list[tuple[int, int]] = []
    small = sdr_parents(seal_proof("StackedDrg2KiBV1"), progress=lambda d, n: seen.append((d, n)))
    assert seen == [(64, 64)] and (small == graphs["StackedDrg2KiBV1"]).all()


def test_sdr_parents_in_several_steps_is_one_graph(monkeypatch,
                                                   graphs: dict[str, np.ndarray]) -> None:
    monkeypatch.setattr(graph, "PROGRESS_STEP", 10)  # 64 nodes in 7 steps, the last short
    seen: list[int] = []
    g = sdr_parents(seal_proof("StackedDrg2KiBV1_1"), progress=lambda d, n: seen.append(d))
    assert seen == [10, 20, 30, 40, 50, 60, 64]
    assert (g == graphs["StackedDrg2KiBV1_1"]).all()


def test_node_parents_refuses_a_node_outside() -> None:
    p = seal_proof("StackedDrg2KiBV1_1")
    for bad in (-1, 64):
        with pytest.raises(ValueError, match="outside the graph"):
            node_parents(p, bad)


# ---------------------------------------------------------------- the parent cache

# storage-proofs-porep/parent_cache.json, the two 2 KiB entries (name: digest).
CACHE_2KIB = {
    "StackedDrg2KiBV1": (
        "v28-sdr-parent-3f0eef38bb48af1f48ad65e14eb85b4ebfc167cec18cd81764f6d998836c9899",
        "3da49221e2ed55371b86d0bf3d6526fcf128af61bed904f966428db1b531750d"),
    "StackedDrg2KiBV1_1": (
        "v28-sdr-parent-494d91dc80f2df5272c4b9e129bc7ade9405225993af9fe34e6542a39a47554b",
        "840057702eea7652cf97e04306c30fe57174714d90de156a25eddd6075c25b97"),
}


def test_2kib_parent_caches_are_filecoins(tmp_path, graphs: dict[str, np.ndarray]) -> None:
    for name, (cache_id, digest) in CACHE_2KIB.items():
        p = seal_proof(name)
        assert pc.parent_cache_id(p) == cache_id
        path, got = pc.write_parent_cache(p, tmp_path)
        assert path.name == cache_id + ".cache"
        data = path.read_bytes()
        assert len(data) == 64 * 14 * 4
        assert hashlib.sha256(data).hexdigest() == digest == got
        assert data == graphs[name].astype("<u4").tobytes()
        assert (pc.read_parent_cache(p, path) == graphs[name]).all()


def test_8mib_v1_1_parent_cache_digest(graphs: dict[str, np.ndarray]) -> None:
    # parent_cache.json's 8 MiB V1_1 entry.
    p = seal_proof("StackedDrg8MiBV1_1")
    assert pc.parent_cache_id(p) == (
        "v28-sdr-parent-5eed212119fd91aa6220a27f31a8966444a9381842bceb3a1ea61525bd47a5b5")
    assert hashlib.sha256(graphs["StackedDrg8MiBV1_1"].astype("<u4").tobytes()).hexdigest() == (
        "03cd13565ded97c240a5f52e54295ad127bd0461b57904cb3a4d79b097bbecab")


def test_every_cache_name_is_in_filecoins_manifest() -> None:
    names = {pc.parent_cache_id(p): p.sector_size for p in SEAL_PROOFS.values()}
    assert names == {k: v[0] for k, v in pc.PUBLISHED.items()}


def test_a_wrong_cache_is_refused(tmp_path, graphs: dict[str, np.ndarray]) -> None:
    p = seal_proof("StackedDrg2KiBV1_1")
    bad = graphs["StackedDrg2KiBV1_1"].copy()
    bad[int(np.random.default_rng().integers(64)), int(np.random.default_rng().integers(14))] ^= 1
    with pytest.raises(ValueError, match="is not Filecoin's"):
        pc.write_parent_cache(p, tmp_path, bad)
    assert list(tmp_path.iterdir()) == []
    path = tmp_path / pc.parent_cache_name(p)
    path.write_bytes(pc.cache_bytes(bad))
    with pytest.raises(ValueError, match="digest is not Filecoin's"):
        pc.read_parent_cache(p, path)
    path.write_bytes(pc.cache_bytes(graphs["StackedDrg2KiBV1_1"])[:-4])
    with pytest.raises(ValueError, match="bytes, a StackedDrg2KiBV1_1 parent cache has 3584"):
        pc.read_parent_cache(p, path)


# The 512 MiB graphs take ~10 minutes each on two cores: run them with SEALTOP_HEAVY=1.
HEAVY = pytest.mark.skipif(not os.environ.get("SEALTOP_HEAVY"),
                           reason="512 MiB graphs take ~10 min each; set SEALTOP_HEAVY=1")


@pytest.mark.slow
@pytest.mark.parametrize("name", ["StackedDrg8MiBV1",
                                  pytest.param("StackedDrg512MiBV1", marks=HEAVY),
                                  pytest.param("StackedDrg512MiBV1_1", marks=HEAVY)])
def test_large_parent_cache_digests(name: str) -> None:
    p = seal_proof(name)
    t0 = time.perf_counter()
    g = sdr_parents(p)
    t1 = time.perf_counter()
    digest = pc.cache_digest(g)
    t2 = time.perf_counter()
    print(f"{name}: sdr_parents {t1 - t0:.1f} s, sha256 {t2 - t1:.1f} s")
    assert digest == pc.PUBLISHED[pc.parent_cache_id(p)][1]


# ---------------------------------------------------------------- interactive challenges

def _ref_challenge(nodes: int, replica_id: bytes, seed: bytes, j: int) -> int:
    h = hashlib.sha256(replica_id + seed + struct.pack("<I", j)).digest()
    return int(h[::-1].hex(), 16) % (nodes - 1) + 1


@settings(max_examples=30, deadline=None)
@given(st.sampled_from(list(REGISTRY)), st.binary(min_size=32, max_size=32),
       st.binary(min_size=32, max_size=32), st.data())
def test_interactive_challenges_follow_the_rule(name: str, replica_id: bytes, seed: bytes,
                                                data: st.DataObject) -> None:
    p = seal_proof(name)
    k = data.draw(st.integers(0, p.partitions - 1))
    got = interactive_challenges(p, replica_id, seed, k)
    assert len(got) == p.challenges
    assert got == [_ref_challenge(p.nodes, replica_id, seed, p.challenges * k + i)
                   for i in range(p.challenges)]
    assert all(1 <= c < p.nodes for c in got)


def test_challenges_never_touch_node_0() -> None:
    # 2 KiB: 64 nodes, challenges in 1..63. Over 2000 fresh seeds both ends of the range appear
    # and node 0 never does; a hash that is 0 mod 63 maps to node 1, not 0.
    p = seal_proof("StackedDrg2KiBV1_1")
    replica = os.urandom(32)
    seen = {c for _ in range(1000) for c in interactive_challenges(p, replica, os.urandom(32), 0)}
    assert 0 not in seen and min(seen) == 1 and max(seen) == 63
    for _ in range(5000):
        seed = os.urandom(32)
        h = hashlib.sha256(replica + seed + struct.pack("<I", 0)).digest()
        if int.from_bytes(h, "little") % 63 == 0:
            assert interactive_challenges(p, replica, seed, 0)[0] == 1
            break
    else:
        pytest.fail("no seed whose first challenge hash is 0 mod 63 in 5000 tries")


def test_partitions_continue_the_index() -> None:
    p = seal_proof("StackedDrg32GiBV1_1")
    replica, seed = os.urandom(32), os.urandom(32)
    every = all_interactive_challenges(p, replica, seed)
    assert len(every) == 10 and all(len(c) == 18 for c in every)
    flat = [c for part in every for c in part]
    assert flat == [_ref_challenge(p.nodes, replica, seed, j) for j in range(180)]


def test_challenge_inputs_are_checked() -> None:
    p = seal_proof("StackedDrg32GiBV1_1")
    with pytest.raises(ValueError, match="replica_id must be 32 bytes"):
        interactive_challenges(p, bytes(31), bytes(32), 0)
    with pytest.raises(ValueError, match="seed must be 32 bytes"):
        interactive_challenges(p, bytes(32), bytes(33), 0)
    with pytest.raises(ValueError, match="partition 10 is outside"):
        interactive_challenges(p, bytes(32), bytes(32), 10)
