"""Parameter, verifying-key and proof files in bellman/bellperson's format
(engine/groth16/bellman.py): round trips, the point encoding checked by an independent decoder
(py-arkworks-bls12381), a proof from a key read back verified by the oracle pairing, and every
kind of damage named in one line."""

from __future__ import annotations

import secrets
import struct

import numpy as np
import py_arkworks_bls12381 as ark
import pytest

from engine.groth16 import examples
from engine.groth16.bellman import (
    G1_RAW,
    G2_RAW,
    BellmanFileError,
    encode_points,
    read_params,
    read_proofs,
    read_vk,
    write_params,
    write_proofs,
    write_vk,
)
from engine.groth16.keyfile import SECTIONS
from engine.groth16.prove import prove
from engine.groth16.serialize import g1_compress, g2_compress
from engine.groth16.setup import setup
from engine.groth16.verify import verify
from engine.groth16.vkey import verifying_key
from kernels.backend import get_backend
from kernels.cpu.convert import g1_from_storage, g2_from_storage

_CIRCUIT = examples.chain_circuit(200)


@pytest.fixture(scope="module")
def key():
    return setup(_CIRCUIT.r1cs, secrets.token_hex(8), get_backend("cpu"))


def test_params_and_vk_read_back_equal(tmp_path, key):
    write_params(tmp_path / "c.params", key, _CIRCUIT.r1cs)
    write_vk(tmp_path / "c.vk", key)
    back = read_params(tmp_path / "c.params", _CIRCUIT.r1cs)
    for name in SECTIONS:
        assert np.array_equal(np.asarray(getattr(back, name)), np.asarray(getattr(key, name))), name
    assert back.insecure and bytes(back.digest) == _CIRCUIT.r1cs.digest()
    assert read_vk(tmp_path / "c.vk") == verifying_key(key)
    assert read_vk(tmp_path / "c.params") == verifying_key(key)  # the params file starts with it


def test_points_decode_with_an_independent_decoder(key):
    for i in range(min(8, key.a.shape[0])):
        raw = encode_points(key.a[i : i + 1], False)
        mine = g1_from_storage(key.a[i : i + 1])[0]
        if mine is None:
            assert raw == bytes([0x40]) + bytes(G1_RAW - 1)
            continue
        assert bytes(ark.G1Point.from_xy_bytes_be(raw).to_compressed_bytes()) == g1_compress(mine)
    for name in ("beta_g2", "gamma_g2", "delta_g2"):
        raw = encode_points(getattr(key, name), True)
        comp = g2_compress(g2_from_storage(getattr(key, name))[0])
        # zcash order, c1 before c0: the x half is the compressed form's x without its flags
        assert raw[:96] == bytes([comp[0] & 0x1F]) + comp[1:]
        c0_first = raw[48:96] + raw[:48] + raw[144:] + raw[96:144]  # arkworks' own order
        assert bytes(ark.G2Point.from_xy_bytes_be(c0_first).to_compressed_bytes()) == comp


def test_a_proof_from_the_read_key_verifies(tmp_path, key):
    write_params(tmp_path / "c.params", key, _CIRCUIT.r1cs)
    write_vk(tmp_path / "c.vk", key)
    pk = read_params(tmp_path / "c.params", _CIRCUIT.r1cs)
    x = secrets.randbelow(1 << 200) + 2
    z = _CIRCUIT.witness(x)
    proof = prove(pk, _CIRCUIT.r1cs, z, get_backend("cpu"))
    write_proofs(tmp_path / "c.proof", [proof, proof])
    proofs = read_proofs(tmp_path / "c.proof", partitions=2)
    vk = read_vk(tmp_path / "c.vk")
    public = examples.public_inputs(_CIRCUIT.r1cs, z)
    assert all(verify(vk, public, p) for p in proofs)
    assert not verify(vk, [(public[0] + 1)], proofs[0])  # a wrong input is rejected


def _damaged(tmp_path, key, cut):
    p = tmp_path / "d.params"
    write_params(p, key, _CIRCUIT.r1cs)
    data = bytearray(p.read_bytes())
    cut(data)
    p.write_bytes(bytes(data))
    return p


_VK_BYTES = 3 * G1_RAW + 3 * G2_RAW


@pytest.mark.parametrize("damage, says", [
    (lambda d: d.__delitem__(slice(len(d) - 7, None)), "cut short"),
    (lambda d: d.extend(b"xx"), "bytes after its last query"),
    (lambda d: d.__setitem__(0, d[0] | 0x80), "bad flag bits"),  # alpha marked compressed
    (lambda d: d.__setitem__(slice(0, 48), b"\x1f" + b"\xff" * 47), "not below p"),
    (lambda d: d.__setitem__(95, d[95] ^ 1), "not on the curve"),
    (lambda d: d.__setitem__(slice(_VK_BYTES, _VK_BYTES + 4), struct.pack(">I", 3)), "cut short"),
])
def test_damaged_params_are_named(tmp_path, key, damage, says):
    p = _damaged(tmp_path, key, damage)
    with pytest.raises(BellmanFileError) as err:
        read_params(p, _CIRCUIT.r1cs)
    assert says in str(err.value) and "\n" not in str(err.value)


def test_params_of_another_circuit_and_bad_proof_files(tmp_path, key):
    write_params(tmp_path / "c.params", key, _CIRCUIT.r1cs)
    other = examples.chain_circuit(201)
    with pytest.raises(BellmanFileError, match="not for this circuit"):
        read_params(tmp_path / "c.params", other.r1cs)
    (tmp_path / "p").write_bytes(bytes(191))
    with pytest.raises(BellmanFileError, match="not a multiple of 192"):
        read_proofs(tmp_path / "p")
    (tmp_path / "p").write_bytes(bytes(384))
    with pytest.raises(BellmanFileError, match="holds 2 partition proofs, the sector has 10"):
        read_proofs(tmp_path / "p", partitions=10)
    with pytest.raises(BellmanFileError, match="cannot read"):
        read_vk(tmp_path / "missing.vk")
    with pytest.raises(BellmanFileError, match="is empty"):
        (tmp_path / "e.vk").write_bytes(b"")
        read_vk(tmp_path / "e.vk")
