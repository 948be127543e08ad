"""Fr32, the seal hashes, trees, labels and commitments of engine/seal against independent
oracles: Python ints for Fr32 and Fr, hashlib for SHA-256, the Python-int neptune reference
(engine/circuit/poseidon_params.py) for Poseidon, and Filecoin's published zero commitments."""

from __future__ import annotations

import dataclasses
import hashlib
import os
import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.circuit.native import poseidon_many_mont
from engine.circuit.poseidon_params import poseidon_hash
from engine.seal.commitments import comm_c, comm_d, comm_r, comm_r_last, zero_comm_d
from engine.seal.fr32 import fr32_pad, fr32_pad_array, fr32_unpad, unpadded_size
from engine.seal.graph import sdr_parents
from engine.seal.hashing import poseidon_nodes, sha256_pairs, sha256_rows, sha256_trunc
from engine.seal.labels import (
    column_hash,
    column_hashes,
    decode,
    encode,
    label_layers,
    label_node,
    replica_id,
)
from engine.seal.poseidon_sparse import (
    poseidon_sparse_mont,
    sparse_constants,
    sparse_hash_reference,
)
from engine.seal.registry import API_V1_0, API_V1_1, SEAL_PROOFS, by_size
from engine.seal.trees import (
    POSEIDON,
    SHA256,
    MerkleProof,
    level_arities,
    poseidon_tree,
    tree_d,
    verify_proof,
)
from kernels.constants import R_MOD
from kernels.cpu.convert import from_mont_fr, to_mont_fr

KIB, MIB, GIB = 1 << 10, 1 << 20, 1 << 30

# The all-zero piece commitments Filecoin publishes: go-commp-utils, zerocomm/zerocomm.go,
# ``PieceComms`` (index = log2(padded size) - 7), the same values lotus and filecoin-ffi use for
# an empty sector's unsealed CID. An all-zero sector's comm_d is the one of its size.
PUBLISHED_ZERO_COMM_D = {
    2 * KIB: "fc7e928296e516faade986b28f92d44a4f24b935485223376a799027bc18f833",  # PieceComms[4]
    8 * MIB: "65f29e5d98d246c38b388cfc06db1f6b021303c5a289000bdce832a9c3ec421c",  # PieceComms[16]
    512 * MIB: "39560e7b13a93b07a243fd2720ffa7cb3e1d2e505ab3629e79f46313512cda06",  # [22]
    32 * GIB: "077e5fde35c50a9303a55009e3498a4ebedff39c42b710b730d8ec7ac7afa63e",  # [28]
    64 * GIB: "e64005a6bfe3777953b8ad6ef93f0fca1049b2041654f2a411f7702799cece02",  # [29]
}


def rand_nodes(n: int) -> np.ndarray:
    """n random field elements below 2^254 as uint8[n, 32] (like truncated digests)."""
    a = np.frombuffer(os.urandom(32 * n), np.uint8).reshape(n, 32).copy()
    a[:, 31] &= 0x3F
    return a


def to_int(node: bytes | np.ndarray) -> int:
    return int.from_bytes(bytes(node), "little")


def trunc(digest: bytes) -> bytes:
    return digest[:31] + bytes([digest[31] & 0x3F])


# ---- Fr32 ----------------------------------------------------------------------------------

def fr32_reference(raw: bytes) -> bytes:
    """Each 127 bytes as a 1016-bit LE integer cut into four 254-bit runs, each a 32-byte node."""
    out = b""
    for b in range(0, len(raw), 127):
        x = int.from_bytes(raw[b : b + 127], "little")
        out += b"".join(((x >> (254 * j)) & ((1 << 254) - 1)).to_bytes(32, "little") for j in range(4))
    return out


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 9).flatmap(lambda k: st.binary(min_size=127 * k, max_size=127 * k)))
def test_fr32_layout_and_round_trip(raw: bytes) -> None:
    padded = fr32_pad(raw)
    assert padded == fr32_reference(raw)
    assert len(padded) == len(raw) // 127 * 128
    assert all(padded[i] < 0x40 for i in range(31, len(padded), 32))  # two top bits clear
    assert fr32_unpad(padded) == raw


