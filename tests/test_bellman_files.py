"""Parameter, verifying-key and proof files in bellman/bellperson's format
(engine/groth16/bellman.py, bellman_proofs.py, kernels/cpu/be_points.py): round trips bit for bit on circuits whose
A and B leave inputs and aux variables out; the encoding checked against independent libraries
(py_arkworks_bls12381 decodes the uncompressed points, pyblst and arkworks the compressed ones);
proofs from a key read back verified by the oracle pairing; the peak memory of reading a big
file; and every kind of damage named in one line."""

from __future__ import annotations

import dataclasses
import json
import os
import secrets
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import py_arkworks_bls12381 as ark
import pyblst  # type: ignore[import-untyped]
import pytest

from engine.groth16 import examples
from engine.groth16.bellman import (
    G1_RAW,
    G2_RAW,
    SECTIONS,
    SIDECAR,
    BellmanFileError,
    decode_points,
    encode_points,
    query_density,
    read_params,
    read_vk,
    read_vk_points,
    write_params,
    write_vk,
)
from engine.groth16.bellman_proofs import read_proofs, write_proofs
from engine.groth16.curve_int import fp_sqrt, g1_in_subgroup
from engine.groth16.keyfile import SECTIONS as KEY_SECTIONS
from engine.groth16.prove import prove
from engine.groth16.r1cs import R1CS, with_input_constraints
from engine.groth16.serialize import g1_compress, g2_compress
from engine.groth16.setup import setup
from engine.groth16.verify import verify
from engine.groth16.vkey import verifying_key
from kernels.backend import get_backend
from kernels.constants import G1_B, P_MOD, R_MOD
from kernels.cpu.convert import (
    g1_from_storage,
    g1_to_storage,
    g2_from_storage,
    g2_to_storage,
    to_mont_fr,
)
from tests.oracle import ark_g1, ark_g2

ROOT = Path(__file__).resolve().parents[1]
HEAVY = os.environ.get("SEALTOP_HEAVY") == "1"
VK_SINGLES_BYTES = 3 * G1_RAW + 3 * G2_RAW


def _square() -> examples.Circuit:
    """y = x², written so that A leaves the aux t out and B the input y: [x]·[x] = [t],
    [1]·[t] = [y]. Variables [1, y | x, t]."""
    one, y, x, t = range(4)
    a = examples._csr_rows([[(x, 1)], [(one, 1)]])
    b = examples._csr_rows([[(x, 1)], [(t, 1)]])
    c = examples._csr_rows([[(t, 1)], [(y, 1)]])
    r1cs = with_input_constraints(R1CS(2, 2, a, b, c), examples.ONE_MONT)

    def witness(xv: int) -> np.ndarray:
        xv %= R_MOD
        return to_mont_fr([1, xv * xv % R_MOD, xv, xv * xv % R_MOD])

    return examples.Circuit("square", r1cs, witness)


CIRCUITS = {"chain": examples.chain_circuit(200), "cubic": examples.cubic_circuit(), "square": _square()}


@pytest.fixture(scope="module")
def keys():
    """A fresh INSECURE key per circuit (a random seed each run)."""
    be = get_backend("cpu")
    return {name: setup(c.r1cs, secrets.token_hex(8), be) for name, c in CIRCUITS.items()}


def _files(tmp_path: Path, name: str, keys: dict) -> tuple[Path, Path]:
    p, v = tmp_path / f"{name}.params", tmp_path / f"{name}.vk"
    write_params(p, keys[name], CIRCUITS[name].r1cs)
    write_vk(v, keys[name])
    return p, v


# ---------------------------------------------------------------------------- round trips

@pytest.mark.parametrize("name", sorted(CIRCUITS))
def test_params_and_vk_read_back_bit_for_bit(tmp_path, keys, name):
    key, r1cs = keys[name], CIRCUITS[name].r1cs
    p, v = _files(tmp_path, name, keys)
    back = read_params(p, r1cs, subgroup_samples=None)
    for section in KEY_SECTIONS:
        assert np.array_equal(np.asarray(getattr(back, section)), getattr(key, section)), section
    assert back.insecure and bytes(back.digest) == r1cs.digest()
    assert (back.num_inputs, back.num_aux, back.log_n) == (key.num_inputs, key.num_aux, key.log_n)
    points = read_vk_points(v)
    for field in ("alpha_g1", "beta_g1", "beta_g2", "gamma_g2", "delta_g1", "delta_g2", "ic"):
        assert np.array_equal(points[field], getattr(key, field)), field
    assert read_vk(v) == verifying_key(key)
    assert read_vk(p) == verifying_key(key)  # a params file starts with its verifying key
    # written again from what was read: the same bytes
    write_params(tmp_path / "again.params", back, r1cs)
    assert (tmp_path / "again.params").read_bytes() == p.read_bytes()
    assert p.read_bytes()[:v.stat().st_size] == v.read_bytes()


