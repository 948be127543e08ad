"""An MSM's ends on the side stream (msm_ends.Ends, SEALTOP_MSM_ENDS=side): several MSMs queued one
after another, each with its ends beside the next one's work, give after the join exactly what
each gives inline and what arkworks gives (G1 and G2, tails large enough for bucket sums, heavy
buckets folded by a tree, a scalar vector with no tail); a proof made on the CUDA backend with the ends beside equals the CPU
backend's byte for byte and verifies, while a changed input does not; and so does one whose B2
the GPU half made (SEALTOP_B2=call), with the ends inline or beside."""

from __future__ import annotations

import random

import numpy as np
import pytest
from gpu_proofs import gpu_proof_equals_cpu_and_verifies

from kernels.backend import cuda_unavailable_reason
from kernels.constants import R_MOD
from kernels.cuda import testing as T

_REASON = cuda_unavailable_reason()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(_REASON is not None, reason=f"cuda: {_REASON}")]


def _scalars(n: int, general: float, rng: random.Random) -> list[int]:
    return [rng.randrange(2, R_MOD) if rng.random() < general else rng.choice([0, 1]) for _ in range(n)]


@pytest.mark.parametrize("group", ["g1", "g2"])
def test_msms_with_their_ends_beside_equal_inline_and_arkworks(group: str) -> None:
    import cupy as cp

    from kernels.cuda import msm, msm_ends

    rng = random.Random()
    n = 3000 if group == "g1" else 900
    pts = T.random_points(group, n, rng)
    P = cp.asarray(T.ark_to_words(group, pts))
    cases = [_scalars(n, g, rng) for g in (0.3, 1.0, 0.02, 0.0)] + [[rng.randrange(R_MOD) for _ in range(n)]]
    v = rng.randrange(2, R_MOD)  # one value in every scalar but a few: each window's bucket is heavy
    cases.append([v if i % 97 else rng.randrange(R_MOD) for i in range(n)])
    S = [cp.asarray(T.fr_words(sc)) for sc in cases]
    ends = msm_ends.Ends()
    beside = [msm.msm(group, P, s, ends=ends) for s in S]  # queued back to back, not joined yet
    assert ends.pending  # at least one MSM had a tail, so ends that ran beside
    held = ends.join()
    got = [cp.asnumpy(x) for x in beside]  # the stream synchronized: the ends' blocks may go
    del held
    assert not ends.pending
    for sc, s, g in zip(cases, S, got):
        assert np.array_equal(g, cp.asnumpy(msm.msm(group, P, s)))
        assert np.array_equal(g[0], T.ark_msm(group, pts, sc))
    assert not np.array_equal(got[0], got[1])


def test_a_proof_with_the_ends_beside_equals_cpu_and_verifies(monkeypatch: pytest.MonkeyPatch) -> None:
    from kernels.cuda import msm_ends

    monkeypatch.setattr(msm_ends, "ENDS", "side")
    gpu_proof_equals_cpu_and_verifies(11)


@pytest.mark.parametrize("ends", ["inline", "side"])
def test_b2_in_the_gpu_call_gives_the_cpu_proof(monkeypatch: pytest.MonkeyPatch, ends: str) -> None:
    """SEALTOP_B2=call's path: prove_start makes B2 on the GPU (its ends beside the others with
    "side"); the proof is the CPU's for the same r, s and verifies."""
    import secrets

    from engine.groth16 import examples
    from engine.groth16.prove import evaluate, prove, prove_finish, prove_start
    from engine.groth16.setup import setup
    from engine.groth16.verify import verify
    from engine.groth16.vkey import verifying_key
    from kernels.backend import get_backend
    from kernels.cuda import msm_ends

    monkeypatch.setattr(msm_ends, "ENDS", ends)
    cpu, gpu = get_backend("cpu"), get_backend("cuda")
    circuit = examples.chain_for_constraints(1 << 10)
    pk = setup(circuit.r1cs, secrets.token_hex(8), cpu)
    z = circuit.witness(secrets.randbelow(R_MOD))
    a, b, c = evaluate(circuit.r1cs, z)
    r, s = secrets.randbelow(R_MOD), secrets.randbelow(R_MOD)
    proof = prove_finish(prove_start(pk, a, b, c, z, gpu, r=r, s=s, b2=True))
    assert proof == prove(pk, circuit.r1cs, z, cpu, r=r, s=s)
    public = examples.public_inputs(circuit.r1cs, z)
    assert verify(verifying_key(pk), public, proof)


def test_results_read_by_the_finish_half_on_another_thread_give_the_cpu_proof(monkeypatch: pytest.MonkeyPatch) -> None:
    """SEALTOP_MSM_RESULTS=finish: prove_start (on one thread) returns with the MSM ends still
    beside and its results on the device; prove_finish on another thread waits for those ends and
    reads them: the proof is the CPU's for the same r, s and verifies, and a changed witness's
    is not."""
    import secrets
    import threading

    from engine.groth16 import examples
    from engine.groth16 import prove as P
    from engine.groth16.setup import setup
    from engine.groth16.verify import verify
    from engine.groth16.vkey import verifying_key
    from kernels.backend import get_backend
    from kernels.cuda import msm_ends

    monkeypatch.setattr(msm_ends, "ENDS", "side")
    monkeypatch.setattr(P, "RESULTS", "finish")
    cpu, gpu = get_backend("cpu"), get_backend("cuda")
    circuit = examples.chain_for_constraints(1 << 10)
    pk = setup(circuit.r1cs, secrets.token_hex(8), cpu)
    z = circuit.witness(secrets.randbelow(R_MOD))
    a, b, c = P.evaluate(circuit.r1cs, z)
    r, s = secrets.randbelow(R_MOD), secrets.randbelow(R_MOD)
    handles: list[P.ProveHandle] = []
    for b2 in (True, False):
        t = threading.Thread(target=lambda b2=b2: handles.append(P.prove_start(pk, a, b, c, z, gpu, r=r, s=s, b2=b2)))
        t.start()
        t.join()
    assert all(h.unread and h.pending is not None for h in handles)
    want = P.prove(pk, circuit.r1cs, z, cpu, r=r, s=s)
    public = examples.public_inputs(circuit.r1cs, z)
    for h in handles:
        proof = P.prove_finish(h)
        assert not h.unread and proof == want
        assert verify(verifying_key(pk), public, proof)
    z2 = circuit.witness(secrets.randbelow(R_MOD))
    other = P.prove_finish(P.prove_start(pk, *P.evaluate(circuit.r1cs, z2), z2, gpu, r=r, s=s))
    assert other != want and not verify(verifying_key(pk), public, other)