def test_fr32_all_ones_and_bad_input() -> None:
    ones = b"\xff" * 127
    padded = fr32_pad(ones)
    # first node: 254 ones; last node: the 254 - 3 * 254 + 1016 = 254 remaining ones
    assert to_int(padded[:32]) == (1 << 254) - 1 and to_int(padded[96:]) == (1 << 254) - 1
    assert fr32_pad_array(np.frombuffer(ones * 2, np.uint8)).shape == (8, 32)
    with pytest.raises(ValueError, match="multiple of 127"):
        fr32_pad(b"\0" * 128)
    with pytest.raises(ValueError, match="multiple of 128"):
        fr32_unpad(b"\0" * 127)
    bad = bytearray(padded)
    bad[63] |= 0x80  # node 1's top bit: no padding makes it
    with pytest.raises(ValueError, match="node 1"):
        fr32_unpad(bytes(bad))
    assert unpadded_size(2 * KIB) == 2032 and unpadded_size(32 * GIB) == 34091302912


# ---- SHA-256 ---------------------------------------------------------------------------------

@pytest.mark.parametrize("length", [0, 1, 31, 32, 55, 56, 63, 64, 65, 119, 120, 128, 1248, 1337])
def test_numba_sha256_matches_hashlib(length: int) -> None:
    msgs = np.frombuffer(os.urandom(7 * length), np.uint8).reshape(7, length)
    plain = sha256_rows(msgs)
    cut = sha256_rows(msgs, trim=True)
    for i in range(7):
        d = hashlib.sha256(msgs[i].tobytes()).digest()
        assert bytes(plain[i]) == d
        assert bytes(cut[i]) == trunc(d)


def test_numba_sha256_of_rows_of_different_lengths_matches_hashlib() -> None:
    width = 150  # up to three blocks; every length across the block edges, in random order
    lengths = np.random.default_rng(int.from_bytes(os.urandom(8), "little")).permutation(width + 1)
    msgs = np.frombuffer(os.urandom(len(lengths) * width), np.uint8).reshape(len(lengths), width)
    out = sha256_rows(msgs, trim=True, lengths=lengths)
    for i, n in enumerate(lengths):
        assert bytes(out[i]) == trunc(hashlib.sha256(msgs[i, :n].tobytes()).digest())
    with pytest.raises(ValueError, match="lengths"):
        sha256_rows(msgs, lengths=lengths + 1)


def test_sha256_pairs_is_tree_d_node_hash() -> None:
    pairs = 2 * 1024 + 50  # across the kernel's chunks of 1024 pairs, the last one partial
    nodes = np.frombuffer(os.urandom(32 * 2 * pairs), np.uint8).reshape(2 * pairs, 32)
    out = sha256_pairs(nodes)
    for i in range(pairs):
        assert bytes(out[i]) == trunc(hashlib.sha256(nodes[2 * i].tobytes() + nodes[2 * i + 1].tobytes()).digest())
    assert sha256_trunc(b"abc") == trunc(hashlib.sha256(b"abc").digest())
    with pytest.raises(ValueError):
        sha256_pairs(nodes[:3])


# ---- Poseidon on node bytes -------------------------------------------------------------------

@pytest.mark.parametrize("arity", [2, 8, 11])
def test_poseidon_nodes_match_reference(arity: int) -> None:
    rows = rand_nodes(3 * arity)
    out = poseidon_nodes(rows, arity)
    for g in range(3):
        want = poseidon_hash([to_int(rows[g * arity + i]) for i in range(arity)])
        assert to_int(out[g]) == want


