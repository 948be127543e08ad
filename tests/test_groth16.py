"""Groth16 end to end: keys from setup, proofs made in a fresh process that loads only the key
file, verified by py_arkworks_bls12381's pairing after its own deserializer decodes our bytes;
and the rejections a verifier must make (a flipped byte, wrong public inputs, another key's
proof, a broken witness, a key for another circuit, a malformed verification key)."""

from __future__ import annotations

import json
import secrets
import subprocess
import sys
from pathlib import Path

import numpy as np
import py_arkworks_bls12381 as ark
import pytest

from engine.groth16 import examples
from engine.groth16.keyfile import load_proving_key, save_proving_key
from engine.groth16.prove import KeyMismatchError, evaluate, prove, prove_finish, prove_start
from engine.groth16.setup import setup
from engine.groth16.verify import VerifyError, verify
from engine.groth16.vkey import VerifyingKey, load_vk, save_vk, verifying_key
from kernels.backend import get_backend
from kernels.constants import R_MOD
from kernels.cpu.convert import to_mont_fr

ROOT = Path(__file__).resolve().parents[1]
SIZES = (4, 6, 8, 10, 12)  # log2 constraint counts


@pytest.fixture(scope="module")
def backend():
    return get_backend("cpu")


@pytest.fixture(scope="module")
def keys(tmp_path_factory, backend) -> dict:
    """Per size: circuit, key paths; a fresh random seed each run."""
    d = tmp_path_factory.mktemp("keys")
    out = {}
    for k in SIZES:
        circuit = examples.chain_for_constraints(1 << k)
        pk = setup(circuit.r1cs, secrets.token_hex(8), backend)
        save_proving_key(pk, d / f"{k}.pk")
        save_vk(verifying_key(pk), d / f"{k}.vk.json")
        out[k] = {"circuit": circuit, "pk": d / f"{k}.pk", "vk": d / f"{k}.vk.json"}
    return out


_PROVER = """
import json, sys
from engine.groth16 import examples
from engine.groth16.keyfile import load_proving_key
from engine.groth16.prove import prove
from kernels.backend import get_backend
be = get_backend("cpu")
for job in json.loads(sys.argv[1]):
    circuit = examples.chain_for_constraints(1 << job["k"])
    pk = load_proving_key(job["pk"])
    z = circuit.witness(job["x"])
    open(job["out"], "wb").write(prove(pk, circuit.r1cs, z, be))
"""


def _oracle_decodes(proof: bytes) -> None:
    assert len(proof) == 192
    a = ark.G1Point.from_compressed_bytes(proof[:48])
    b = ark.G2Point.from_compressed_bytes(proof[48:144])
    c = ark.G1Point.from_compressed_bytes(proof[144:])
    assert a.to_compressed_bytes() + b.to_compressed_bytes() + c.to_compressed_bytes() == proof


def test_proofs_from_a_fresh_process_verify(keys, tmp_path: Path) -> None:
    jobs = []
    for k in SIZES:
        jobs.append({"k": k, "pk": str(keys[k]["pk"]), "x": secrets.randbelow(R_MOD), "out": str(tmp_path / f"{k}.proof")})
    subprocess.run([sys.executable, "-c", _PROVER, json.dumps(jobs)], cwd=ROOT, check=True, timeout=600)
    for job in jobs:
        k = job["k"]
        proof = Path(job["out"]).read_bytes()
        _oracle_decodes(proof)
        n_mul = (1 << k) - 2
        public = [pow(job["x"], n_mul + 1, R_MOD)]
        vk = load_vk(keys[k]["vk"])
        assert verify(vk, public, proof), f"2^{k}"
        assert not verify(vk, [(public[0] + 1) % R_MOD], proof), f"2^{k}"


@pytest.fixture(scope="module")
def small(keys, backend) -> dict:
    """A 2^6 proof made in-process, for the rejection tests."""
    k = 6
    circuit = keys[k]["circuit"]
    pk = load_proving_key(keys[k]["pk"])
    x = secrets.randbelow(R_MOD)
    z = circuit.witness(x)
    proof = prove(pk, circuit.r1cs, z, backend)
    public = examples.public_inputs(circuit.r1cs, z)
    vk = load_vk(keys[k]["vk"])
    assert verify(vk, public, proof)
    return {"circuit": circuit, "pk": pk, "vk": vk, "z": z, "proof": proof, "public": public}


