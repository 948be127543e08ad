"""abc_eval = "gpu" on the cuda backend: the proof made from the compact witness (uploaded,
expanded and evaluated on the device straight into H's input) is byte for byte the proof of
the a, b, c path for the same r and s, at `small` and `medium`, and the oracle accepts it."""

from __future__ import annotations

import secrets

import numpy as np
import pytest
from engine_events import run_jobs

from kernels.backend import cuda_unavailable_reason

_REASON = cuda_unavailable_reason()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(_REASON is not None, reason=f"cuda: {_REASON}")]


def _circuits() -> str:
    """The engine's circuit cache (built circuits shared with the other GPU tests and runs of
    the same machine session, instead of tracing medium again per test)."""
    from engine.config import EngineConfig
    from engine.pipeline.circuits import circuit_cache_dir

    return circuit_cache_dir(EngineConfig().param_cache_path())


def _same_proof(preset: str) -> None:
    from engine.circuit.porep import build_porep, generate_partitions, porep_witness
    from engine.groth16.compact import (
        WitnessLayout,
        compact_r1cs,
        public_inputs,
        read_compact,
        write_compact,
    )
    from engine.groth16.prove import prove_finish, prove_start, resident_tables
    from engine.groth16.resident import resident_compact
    from engine.groth16.setup import setup
    from engine.groth16.verify import verify
    from engine.groth16.vkey import verifying_key
    from engine.synthesis import evaluate, general_capacity
    from kernels.backend import get_backend
    from kernels.constants import R_MOD

    be = get_backend("cuda")
    shape = build_porep(preset, _circuits())
    r1 = shape.r1cs
    pk = setup(r1, secrets.token_hex(8), be)
    tables = resident_tables(pk, be)
    sector, parts = generate_partitions(preset, secrets.randbelow(2**32))
    _, z = porep_witness(shape, parts[0])
    layout = WitnessLayout(r1.num_vars, general_capacity(shape))
    buf = np.zeros(layout.words, np.uint64)
    write_compact(z, buf, layout)
    w = read_compact(buf, layout)
    rc = resident_compact(compact_r1cs(r1), be)
    assert rc.host is None and rc.device is not None  # the host copy is not kept
    rr, ss = secrets.randbelow(R_MOD), secrets.randbelow(R_MOD)
    a, b, c = evaluate(r1, z)
    p_plain = prove_finish(prove_start(pk, a, b, c, z, be, r=rr, s=ss, tables=tables))
    hc = prove_start(pk, None, None, None, None, be, r=rr, s=ss, tables=tables, compact=(rc, w))
    assert hc.timings_ms["abc"] > 0 and hc.timings_ms["upload"] > 0
    p_compact = prove_finish(hc)
    assert p_plain == p_compact
    # a witness placed ahead of its call (gpu_calls = "serial"): uploaded on this thread's stream,
    # the call on the turn's shared stream, nothing uploaded inside it, the same proof
    from engine.groth16.resident import PlacedWitness, place_witness
    from kernels.cuda.stream import turn_stream

    placed = place_witness(w, be)
    assert isinstance(placed, PlacedWitness)
    with turn_stream():
        hp = prove_start(pk, None, None, None, None, be, r=rr, s=ss, tables=tables, compact=(rc, placed))
    assert hp.timings_ms["upload"] < hc.timings_ms["upload"]
    assert prove_finish(hp) == p_plain
    public = sector.statement(0).public_inputs()
    assert public_inputs(w, r1.num_inputs) == public
    assert verify(verifying_key(pk), public, p_compact)


def test_small_gpu_abc_proof_is_the_cpu_abc_proof() -> None:
    _same_proof("small")


def test_medium_gpu_abc_proof_is_the_cpu_abc_proof() -> None:
    _same_proof("medium")


def test_engine_on_cuda_proves_with_gpu_abc_eval(tmp_path) -> None:
    """The engine on the cuda backend with abc_eval = "gpu": synthesis sends the compact
    witness, the prover evaluates a, b, c on its device; proofs verify, the "abc" group is
    timed on the device, and a partition holds the compact mode's bytes."""
    import os

    from engine.config import EngineConfig
    from engine.pipeline.circuits import resolve
    from engine.pipeline.engine import Job

    cfg = EngineConfig(backend="cuda", devices=[0], partition_workers=2, gpu_channel_capacity=1,
                       gpu_slots_per_device=1, param_cache=str(tmp_path), sample_interval_s=0.2,
                       abc_eval="gpu")
    evs = run_jobs(cfg, [Job("small", 2, seed=secrets.randbelow(2**31))], 600)
    done = [e for e in evs if e["kind"] == "proof_done"]
    assert len(done) == 1 and done[0]["verified"]
    circuit = resolve("small", os.path.join(str(tmp_path), "circuits"))
    for e in (e for e in evs if e["kind"] == "partition_timings"):
        assert e["ms"]["abc"] > 0 and e["bytes_held"] == circuit.partition_bytes("gpu")
