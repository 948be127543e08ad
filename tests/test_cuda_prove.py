"""GPU Groth16 end to end: setup on the GPU gives the CPU's key bit for bit, a GPU proof with r
and s fixed is byte-identical to the CPU proof, and GPU proofs verify under py_arkworks_bls12381's
pairing (a tampered one does not)."""

from __future__ import annotations

import secrets

import numpy as np
import pytest
from gpu_proofs import gpu_proof_equals_cpu_and_verifies

from engine.groth16 import examples
from engine.groth16.prove import prove
from engine.groth16.setup import setup
from engine.groth16.verify import verify
from engine.groth16.vkey import verifying_key
from kernels.backend import cuda_unavailable_reason, get_backend
from kernels.constants import R_MOD

_REASON = cuda_unavailable_reason()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(_REASON is not None, reason=f"cuda: {_REASON}")]

KEY_ARRAYS = ("alpha_g1", "beta_g1", "beta_g2", "gamma_g2", "delta_g1", "delta_g2", "ic", "a",
              "b_g1", "b_g2", "l", "h")


@pytest.mark.parametrize("log_constraints", [6, 12])
def test_gpu_setup_and_proof_equal_cpu_and_verify(log_constraints: int) -> None:
    cpu, gpu = get_backend("cpu"), get_backend("cuda")
    circuit = examples.chain_for_constraints(1 << log_constraints)
    seed = secrets.token_hex(8)
    pk_cpu = setup(circuit.r1cs, seed, cpu)
    pk_gpu = setup(circuit.r1cs, seed, gpu)
    for name in KEY_ARRAYS:
        assert np.array_equal(getattr(pk_cpu, name), getattr(pk_gpu, name)), name

    z = circuit.witness(secrets.randbelow(R_MOD))
    r, s = secrets.randbelow(R_MOD), secrets.randbelow(R_MOD)
    proof_cpu = prove(pk_cpu, circuit.r1cs, z, cpu, r=r, s=s)
    proof_gpu = prove(pk_gpu, circuit.r1cs, z, gpu, r=r, s=s)
    assert proof_gpu == proof_cpu

    vk = verifying_key(pk_gpu)
    public = examples.public_inputs(circuit.r1cs, z)
    fresh = prove(pk_gpu, circuit.r1cs, z, gpu)  # fresh r, s
    assert fresh != proof_gpu
    assert verify(vk, public, fresh)
    assert not verify(vk, [(public[0] + 1) % R_MOD], fresh)
    tampered = bytearray(fresh)
    tampered[150] ^= 0x01
    assert not verify(vk, public, bytes(tampered))


def test_gpu_proof_with_the_glv_split_of_h_equals_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """H's MSM split GLV-wise (the threshold lowered so a small circuit takes it) gives the CPU's
    proof byte for byte, and the proof verifies."""
    from kernels.cuda import msm

    monkeypatch.setattr(msm, "GLV_MIN_TAIL", 64)
    gpu_proof_equals_cpu_and_verifies(11)


def test_gpu_prove_start_times_each_group_on_the_device_and_threads_overlap_safely() -> None:
    """prove_start reports every kernel group from CUDA events, and two prover threads (each on
    its own stream, as the engine's slots are) give the same proofs as one thread."""
    import threading
    import time

    from engine.groth16.prove import START_GROUPS, evaluate, prove_finish, prove_start

    gpu = get_backend("cuda")
    circuit = examples.chain_for_constraints(1 << 12)
    pk = setup(circuit.r1cs, secrets.token_hex(8), gpu)
    jobs = []
    for _ in range(4):
        z = circuit.witness(secrets.randbelow(R_MOD))
        jobs.append((z, evaluate(circuit.r1cs, z), secrets.randbelow(R_MOD), secrets.randbelow(R_MOD)))

    def one(job) -> tuple[bytes, dict[str, float], float]:
        z, (a, b, c), r, s = job
        t = time.perf_counter()
        h = prove_start(pk, a, b, c, z, gpu, r=r, s=s)
        wall = (time.perf_counter() - t) * 1e3
        return prove_finish(h), h.timings_ms, wall

    serial = [one(j) for j in jobs]
    plain = [g for g in START_GROUPS if g != "abc"]  # "abc" is the compact path's (abc_eval = "gpu")
    for _, tm, wall in serial:
        assert set(plain) <= set(tm) and "abc" not in tm
        assert all(tm[g] > 0 for g in plain)
        assert sum(tm[g] for g in plain) <= wall + 1.0  # device time inside the host call
    threaded: list = [None] * len(jobs)

    def slot(k: int) -> None:
        for i in range(k, len(jobs), 2):
            threaded[i] = one(jobs[i])[0]

    threads = [threading.Thread(target=slot, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert threaded == [p for p, _, _ in serial]
    vk = verifying_key(pk)
    for (z, _, _, _), proof in zip(jobs, threaded):
        assert verify(vk, examples.public_inputs(circuit.r1cs, z), proof)