def test_sections_hold_exactly_the_densities(tmp_path, keys):
    """The counts are bellperson's: every input in a, only the variables B uses in b (the
    square circuit's A leaves aux t out, its B both inputs; the chain's B uses x alone)."""
    d = query_density(CIRCUITS["square"].r1cs)
    assert d.a_aux.tolist() == [True, False] and d.b.tolist() == [False, False, True, True]
    for name, want_a, want_b in (("square", 3, 2), ("chain", 2 + 200, 1), ("cubic", 5, 2)):
        key, r1cs = keys[name], CIRCUITS[name].r1cs
        p, _ = _files(tmp_path, name, keys)
        data = p.read_bytes()
        off = VK_SINGLES_BYTES
        (n_ic,) = struct.unpack_from(">I", data, off)
        off += 4 + n_ic * G1_RAW
        counts = {}
        for section, group in SECTIONS:
            (counts[section],) = struct.unpack_from(">I", data, off)
            off += 4 + counts[section] * (G1_RAW if group == "g1" else G2_RAW)
        assert off == len(data)
        assert counts == {"h": key.domain_size - 1, "l": r1cs.num_aux, "a": want_a,
                          "b_g1": want_b, "b_g2": want_b}
        # the dropped points are exactly the key's points at infinity
        assert int(key.a.any(axis=1).sum()) == want_a and int(key.b_g2.any(axis=1).sum()) == want_b


# ---------------------------------------------------------------------------- the encoding

def _section(data: bytes, name: str) -> tuple[int, int, int]:
    """(offset of the first point, count, point size) of a params section."""
    off = VK_SINGLES_BYTES
    (n,) = struct.unpack_from(">I", data, off)
    off += 4 + n * G1_RAW
    for section, group in SECTIONS:
        (n,) = struct.unpack_from(">I", data, off)
        size = G1_RAW if group == "g1" else G2_RAW
        if section == name:
            return off + 4, n, size
        off += 4 + n * size
    raise KeyError(name)


def test_written_points_decode_with_independent_libraries(tmp_path, keys):
    key = keys["chain"]
    p, _ = _files(tmp_path, "chain", keys)
    data = p.read_bytes()
    start, n, _ = _section(data, "h")
    mine = g1_from_storage(key.h)
    for k in np.random.default_rng().choice(n, 8, replace=False).tolist():
        raw = data[start + k * G1_RAW:start + (k + 1) * G1_RAW]
        point = ark.G1Point.from_xy_bytes_be(raw)  # on the curve and in the subgroup, or raises
        comp = bytes(point.to_compressed_bytes())
        assert comp == g1_compress(mine[k])
        assert pyblst.BlstP1Element().uncompress(comp).compress() == comp
    start, n, _ = _section(data, "b_g2")
    rows = np.flatnonzero(key.b_g2.any(axis=1))
    for k in range(n):
        raw = data[start + k * G2_RAW:start + (k + 1) * G2_RAW]
        comp = g2_compress(g2_from_storage(key.b_g2[rows[k]])[0])
        assert raw[:96] == bytes([comp[0] & 0x1F]) + comp[1:]  # x.c1 then x.c0: zcash's order
        point = ark.G2Point.from_xy_bytes_be(raw[48:96] + raw[:48] + raw[144:] + raw[96:144])
        assert bytes(point.to_compressed_bytes()) == comp
        assert pyblst.BlstP2Element().uncompress(comp).compress() == comp
    # alpha at the head of the file, and the encoding of infinity (blst's: 0x40, zeros)
    assert bytes(ark.G1Point.from_xy_bytes_be(data[:G1_RAW]).to_compressed_bytes()) == \
        g1_compress(g1_from_storage(key.alpha_g1)[0])
    inf = bytes(ark.G1Point.identity().to_compressed_bytes())
    assert not any(inf[1:])  # the compressed identity: its flags, then zeros
    assert encode_points(np.zeros((1, 12), np.uint64), False) == bytes([inf[0] & 0x7F]) + bytes(G1_RAW - 1)
    assert encode_points(np.zeros((1, 24), np.uint64), True) == b"\x40" + bytes(G2_RAW - 1)


