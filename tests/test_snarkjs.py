"""snarkjs JSON export: the encoding checked against the oracle, and where node and npx are
present, `snarkjs@0.7 groth16 verify` accepts an exported proof and rejects tampered ones."""

from __future__ import annotations

import json
import secrets
import shutil
import subprocess
from functools import lru_cache
from pathlib import Path

import py_arkworks_bls12381 as ark
import pytest

from engine.groth16 import examples, snarkjs
from engine.groth16.prove import prove
from engine.groth16.setup import setup
from engine.groth16.verify import verify
from engine.groth16.vkey import verifying_key
from kernels.backend import get_backend
from kernels.constants import R_MOD


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> dict:
    be = get_backend("cpu")
    circuit = examples.chain_circuit(5)
    pk = setup(circuit.r1cs, secrets.token_hex(8), be)
    vk = verifying_key(pk)
    z = circuit.witness(secrets.randbelow(R_MOD))
    public = examples.public_inputs(circuit.r1cs, z)
    proof = prove(pk, circuit.r1cs, z, be)
    assert verify(vk, public, proof)
    other = prove(pk, circuit.r1cs, circuit.witness(secrets.randbelow(R_MOD)), be)
    return {"vk": vk, "proof": proof, "public": public, "other_proof": other, "dir": tmp_path_factory.mktemp("sj")}


def _xy(pt, n: int) -> list[int]:
    raw = pt.to_xy_bytes_le()
    return [int.from_bytes(raw[i : i + 48], "little") for i in range(0, 48 * n, 48)]


def test_json_encoding_matches_oracle(exported) -> None:
    vkj = snarkjs.vk_json(exported["vk"])
    assert vkj["curve"] == "bls12381" and vkj["protocol"] == "groth16" and vkj["nPublic"] == 1
    assert len(vkj["IC"]) == 2
    alpha = ark.G1Point.from_compressed_bytes(exported["vk"].alpha_g1)
    assert vkj["vk_alpha_1"] == [*map(str, _xy(alpha, 2)), "1"]
    delta = ark.G2Point.from_compressed_bytes(exported["vk"].delta_g2)
    x0, x1, y0, y1 = map(str, _xy(delta, 4))
    assert vkj["vk_delta_2"] == [[x0, x1], [y0, y1], ["1", "0"]]
    pj = snarkjs.proof_json(exported["proof"])
    a = ark.G1Point.from_compressed_bytes(exported["proof"][:48])
    assert pj["pi_a"] == [*map(str, _xy(a, 2)), "1"]
    assert snarkjs.public_json(exported["public"]) == [str(exported["public"][0])]
    assert snarkjs.g1_json(None) == ["0", "1", "0"]


@lru_cache(maxsize=1)
def _snarkjs() -> list[str] | None:
    """The snarkjs command, or None where node/npx are absent or the package cannot be fetched:
    node on the CLI that npx fetched (npx itself costs 1.4 s a call), else npx."""
    npx, node = shutil.which("npx"), shutil.which("node")
    if not node or not npx:
        return None
    cmd = [npx, "-y", "snarkjs@0.7"]
    try:
        res = subprocess.run([*cmd, "--help"], capture_output=True, text=True, timeout=180)
        if "snarkjs@0.7" not in (res.stdout + res.stderr):
            return None
        where = subprocess.run([npx, "-y", "-p", "snarkjs@0.7", "which", "snarkjs"],
                               capture_output=True, text=True, timeout=60).stdout.strip()
    except (subprocess.TimeoutExpired, OSError):
        return None
    cli = Path(where).resolve() if where else None
    return [node, str(cli)] if cli is not None and cli.is_file() else cmd


def _snarkjs_verify(d: Path, vk: dict, public: list, proof: dict) -> subprocess.CompletedProcess:
    for name, obj in (("verification_key.json", vk), ("public.json", public), ("proof.json", proof)):
        (d / name).write_text(json.dumps(obj))
    cmd = _snarkjs()
    return subprocess.run([*cmd, "groth16", "verify", "verification_key.json", "public.json", "proof.json"],
                          cwd=d, capture_output=True, text=True, timeout=120)


def _accepted(res: subprocess.CompletedProcess) -> bool:
    return res.returncode == 0 and "OK" in res.stdout


def test_snarkjs_verifies_exported_proof_and_rejects_tampered(exported) -> None:
    if _snarkjs() is None:
        pytest.skip("node/npx or the snarkjs@0.7 package is not available here")
    d: Path = exported["dir"]
    vkj = snarkjs.vk_json(exported["vk"])
    pub = snarkjs.public_json(exported["public"])
    pj = snarkjs.proof_json(exported["proof"])
    assert _accepted(_snarkjs_verify(d, vkj, pub, pj))
    wrong_pub = [str((exported["public"][0] + 1) % R_MOD)]
    assert not _accepted(_snarkjs_verify(d, vkj, wrong_pub, pj))
    # a valid proof, but of another statement
    assert not _accepted(_snarkjs_verify(d, vkj, pub, snarkjs.proof_json(exported["other_proof"])))
    # the C point swapped for A: a well-formed curve point that breaks the pairing equation
    swapped = dict(pj, pi_c=pj["pi_a"])
    assert not _accepted(_snarkjs_verify(d, vkj, pub, swapped))


@pytest.mark.parametrize("preset", ["tiny"])  # small: tests/test_porep_prove.py, beside its proof
def test_snarkjs_verifies_porep_partitions_and_rejects_tampered(tmp_path, preset: str) -> None:
    """A porep partition's proof, exported with the public inputs a verifier derives from the
    statement: snarkjs accepts it and rejects a tampered proof point and a foreign comm_d; the
    oracle rejects a foreign comm_d and replica_id."""
    import random

    from engine.circuit.porep import build_porep, generate_partitions, porep_witness
    from engine.circuit.statement import PorepStatement

    if _snarkjs() is None:
        pytest.skip("node/npx or the snarkjs@0.7 package is not available here")
    be = get_backend("cpu")
    shape = build_porep(preset, tmp_path / "circuits")
    pk = setup(shape.r1cs, secrets.token_hex(8), be)
    vk = verifying_key(pk)
    seed = random.randrange(2**32)
    sector, parts = generate_partitions(preset, seed)
    other, _ = generate_partitions(preset, seed + 1)
    _, z = porep_witness(shape, parts[0])
    proof = prove(pk, shape.r1cs, z, be)
    st = sector.statement(0)
    public = st.public_inputs()
    assert verify(vk, public, proof)
    vkj, pj = snarkjs.vk_json(vk), snarkjs.proof_json(proof)
    assert vkj["nPublic"] == len(public)
    assert _accepted(_snarkjs_verify(tmp_path, vkj, snarkjs.public_json(public), pj))
    for field in ("comm_d", "replica_id"):
        foreign = PorepStatement(**{**st.__dict__, field: getattr(other, field)}).public_inputs()
        assert not verify(vk, foreign, proof), field
        if field == "comm_d":  # each snarkjs call costs seconds
            assert not _accepted(_snarkjs_verify(tmp_path, vkj, snarkjs.public_json(foreign), pj))
    assert not _accepted(_snarkjs_verify(tmp_path, vkj, snarkjs.public_json(public), dict(pj, pi_c=pj["pi_a"])))
