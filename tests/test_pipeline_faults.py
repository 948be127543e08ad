"""Faults around the orchestrator itself, injected from the test (kills, signals, stops), never
through the engine's config: a killed orchestrator leaves no worker, segment or semaphore of
its own; stall detection names a stopped worker; leftovers of dead runs are swept at start."""

from __future__ import annotations

import gc
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from engine_events import drain
from engine_faults import signal_worker_at
from processes import alive, children, follow_stderr, semaphores_mapped_by

from engine.config import EngineConfig
from engine.pipeline.engine import Engine, Job
from engine.pipeline.shm import SEM_PREFIX, SHM_DIR, list_ours, prefix_for

ROOT = Path(__file__).resolve().parents[1]
PRESET = "chain-1024"
WAIT = 300


@pytest.fixture(scope="module")
def params(tmp_path_factory):
    return str(tmp_path_factory.mktemp("params"))


def make_cfg(params: str, **kw) -> EngineConfig:
    base = dict(backend="cpu", devices=[], partition_workers=2, gpu_channel_capacity=1,
                param_cache=params, sample_interval_s=0.05)
    base.update(kw)
    return EngineConfig(**base)


def start_run(params: str, tmp_path: Path, jobs: int) -> subprocess.Popen:
    """`sealtop run --jobs N --record FILE` in its own session; returns it once the first
    proof is done (workers, segments and queues all exist). Its stderr lines so far are in
    ``proc.lines``."""
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'[engine]\nbackend = "cpu"\npartition_workers = 2\ngpu_channel_capacity = 1\n'
                   f'[paths]\nparam_cache = "{params}"\n[telemetry]\nsample_interval_s = 0.05\n'
                   f'[jobs]\npreset = "{PRESET}"\npartitions = 2\n')
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.Popen([sys.executable, "-m", "engine", "run", "--config", str(cfg),
                             "--jobs", str(jobs), "--record", str(tmp_path / "run.jsonl")],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env,
                            start_new_session=True)
    err = follow_stderr(proc, " done in ")
    assert err.seen.wait(WAIT), "".join(err.lines)
    proc.lines = err.lines  # type: ignore[attr-defined]
    return proc


def test_sigkill_of_the_orchestrator_leaves_nothing_within_5s(params, tmp_path):
    """SIGKILL of `run` mid-run: within 5 s no worker is alive, no segment with its prefix and
    none of the semaphores it had open is left, and the recording's prefix reads back with
    every proof the run had announced."""
    from engine.stream.reader import read_recording

    proc = start_run(params, tmp_path, jobs=200)
    try:
        time.sleep(1.0)  # a few more proofs, so the recording has a tail to lose
        workers = children(proc.pid)
        sems = semaphores_mapped_by(proc.pid)
        assert len(workers) >= 3, workers  # two synthesis workers, the prover, the tracker
        assert sems, "the orchestrator's queues hold named semaphores"
        assert list_ours(prefix_for(proc.pid)), "partitions in flight hold segments"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
        deadline = time.monotonic() + 5.0
        while time.monotonic() < deadline:
            left = [p for p in workers if alive(p)]
            segs = list_ours(prefix_for(proc.pid))
            sems_left = [n for n in sems if os.path.exists(os.path.join(SHM_DIR, n))]
            if not left and not segs and not sems_left:
                break
            time.sleep(0.1)
        assert left == [], f"workers outlived their orchestrator: {left}"
        assert segs == [], segs
        assert sems_left == [], sems_left
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    rec = read_recording(tmp_path / "run.jsonl")
    verified = {e["job"] for e in rec.events if e["kind"] == "proof_done" and e["verified"]}
    announced = {int(line.split("job ")[1].split()[0]) for line in proc.lines
                 if " done in " in line and "verified" in line}
    assert announced and announced <= verified, (announced, verified)