def test_points_from_an_independent_library_decode():
    rng = np.random.default_rng()
    s = [int(v) for v in rng.integers(1, 2**62, 6)]
    g1 = [ark.G1Point() * ark.Scalar(k) for k in s]
    g2 = [ark.G2Point() * ark.Scalar(k) for k in s]
    raw1 = np.frombuffer(b"".join(bytes(q.to_xy_bytes_be()) for q in g1), np.uint8).reshape(-1, 96)
    xy2 = [bytes(q.to_xy_bytes_be()) for q in g2]
    raw2 = np.frombuffer(b"".join(b[48:96] + b[:48] + b[144:] + b[96:144] for b in xy2),
                         np.uint8).reshape(-1, 192)
    assert np.array_equal(decode_points(raw1, False, "t"), g1_to_storage([ark_g1(q) for q in g1]))
    assert np.array_equal(decode_points(raw2, True, "t"), g2_to_storage([ark_g2(q) for q in g2]))
    assert encode_points(decode_points(raw2, True, "t"), True) == raw2.tobytes()
    bad = raw1.copy()
    bad[3, 95] ^= 1
    with pytest.raises(BellmanFileError, match="t: point 3 is not on the curve"):
        decode_points(bad, False, "t")


# ---------------------------------------------------------------------------- proofs

@pytest.mark.parametrize("name", ["square", "chain"])
def test_a_proof_from_the_read_key_verifies(tmp_path, keys, name):
    circuit = CIRCUITS[name]
    p, v = _files(tmp_path, name, keys)
    pk = read_params(p, circuit.r1cs)
    z = circuit.witness(secrets.randbelow(R_MOD - 2) + 2)
    proof = prove(pk, circuit.r1cs, z, get_backend("cpu"))
    write_proofs(tmp_path / "s.proof", [proof, proof, proof])
    assert (tmp_path / "s.proof").read_bytes() == proof * 3
    proofs = read_proofs(tmp_path / "s.proof", partitions=3)
    vk = read_vk(v)
    public = examples.public_inputs(circuit.r1cs, z)
    assert all(verify(vk, public, q) for q in proofs)
    assert not verify(vk, [(public[0] + 1) % R_MOD], proofs[0])  # a wrong input is rejected
    for lo, hi, cls in ((0, 48, pyblst.BlstP1Element), (48, 144, pyblst.BlstP2Element),
                        (144, 192, pyblst.BlstP1Element)):
        assert cls().uncompress(proof[lo:hi]).compress() == proof[lo:hi]


def test_bad_proof_files_are_named(tmp_path, keys):
    circuit = CIRCUITS["cubic"]
    p, _ = _files(tmp_path, "cubic", keys)
    proof = prove(read_params(p, circuit.r1cs), circuit.r1cs, circuit.witness(3), get_backend("cpu"))
    f = tmp_path / "bad.proof"

    def refused(data: bytes, says: str, partitions: int | None = None) -> None:
        f.write_bytes(data)
        with pytest.raises(BellmanFileError) as err:
            read_proofs(f, partitions)
        msg = str(err.value)
        assert says in msg and str(f) in msg and "\n" not in msg, msg

    refused(proof[:191], "not a multiple of 192")
    refused(b"", "not a multiple of 192")
    refused(proof * 2, "holds 2 partition proofs, the sector has 10", partitions=10)
    flipped = bytearray(proof * 2)
    flipped[192 + 60] ^= 0x04
    refused(bytes(flipped), "partition 1: proof B")
    refused(b"\xc0" + bytes(47) + proof[48:], "partition 0: proof A is the point at infinity")
    with pytest.raises(BellmanFileError, match="partition 1's proof is 191 bytes"):
        write_proofs(tmp_path / "w.proof", [proof, proof[:191]])
    with pytest.raises(BellmanFileError, match="partition 0: proof A is the point at infinity"):
        write_proofs(tmp_path / "w.proof", [b"\xc0" + bytes(47) + proof[48:]])
    assert not (tmp_path / "w.proof").exists()


# ---------------------------------------------------------------------------- damage