def test_one_flipped_byte_is_rejected(small) -> None:
    proof = small["proof"]
    positions = [secrets.randbelow(48), 48 + secrets.randbelow(96), 144 + secrets.randbelow(48)]
    positions += [secrets.randbelow(192) for _ in range(3)]
    for pos in positions:
        bad = bytearray(proof)
        bad[pos] ^= 1 << secrets.randbelow(8)
        assert not verify(small["vk"], small["public"], bytes(bad)), pos


def test_wrong_public_inputs_are_rejected(small) -> None:
    for wrong in ((small["public"][0] + 1) % R_MOD, secrets.randbelow(R_MOD), 0):
        assert not verify(small["vk"], [wrong], small["proof"])
    with pytest.raises(VerifyError, match="public inputs"):
        verify(small["vk"], [], small["proof"])


def test_proof_from_a_different_key_is_rejected(small, backend) -> None:
    circuit = small["circuit"]
    other = setup(circuit.r1cs, secrets.token_hex(8), backend)
    proof = prove(other, circuit.r1cs, small["z"], backend)
    assert verify(verifying_key(other), small["public"], proof)  # control: valid under its own key
    assert not verify(small["vk"], small["public"], proof)


def test_broken_witness_with_precheck_off_is_rejected(small, backend) -> None:
    circuit = small["circuit"]
    z = small["z"].copy()
    k = 3 + secrets.randbelow(circuit.r1cs.num_vars - 3)  # an aux wire w_i: breaks constraints i, i+1
    z[k] = to_mont_fr([secrets.randbelow(R_MOD)])[0]
    with pytest.raises(examples.WitnessError):
        prove(small["pk"], circuit.r1cs, z, backend)
    proof = prove(small["pk"], circuit.r1cs, z, backend, precheck=False)
    assert not verify(small["vk"], small["public"], proof)


def test_key_for_another_circuit_is_refused(keys, small, backend) -> None:
    other = keys[4]["circuit"]
    with pytest.raises(KeyMismatchError, match="different circuit"):
        prove(small["pk"], other.r1cs, other.witness(3), backend)


def test_split_api_and_randomness(small, backend) -> None:
    circuit, pk, z = small["circuit"], small["pk"], small["z"]
    a, b, c = evaluate(circuit.r1cs, z)
    assert a.shape == b.shape == c.shape == (circuit.r1cs.num_constraints, 4)
    r, s = secrets.randbelow(R_MOD), secrets.randbelow(R_MOD)
    h1 = prove_start(pk, a, b, c, z, backend, r=r, s=s)
    p1 = prove_finish(h1)
    assert set(h1.timings_ms) == {"upload", "ntt", "msm_h", "msm_a", "msm_b1", "msm_l", "b2"}
    assert all(v >= 0 for v in h1.timings_ms.values())
    p2 = prove_finish(prove_start(pk, a, b, c, z, backend, r=r, s=s))
    assert p1 == p2  # same r, s: same proof
    p3 = prove(pk, circuit.r1cs, z, backend)
    assert p3 != p1  # fresh r, s
    for p in (p1, p3):
        assert verify(small["vk"], small["public"], p)


def test_cubic_circuit(backend, tmp_path: Path) -> None:
    circuit = examples.cubic_circuit()
    pk = setup(circuit.r1cs, secrets.token_hex(8), backend)
    save_proving_key(pk, tmp_path / "c.pk")
    pk = load_proving_key(tmp_path / "c.pk")
    x = secrets.randbelow(R_MOD)
    proof = prove(pk, circuit.r1cs, circuit.witness(x), backend)
    vk = verifying_key(pk)
    assert verify(vk, [(x**3 + x + 5) % R_MOD], proof)
    assert not verify(vk, [(x**3 + x + 6) % R_MOD], proof)


def test_setup_is_deterministic_in_the_seed(backend) -> None:
    circuit = examples.cubic_circuit()
    seed = secrets.token_hex(8)
    k1, k2 = setup(circuit.r1cs, seed, backend), setup(circuit.r1cs, seed, backend)
    k3 = setup(circuit.r1cs, seed + "x", backend)
    assert verifying_key(k1) == verifying_key(k2)
    assert np.array_equal(k1.h, k2.h)
    assert verifying_key(k1).alpha_g1 != verifying_key(k3).alpha_g1
    assert k1.insecure


def test_malformed_verification_key_point(small) -> None:
    vk: VerifyingKey = small["vk"]
    broken = VerifyingKey(vk.alpha_g1, vk.beta_g2, vk.gamma_g2, b"\x80" + b"\x11" * 95, vk.ic, vk.digest, True)
    with pytest.raises(VerifyError, match="delta"):
        verify(broken, small["public"], small["proof"])


