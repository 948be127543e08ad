"""A GPU proof against the CPU's: the check several GPU test files make under different kernel
settings (the caller sets them first)."""

from __future__ import annotations

import secrets

from engine.groth16 import examples
from engine.groth16.prove import prove
from engine.groth16.setup import setup
from engine.groth16.verify import verify
from engine.groth16.vkey import verifying_key
from kernels.backend import get_backend
from kernels.constants import R_MOD


def gpu_proof_equals_cpu_and_verifies(log_constraints: int = 11) -> None:
    """A chain circuit's proof on the CUDA backend is the CPU backend's byte for byte (same r, s),
    verifies under the oracle, and does not with its public input changed."""
    cpu, gpu = get_backend("cpu"), get_backend("cuda")
    circuit = examples.chain_for_constraints(1 << log_constraints)
    pk = setup(circuit.r1cs, secrets.token_hex(8), cpu)
    z = circuit.witness(secrets.randbelow(R_MOD))
    r, s = secrets.randbelow(R_MOD), secrets.randbelow(R_MOD)
    proof = prove(pk, circuit.r1cs, z, gpu, r=r, s=s)
    assert proof == prove(pk, circuit.r1cs, z, cpu, r=r, s=s)
    public = examples.public_inputs(circuit.r1cs, z)
    assert verify(verifying_key(pk), public, proof)
    assert not verify(verifying_key(pk), [(public[0] + 1) % R_MOD], proof)