@pytest.mark.parametrize("arity", [2, 8, 11])
def test_sparse_poseidon_is_neptunes(arity: int) -> None:
    rng = np.random.default_rng()
    rows = [[int.from_bytes(rng.bytes(32), "little") % R_MOD for _ in range(arity)] for _ in range(4)]
    rows.append([0] * arity)
    rows.append([R_MOD - 1] * arity)
    want = [poseidon_hash(r) for r in rows]
    assert [sparse_hash_reference(r) for r in rows] == want
    mont = to_mont_fr([x for r in rows for x in r]).reshape(len(rows), arity, 4)
    fast = poseidon_sparse_mont(mont)
    assert from_mont_fr(fast) == want
    assert np.array_equal(fast, poseidon_many_mont(mont))  # the plain numba batch
    c = sparse_constants(arity)
    assert len(c.partial_constants) == len(c.sparse_rows) == c.partial_rounds
    assert all(col[0] == 0 for col in c.sparse_cols)


def test_poseidon_refuses_non_field_nodes() -> None:
    rows = rand_nodes(2)
    rows[1] = np.frombuffer(R_MOD.to_bytes(32, "little"), np.uint8)  # r itself is not below r
    with pytest.raises(ValueError, match="node 1"):
        poseidon_nodes(rows, 2)
    with pytest.raises(ValueError, match="arity"):
        poseidon_nodes(rand_nodes(4), 4)


# ---- trees ------------------------------------------------------------------------------------

def naive_sha_root(leaves: list[bytes]) -> bytes:
    while len(leaves) > 1:
        leaves = [trunc(hashlib.sha256(leaves[i] + leaves[i + 1]).digest()) for i in range(0, len(leaves), 2)]
    return leaves[0]


def naive_poseidon_root(leaves: list[int], base: int, sub: int, top: int) -> int:
    """Filecoin's compound tree by its definition: (sub or 1) * (top or 1) separate base trees,
    then the sub level over groups of base roots, then the top level."""
    count = (sub or 1) * (top or 1)
    per = len(leaves) // count
    roots = []
    for t in range(count):
        row = leaves[t * per : (t + 1) * per]
        while len(row) > 1:
            row = [poseidon_hash(row[i : i + base]) for i in range(0, len(row), base)]
        roots.append(row[0])
    for a in (sub, top):
        if a:
            roots = [poseidon_hash(roots[i : i + a]) for i in range(0, len(roots), a)]
    assert len(roots) == 1
    return roots[0]


def test_tree_d_root_matches_naive() -> None:
    leaves = np.frombuffer(os.urandom(32 * 32), np.uint8).reshape(32, 32)
    tree = tree_d(leaves)
    assert tree.root == naive_sha_root([bytes(x) for x in leaves])
    assert comm_d(leaves) == tree.root
    with pytest.raises(ValueError, match="power-of-two"):
        tree_d(leaves[:24])


@pytest.mark.parametrize("shape,leaves", [((8, 0, 0), 64), ((8, 2, 0), 128), ((8, 8, 2), 1024),
                                           ((2, 0, 0), 16), ((8, 8, 0), 64)])
def test_poseidon_tree_root_matches_naive(shape: tuple[int, int, int], leaves: int) -> None:
    nodes = rand_nodes(leaves)
    tree = poseidon_tree(nodes, shape)
    assert to_int(tree.root) == naive_poseidon_root([to_int(x) for x in nodes], *shape)


