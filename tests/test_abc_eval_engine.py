"""abc_eval = "gpu" through the embedded engine on the CPU backend (real worker processes, real
shared memory): synthesis sends only the compact witness, the prover evaluates a, b, c on the
CPU where H runs (named so on the engine's output), every proof verifies against the statement
the verifier derives, each partition holds the mode's bytes, and the "abc" kernel group is
timed. The CPU backend has no device: this is the prover-side evaluation the cuda backend runs on
its GPU (tests/test_abc_eval_gpu.py)."""

from __future__ import annotations

import os
import re
import secrets

from engine_events import drain

from engine.config import EngineConfig
from engine.pipeline.circuits import resolve
from engine.pipeline.engine import Engine, Job
from engine.pipeline.shm import list_ours, prefix_for

WAIT = 300


def test_engine_proves_with_abc_evaluated_by_the_prover(tmp_path) -> None:
    cfg = EngineConfig(backend="cpu", devices=[], partition_workers=2, gpu_channel_capacity=1,
                       gpu_slots_per_device=1, param_cache=str(tmp_path), sample_interval_s=0.05,
                       abc_eval="gpu")
    lines: list[str] = []
    eng = Engine(cfg, lines.append)
    q = eng.subscribe()
    eng.start()
    jobs = {"tiny": 2}
    try:
        for preset, parts in jobs.items():
            eng.submit(Job(preset, parts, seed=secrets.randbelow(2**31)))
        assert eng.wait_idle(WAIT), "jobs did not finish"
    finally:
        eng.stop(drain=True)
    evs = drain(q)
    assert any('abc_eval = "gpu" on the cpu backend' in line and "on the CPU" in line for line in lines)
    # the prover's key load says what the compact matrices took (KeyProgress lines)
    assert any(re.search(r": compact matrices: \d+ nonzeros, \d+ coefficients, .* \(\d+\.\d\d s\)$", line)
               for line in lines), lines
    assert any(re.search(r": compact matrices resident in cpu memory \(\d+\.\d\d s\)$", line) for line in lines)
    done = [e for e in evs if e["kind"] == "proof_done"]
    assert len(done) == len(jobs) and all(e["verified"] for e in done)
    presets = {e["job"]: e["preset"] for e in evs if e["kind"] == "job_submitted"}
    timings = [e for e in evs if e["kind"] == "partition_timings"]
    assert len(timings) == sum(jobs.values())
    cache = os.path.join(str(tmp_path), "circuits")
    for e in timings:
        circuit = resolve(presets[e["job"]], cache)
        assert e["bytes_held"] == circuit.partition_bytes("gpu") < circuit.partition_bytes("cpu")
        assert e["ms"]["abc"] >= 0 and "eval" in e["ms"] and "upload" in e["ms"]
    # nothing left: segments unlinked, every buffer released
    assert list_ours(prefix_for(os.getpid())) == []
    assert eng.segments.live_bytes() == 0
    last = [e for e in evs if e["kind"] == "sample"][-1]
    assert last["shm_bytes"] == 0 and last["counters"]["holding_abc"] == 0