def _off_subgroup_g1() -> bytes:
    """An uncompressed G1 point on the curve but outside the prime-order subgroup."""
    x = secrets.randbelow(1 << 64) + 5
    while True:
        y = fp_sqrt((x ** 3 + G1_B) % P_MOD)
        if y is not None and not g1_in_subgroup((x, y)):
            return x.to_bytes(48, "big") + y.to_bytes(48, "big")
        x += 1


def _h_point(data: bytearray, k: int) -> int:
    start, _, _ = _section(bytes(data), "h")
    return start + k * G1_RAW


def _set_count(data: bytearray, name: str, delta: int) -> None:
    start, n, _ = _section(bytes(data), name)
    data[start - 4:start] = struct.pack(">I", n + delta)


DAMAGE = [
    ("truncated", lambda d: d.__delitem__(slice(len(d) - 7, None)), "cut short: b_g2"),
    ("truncated in the vk", lambda d: d.__delitem__(slice(100, None)), "cut short: beta_g1"),
    ("trailing bytes", lambda d: d.extend(b"xx"), "2 bytes after its last section"),
    ("compression flag", lambda d: d.__setitem__(0, d[0] | 0x80), "alpha_g1 point 0 has the compressed-form flag"),
    ("sign flag", lambda d: d.__setitem__(_h_point(d, 5), 0x20), "h point 5 has the y-sign flag"),
    ("infinity flag", lambda d: d.__setitem__(_h_point(d, 6), d[_h_point(d, 6)] | 0x40),
     "h point 6 has the infinity flag (0x40) set but other bits too"),
    ("infinity", lambda d: d.__setitem__(slice(_h_point(d, 2), _h_point(d, 3)), b"\x40" + bytes(95)),
     "h point 2 is the point at infinity"),
    ("off the curve", lambda d: d.__setitem__(_h_point(d, 3) + 95, d[_h_point(d, 3) + 95] ^ 1),
     "h point 3 is not on the curve"),
    ("not below p", lambda d: d.__setitem__(slice(0, 48), b"\x1f" + b"\xff" * 47),
     "alpha_g1 point 0 has a coordinate that is not below the field modulus"),
    ("off the subgroup", lambda d: d.__setitem__(slice(_h_point(d, 0), _h_point(d, 1)), _off_subgroup_g1()),
     "h point 0 is not in the prime-order subgroup"),
    ("longer section", lambda d: _set_count(d, "l", 1), "not for this circuit: l holds 201 points"),
    ("shorter section", lambda d: _set_count(d, "b_g1", -1), "not for this circuit: b_g1 holds 0 points"),
]


@pytest.mark.parametrize("damage, says", [d[1:] for d in DAMAGE], ids=[d[0] for d in DAMAGE])
def test_damaged_params_are_named_in_one_line(tmp_path, keys, damage, says):
    p, _ = _files(tmp_path, "chain", keys)
    data = bytearray(p.read_bytes())
    damage(data)
    p.write_bytes(bytes(data))
    with pytest.raises(BellmanFileError) as err:
        read_params(p, CIRCUITS["chain"].r1cs)
    msg = str(err.value)
    assert says in msg and str(p) in msg and "\n" not in msg, msg


def test_damaged_vk_and_other_circuits_are_named(tmp_path, keys):
    p, v = _files(tmp_path, "chain", keys)
    good = v.read_bytes()

    def refused(data: bytes, says: str) -> None:
        v.write_bytes(data)
        with pytest.raises(BellmanFileError) as err:
            read_vk(v)
        msg = str(err.value)
        assert says in msg and str(v) in msg and "\n" not in msg, msg

    ic1 = VK_SINGLES_BYTES + 4 + G1_RAW
    refused(good[:-1], "cut short: IC")
    refused(good + b"\0", "1 bytes after its IC points")
    refused(good[:ic1] + _off_subgroup_g1(), "IC point 1 is not in the prime-order subgroup")
    refused(good[:G1_RAW + 10] + bytes([good[G1_RAW + 10] ^ 1]) + good[G1_RAW + 11:], "beta_g1 point 0")
    refused(b"", "is empty")
    with pytest.raises(BellmanFileError, match="cannot read"):
        read_vk(tmp_path / "missing.vk")
    with pytest.raises(BellmanFileError, match="not for this circuit: its verifying key has 2 IC points"):
        read_params(p, _three_inputs())
    with pytest.raises(BellmanFileError, match="not for this circuit: l holds 200 points, the circuit's aux variables are 201"):
        read_params(p, examples.chain_circuit(201).r1cs)