def test_level_arities_of_filecoin_shapes() -> None:
    assert level_arities(64, (8, 0, 0)) == (8, 8)
    assert level_arities(32 * GIB // 32, (8, 8, 0)) == (8,) * 9 + (8,)
    assert level_arities(64 * GIB // 32, (8, 8, 2)) == (8,) * 9 + (8, 2)
    for proof in SEAL_PROOFS.values():
        levels = level_arities(proof.nodes, proof.tree_arities)
        assert int(np.prod(levels)) == proof.nodes
    with pytest.raises(ValueError):
        level_arities(100, (8, 0, 0))
    with pytest.raises(ValueError):
        level_arities(64, (8, 0, 2))


def _tampered(p: MerkleProof, **change: object) -> MerkleProof:
    fields = {k: getattr(p, k) for k in ("hasher", "leaf_index", "leaf", "arities", "siblings", "root")}
    fields.update(change)
    return MerkleProof(**fields)  # type: ignore[arg-type]


def _flip(node: bytes) -> bytes:
    return bytes([node[0] ^ 1]) + node[1:]


@pytest.mark.parametrize("kind", [SHA256, POSEIDON])
def test_merkle_proofs_verify_and_reject_tampering(kind: str) -> None:
    nodes = rand_nodes(128)
    tree = tree_d(nodes) if kind == SHA256 else poseidon_tree(nodes, (8, 2, 0))
    rng = np.random.default_rng()
    for leaf in [0, 127, *rng.integers(0, 128, 6).tolist()]:
        p = tree.proof(int(leaf))
        assert p.leaf == bytes(nodes[leaf])
        assert verify_proof(p, tree.root)
        assert [pos for _, pos in tree.path(int(leaf))] == list(p.positions)
        level = int(rng.integers(0, len(p.siblings)))
        slot = int(rng.integers(0, len(p.siblings[level])))
        sib = list(p.siblings)
        row = list(sib[level])
        row[slot] = _flip(row[slot])
        sib[level] = tuple(row)
        assert not verify_proof(_tampered(p, siblings=tuple(sib)), tree.root)
        assert not verify_proof(_tampered(p, leaf=_flip(p.leaf)), tree.root)
        other = (leaf + 1 + int(rng.integers(0, 126))) % 128
        assert not verify_proof(_tampered(p, leaf_index=other), tree.root)
        assert not verify_proof(_tampered(p, leaf_index=128), tree.root)
        assert not verify_proof(p, _flip(tree.root))
        assert not verify_proof(_tampered(p, siblings=p.siblings[:-1]), tree.root)
        assert not verify_proof(_tampered(p, hasher=POSEIDON if kind == SHA256 else SHA256), tree.root)
        if kind == POSEIDON:  # a sibling that is not a field element is refused, not raised
            sib = list(p.siblings)
            sib[0] = (R_MOD.to_bytes(32, "little"), *sib[0][1:])
            assert not verify_proof(_tampered(p, siblings=tuple(sib)), tree.root)
    with pytest.raises(ValueError):
        tree.proof(128)


# ---- replica id, labels, encoding, columns --------------------------------------------------

def test_replica_id_matches_hashlib() -> None:
    prover, ticket, cd, seed = (os.urandom(32) for _ in range(4))
    sector = int.from_bytes(os.urandom(8), "little")
    want = hashlib.sha256(prover + sector.to_bytes(8, "big") + ticket + cd + seed).digest()
    got = replica_id(prover, sector, ticket, cd, seed)
    assert got == trunc(want) and got[31] < 0x40
    with pytest.raises(ValueError, match="ticket"):
        replica_id(prover, sector, ticket[:31], cd, seed)
    with pytest.raises(ValueError, match="u64"):
        replica_id(prover, 1 << 64, ticket, cd, seed)


def rule_label(rid: bytes, layer: int, node: int, labels: np.ndarray, parents: np.ndarray) -> bytes:
    """The label written from storage-proofs-porep's create_label, with hashlib."""
    msg = rid + struct.pack(">I", layer) + struct.pack(">Q", node) + bytes(20)
    if node > 0:
        if layer == 1:
            ps = [bytes(labels[0, parents[node, j]]) for j in range(6)]
            msg += b"".join(ps) * 6 + ps[0]
        else:
            ps = [bytes(labels[layer - 1, parents[node, j]]) for j in range(6)]
            ps += [bytes(labels[layer - 2, parents[node, j]]) for j in range(6, 14)]
            msg += b"".join(ps) * 2 + b"".join(ps[:9])
    assert len(msg) == (64 if node == 0 else 64 + 37 * 32)
    return trunc(hashlib.sha256(msg).digest())


def random_parents(nodes: int) -> np.ndarray:
    """A parents array of the right shape and rules: base parents below the node."""
    rng = np.random.default_rng()
    p = np.zeros((nodes, 14), np.uint32)
    for v in range(1, nodes):
        p[v, :6] = rng.integers(0, v, 6)
    p[:, 6:] = rng.integers(0, nodes, (nodes, 8))
    return p


@pytest.mark.parametrize("source", ["graph", "random"])
def test_labels_match_the_rule(source: str) -> None:
    proof = by_size(2 * KIB)
    parents = sdr_parents(proof) if source == "graph" else random_parents(proof.nodes)
    rid = trunc(os.urandom(32))
    labels = label_layers(proof, rid, parents)
    assert labels.shape == (proof.layers, proof.nodes, 32)
    rng = np.random.default_rng()
    for layer in range(1, proof.layers + 1):
        for v in [0, 1, proof.nodes - 1, *rng.integers(2, proof.nodes - 1, 6).tolist()]:
            want = rule_label(rid, layer, int(v), labels, parents)
            assert bytes(labels[layer - 1, v]) == want
            base = [bytes(labels[layer - 1, parents[v, j]]) for j in range(6)]
            exp = [bytes(labels[layer - 2, parents[v, j]]) for j in range(6, 14)] if layer > 1 else []
            assert label_node(rid, layer, int(v), base + exp) == want
    # the labels depend on the replica id
    other = label_layers(proof, _flip(rid), parents)
    assert not np.array_equal(other[0, 1:], labels[0, 1:])


# Filecoin's own label vectors: the last label of the last of 11 layers over 64 and 128 nodes,
# replica id [9; 32], porep id [0; 32] (V1) or [123; 32] (V1_1), as Fr limbs little-endian.
# Stated in storage-proofs-porep/tests/stacked_vanilla.rs (test_stacked_porep_generate_labels)
# and create_label/multi.rs (test_create_labels).
FILECOIN_LAST_LABELS = [
    (64, 0, API_V1_0, (0xD3FAA96B9A0FBA04, 0xEA81A283D106485E, 0xE3D51B9AFA5AC2B3, 0x0462F4F4F1A68D37)),
    (128, 0, API_V1_0, (0x7E191E52C4A8DA86, 0x5AE8A1C9E6FAC148, 0xCE239F3B88A894B8, 0x234C00D1DC1D53BE)),
    (64, 123, API_V1_1, (0xABB3F38BB70DEFCF, 0x777A2E4D7769119F, 0x3448959D495490BC, 0x06021188C7A71CB5)),
    (128, 123, API_V1_1, (0x22AB81CF68C4676D, 0x7A77A82FC7C9C189, 0xC6C03D32C1E42D23, 0x0F777C18CC2C55BD)),
]


@pytest.mark.parametrize("nodes,porep_byte,api,limbs", FILECOIN_LAST_LABELS)
def test_labels_equal_filecoins_vectors(nodes: int, porep_byte: int, api: str,
                                        limbs: tuple[int, ...]) -> None:
    proof = dataclasses.replace(by_size(2 * KIB), sector_size=32 * nodes, nodes=nodes, layers=11,
                                porep_id=bytes([porep_byte] * 32), api_version=api)
    labels = label_layers(proof, bytes([9] * 32), sdr_parents(proof))
    assert bytes(labels[-1, -1]) == b"".join(x.to_bytes(8, "little") for x in limbs)
    # and one layer fewer is a different label: the vector pins the layer count too
    fewer = dataclasses.replace(proof, layers=10)
    assert bytes(label_layers(fewer, bytes([9] * 32), sdr_parents(fewer))[-1, -1]) != bytes(labels[-1, -1])


def test_label_inputs_are_checked() -> None:
    proof = by_size(2 * KIB)
    rid = bytes(32)
    parents = random_parents(proof.nodes)
    with pytest.raises(ValueError, match="shape"):
        label_layers(proof, rid, parents[:, :6])
    late = parents.copy()
    late[5, 2] = 5  # a base parent that is not below its node
    with pytest.raises(ValueError, match="below"):
        label_layers(proof, rid, late)
    far = parents.copy()
    far[3, 9] = proof.nodes
    with pytest.raises(ValueError, match="outside"):
        label_layers(proof, rid, far)
    with pytest.raises(ValueError, match="6 parent labels"):
        label_node(rid, 1, 3, [bytes(32)] * 14)
    with pytest.raises(ValueError, match="14 parent labels"):
        label_node(rid, 2, 3, [bytes(32)] * 6)


def test_encode_decode_in_fr() -> None:
    key, data = rand_nodes(300), rand_nodes(300)
    # include the edges: zero, r - 1
    top = np.frombuffer((R_MOD - 1).to_bytes(32, "little"), np.uint8)
    key[0], data[0] = top, top
    key[1], data[1] = 0, top
    replica = encode(key, data)
    for i in range(300):
        assert to_int(replica[i]) == (to_int(key[i]) + to_int(data[i])) % R_MOD
    assert np.array_equal(decode(key, replica), data)
    bad = data.copy()
    bad[7] = np.frombuffer(R_MOD.to_bytes(32, "little"), np.uint8)
    with pytest.raises(ValueError, match="not a canonical"):
        encode(key, bad)


@pytest.mark.parametrize("layers", [2, 11])
def test_column_hashes_match_reference(layers: int) -> None:
    labels = np.stack([rand_nodes(16) for _ in range(layers)])
    hashes = column_hashes(labels)
    for v in (0, 5, 15):
        want = poseidon_hash([to_int(labels[layer, v]) for layer in range(layers)])
        assert to_int(hashes[v]) == want
        assert column_hash([bytes(labels[layer, v]) for layer in range(layers)]) == bytes(hashes[v])


# ---- commitments ------------------------------------------------------------------------------

@pytest.mark.parametrize("size", [2 * KIB, 8 * MIB])
def test_zero_sector_comm_d_is_published(size: int) -> None:
    nodes = fr32_pad_array(np.zeros(unpadded_size(size), np.uint8))
    assert comm_d(nodes).hex() == PUBLISHED_ZERO_COMM_D[size]


def test_zero_comm_d_rule_for_every_size() -> None:
    for size, want in PUBLISHED_ZERO_COMM_D.items():
        assert zero_comm_d(size).hex() == want
    with pytest.raises(ValueError):
        zero_comm_d(3 * KIB)


def test_comm_r_and_the_sector_commitments() -> None:
    proof = by_size(2 * KIB)
    labels = np.stack([rand_nodes(proof.nodes) for _ in range(proof.layers)])
    data = rand_nodes(proof.nodes)
    cc = comm_c(labels, proof.tree_arities)
    cols = [poseidon_hash([to_int(labels[i, v]) for i in range(proof.layers)]) for v in range(proof.nodes)]
    assert to_int(cc) == naive_poseidon_root(cols, *proof.tree_arities)
    replica = encode(labels[-1], data)
    crl = comm_r_last(replica, proof.tree_arities)
    assert to_int(crl) == naive_poseidon_root([to_int(x) for x in replica], *proof.tree_arities)
    assert to_int(comm_r(cc, crl)) == poseidon_hash([to_int(cc), to_int(crl)])
    assert comm_r(cc, crl) != comm_r(crl, cc)


# ---- larger sectors (slow) --------------------------------------------------------------------

@pytest.mark.slow
def test_8mib_labels_match_the_rule() -> None:
    proof = by_size(8 * MIB)
    parents = sdr_parents(proof)
    rid = trunc(os.urandom(32))
    labels = label_layers(proof, rid, parents)
    rng = np.random.default_rng()
    for layer in (1, 2):
        for v in [1, proof.nodes - 1, *rng.integers(2, proof.nodes - 1, 20).tolist()]:
            assert bytes(labels[layer - 1, v]) == rule_label(rid, layer, int(v), labels, parents)


@pytest.mark.slow
def test_zero_512mib_comm_d_is_published() -> None:
    nodes = fr32_pad_array(np.zeros(unpadded_size(512 * MIB), np.uint8))
    assert comm_d(nodes).hex() == PUBLISHED_ZERO_COMM_D[512 * MIB]