def test_next_start_sweeps_and_reports_what_a_dead_run_left(params, tmp_path, monkeypatch):
    """Leftovers of a run whose orchestrator and resource tracker were both killed: a segment
    with the dead pid's prefix and an unmapped semaphore. The next start unlinks both, says
    so, and never touches a semaphore that a live process maps.

    /dev/shm is shared with every other process: any engine that starts there (the other xdist
    process's, another pytest run's) sweeps what dead runs left too. So the leftovers are made
    inside this engine's own sweep, just before the real sweep functions run: made any earlier,
    another start could take them first and this one would rightly report nothing."""
    import multiprocessing as mp

    from engine.pipeline import engine as engine_mod

    dead = int(subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                              capture_output=True, text=True).stdout)
    stale_seg = f"{prefix_for(dead)}j1p0a0a-1"
    stale_sem = f"{SEM_PREFIX}deadbeef{os.getpid() % 10000}"
    old = time.time() - 60
    live_q = mp.get_context("spawn").Queue()  # a live process's semaphores (this one's)
    # a spawn queue's semaphores are unlinked when the queue is collected: collect the earlier
    # tests' garbage now, or a collection during this test unlinks some of `live` by itself
    gc.collect()
    live = semaphores_mapped_by(os.getpid())
    real_segments, real_semaphores = engine_mod.sweep_stale, engine_mod.sweep_stale_semaphores

    def leave_segment_then_sweep() -> list[str]:
        Path(SHM_DIR, stale_seg).write_bytes(b"\0" * 64)
        return real_segments()

    def leave_semaphore_then_sweep() -> list[str]:
        Path(SHM_DIR, stale_sem).write_bytes(b"\0" * 32)
        for n in [stale_sem, *live]:  # old enough to be swept, were nobody mapping them
            os.utime(Path(SHM_DIR, n), (old, old))
        return real_semaphores()

    monkeypatch.setattr(engine_mod, "sweep_stale", leave_segment_then_sweep)
    monkeypatch.setattr(engine_mod, "sweep_stale_semaphores", leave_semaphore_then_sweep)
    lines: list[str] = []
    eng = Engine(make_cfg(params, partition_workers=1), progress=lines.append)
    q = eng.subscribe()
    eng.start()
    eng.stop()
    assert not Path(SHM_DIR, stale_seg).exists()
    assert not Path(SHM_DIR, stale_sem).exists()
    assert live and all(Path(SHM_DIR, n).exists() for n in live)
    said = [line for line in lines if line.startswith("swept what dead runs left")]
    assert len(said) == 1 and "1 shared-memory segment(s)" in said[0], lines
    evs = drain(q)
    counters = [e for e in evs if e["kind"] == "sample"][-1]["counters"]
    assert counters["stale_segments_swept"] == 1 and counters["stale_semaphores_swept"] >= 1
    live_q.close()


@pytest.mark.slow
def test_a_stopped_worker_is_reported_stalled_and_retried(params):
    """SIGSTOP of the prover while it holds a partition: reported stalled (state T) in an
    error event within seconds, and with stall_action = "retry" the partition is proven
    elsewhere (a restarted prover), every proof verified."""
    eng = Engine(make_cfg(params, stall_after_s=30, stall_action="retry"))
    q = eng.subscribe()
    eng.start()
    stopped = None
    try:
        eng.submit(Job(PRESET, 3))
        stopped, evs = signal_worker_at(eng, q, "cpu0", "gpu", signal.SIGSTOP, WAIT)
        assert eng.wait_idle(WAIT)
    finally:
        if stopped is not None and alive(stopped):
            os.kill(stopped, signal.SIGCONT)
        eng.stop()
    evs += drain(q)
    stalls = [e for e in evs if e["kind"] == "error" and "stalled" in e["message"]]
    assert stalls and "is stopped (state T)" in stalls[0]["message"], stalls
    assert f"pid {stopped}" in stalls[0]["message"]
    done = [e for e in evs if e["kind"] == "proof_done"]
    assert len(done) == 1 and done[0]["verified"]
    assert not alive(stopped)


def test_a_worker_killed_holding_its_reply_lock_blocks_no_other(params):
    """synth-0 SIGKILLs itself at its first finished partition while holding its reply queue's
    write lock (as its feeder thread would be while writing). Every other worker, the prover
    included, answers on a queue of its own, so their replies keep coming: the partition is
    synthesized again elsewhere, every proof verifies and the death is reported. (With one reply
    queue shared by all workers this run never finished: the lock stayed held for good.)"""
    from engine_events import run_engine
    from engine_faults import Faults, engine

    eng = engine(make_cfg(params, partition_workers=2), Faults(die_holding_reply_lock={"synth-0"}))
    evs = run_engine(eng, [Job(PRESET, 3)], 120)
    done = [e for e in evs if e["kind"] == "proof_done"]
    assert len(done) == 1 and done[0]["verified"], done
    died = [e for e in evs if e["kind"] == "error" and "synth-0" in str(e.get("where", "")) + e["message"]]
    assert any("died" in e["message"] for e in died), died