def _three_inputs() -> R1CS:
    base = CIRCUITS["chain"].r1cs
    return R1CS(3, base.num_aux - 1, base.A, base.B, base.C)


def test_keys_bellperson_could_not_read_are_not_written(tmp_path, keys):
    key, r1cs = keys["chain"], CIRCUITS["chain"].r1cs
    out = tmp_path / "w.params"
    with pytest.raises(BellmanFileError, match="digests differ"):
        write_params(out, key, CIRCUITS["cubic"].r1cs)
    stray = key.b_g1.copy()
    stray[5] = key.b_g1[2]  # variable 5 is not in B
    with pytest.raises(BellmanFileError, match="does not use variable 5 there"):
        write_params(out, dataclasses.replace(key, b_g1=stray), r1cs)
    hole = key.h.copy()
    hole[7] = 0
    with pytest.raises(BellmanFileError, match="cannot write h: point 7 is the point at infinity"):
        write_params(out, dataclasses.replace(key, h=hole), r1cs)
    assert not out.exists() and not Path(str(out) + SIDECAR).exists()


def test_the_sidecar_labels_only_its_own_circuit(tmp_path, keys):
    p, _ = _files(tmp_path, "chain", keys)
    side = Path(str(p) + SIDECAR)
    assert json.loads(side.read_text())["insecure"] is True
    side.write_text(json.dumps({**json.loads(side.read_text()), "circuit_digest": "00" * 32}))
    assert not read_params(p, CIRCUITS["chain"].r1cs).insecure
    side.unlink()
    assert not read_params(p, CIRCUITS["chain"].r1cs).insecure


# ---------------------------------------------------------------------------- memory

def _rss(tmp_path: Path, log_aux: int) -> dict:
    res = subprocess.run([sys.executable, "scripts/bellman_rss.py", "--log-aux", str(log_aux),
                          "--dir", str(tmp_path)], capture_output=True, text=True, cwd=ROOT,
                         timeout=600, check=False)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("log_aux", [18, pytest.param(20, marks=pytest.mark.skipif(
    not HEAVY, reason="set SEALTOP_HEAVY=1 (a 550 MB file, about 15 s)"))])
def test_reading_a_big_file_holds_the_key_and_a_chunk(tmp_path, log_aux):
    """2^18 aux: 1.3 million points (138 MB); 2^20: 5.2 million (554 MB). The peak RSS of the
    read (file pages included) stays within the key's arrays and 32 MiB, where holding the
    mapped file, or the sections before their expansion, would add about the file's size."""
    m = _rss(tmp_path, log_aux)
    assert m["file_bytes"] > 100 * 2**20
    assert m["peak_increase"] <= m["key_bytes"] + 32 * 2**20, m


def test_the_engine_imports_a_key_from_filecoins_parameter_folder(tmp_path, keys):
    """ensure_key with ``params``: the .params file whose counts are the circuit's, among others
    in the folder, becomes the cached key; a folder without one is refused in one line."""
    from types import SimpleNamespace

    from engine.groth16.bellman import find_params, params_counts
    from engine.groth16.keyfile import KeyFileError, load_proving_key
    from engine.pipeline.proving import ensure_key

    key, circuit_r1cs = keys["chain"], CIRCUITS["chain"].r1cs
    folder = tmp_path / "filecoin-proof-parameters"
    folder.mkdir()
    write_params(folder / "v28-this.params", key, circuit_r1cs)
    other = examples.chain_circuit(50)
    write_params(folder / "v28-other.params", setup(other.r1cs, "o", get_backend("cpu")), other.r1cs)
    (folder / "junk.params").write_bytes(b"\x00" * 10)
    assert params_counts(folder / "v28-this.params")["l"] == circuit_r1cs.num_aux
    assert find_params(folder, circuit_r1cs) == folder / "v28-this.params"
    circuit = SimpleNamespace(name="c2-test", r1cs=circuit_r1cs)
    path, vk = ensure_key(circuit, tmp_path / "cache", "cpu", params=str(folder))
    assert vk == verifying_key(key)
    assert np.array_equal(np.asarray(load_proving_key(path).a), np.asarray(key.a))
    (folder / "v28-this.params").unlink()
    with pytest.raises(KeyFileError, match="no parameter file in .* is for c2-other"):
        ensure_key(SimpleNamespace(name="c2-other", r1cs=examples.chain_circuit(60).r1cs),
                   tmp_path / "cache2", "cpu", params=str(folder))