@pytest.mark.parametrize("x", [0, 1, R_MOD - 1])
def test_edge_witness_values(keys, backend, x: int) -> None:
    """Zero and one scalars (x = 0 makes every aux value zero, so accumulators hit infinity)."""
    circuit = keys[4]["circuit"]
    pk = load_proving_key(keys[4]["pk"])
    z = circuit.witness(x)
    proof = prove(pk, circuit.r1cs, z, backend)
    vk = load_vk(keys[4]["vk"])
    public = examples.public_inputs(circuit.r1cs, z)
    assert public == [pow(x, (1 << 4) - 1, R_MOD)]
    assert verify(vk, public, proof)
    assert not verify(vk, [(public[0] + 1) % R_MOD], proof)


class _DeviceLike:
    """A backend that says it is a device and counts the MSM sizes it is asked for."""

    is_device = True

    def __init__(self, inner) -> None:
        self.inner = inner
        self.sizes: list[int] = []

    def __getattr__(self, name: str):
        return getattr(self.inner, name)

    def msm_g1(self, points, scalars):
        self.sizes.append(int(np.asarray(scalars).shape[0]))
        return self.inner.msm_g1(points, scalars)

    def msm_g2(self, points, scalars):
        self.sizes.append(int(np.asarray(scalars).shape[0]))
        return self.inner.msm_g2(points, scalars)


def test_a_device_prover_assembles_the_proof_on_the_host(small, backend) -> None:
    """On a device backend, B2 runs there but the assembly's MSMs of 3 and 5 points do not (the
    host takes them); the proof is the one the host backend makes with the same r, s, and it
    verifies; with the statement's input changed it does not."""
    circuit, pk, z = small["circuit"], small["pk"], small["z"]
    a, b, c = evaluate(circuit.r1cs, z)
    r, s = secrets.randbelow(R_MOD), secrets.randbelow(R_MOD)
    dev = _DeviceLike(backend)
    h = prove_start(pk, a, b, c, z, backend, r=r, s=s)
    h.backend = dev
    proof = prove_finish(h)
    assert len(dev.sizes) == 1, dev.sizes  # B2's MSM alone: the assembly's four went to the host
    assert proof == prove_finish(prove_start(pk, a, b, c, z, backend, r=r, s=s))
    assert verify(small["vk"], small["public"], proof)
    assert not verify(small["vk"], [(small["public"][0] + 1) % R_MOD], proof)


@pytest.mark.parametrize("b2", [False, True])
def test_results_left_for_the_finish_half_give_the_same_proof(small, backend, monkeypatch, b2: bool) -> None:
    """RESULTS = "finish": prove_start leaves its results unread (where its backend computed
    them) and prove_finish reads them first; the proof is the one read in the call."""
    from engine.groth16 import prove as P

    circuit, pk, z = small["circuit"], small["pk"], small["z"]
    a, b, c = evaluate(circuit.r1cs, z)
    r, s = secrets.randbelow(R_MOD), secrets.randbelow(R_MOD)
    want = prove_finish(prove_start(pk, a, b, c, z, backend, r=r, s=s, b2=b2))
    monkeypatch.setattr(P, "RESULTS", "finish")
    h = prove_start(pk, a, b, c, z, backend, r=r, s=s, b2=b2)
    assert h.unread and h.results_on is backend
    proof = prove_finish(h)
    assert not h.unread and proof == want
    assert verify(small["vk"], small["public"], proof)


def test_b2_made_in_the_start_half_gives_the_same_proof(small, backend) -> None:
    """prove_start(b2=True) makes B2's MSM itself (the call's, SEALTOP_B2=call): the finish half
    has only the assembly left, and the proof is the one made with B2 in the finish."""
    circuit, pk, z = small["circuit"], small["pk"], small["z"]
    a, b, c = evaluate(circuit.r1cs, z)
    r, s = secrets.randbelow(R_MOD), secrets.randbelow(R_MOD)
    h = prove_start(pk, a, b, c, z, backend, r=r, s=s, b2=True)
    assert h.acc_b2 is not None and "b2" in h.timings_ms and h.z_placed is None
    dev = _DeviceLike(backend)
    h.backend = dev
    proof = prove_finish(h)
    assert dev.sizes == []  # nothing left for the backend: B2 was made, the assembly is the host's
    assert proof == prove_finish(prove_start(pk, a, b, c, z, backend, r=r, s=s))
    assert verify(small["vk"], small["public"], proof)
