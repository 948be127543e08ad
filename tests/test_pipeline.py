"""The embedded engine end to end on the CPU backend: real worker processes, real shared memory,
real proofs. Every property is checked on the event stream (exact maxima from stage events)."""

from __future__ import annotations

import os
import signal
import time

import pytest
from engine_events import drain, run_engine
from engine_faults import INJECTED_KEY_FAILURE, Faults, engine

from app.state import DashboardState, apply
from engine.config import EngineConfig
from engine.pipeline.circuits import resolve
from engine.pipeline.engine import Engine, EngineError, Job
from engine.pipeline.shm import list_ours, prefix_for
from engine.stream import summary

PRESET = "chain-1024"  # synthesis ~ms, CPU proof ~150 ms: the prover is the bottleneck
WAIT = 300


@pytest.fixture(scope="module")
def params(tmp_path_factory):
    return str(tmp_path_factory.mktemp("params"))


def make_cfg(params: str, **kw) -> EngineConfig:
    base = dict(
        backend="cpu",
        devices=[],
        partition_workers=2,
        gpu_channel_capacity=1,
        gpu_slots_per_device=1,
        param_cache=params,
        sample_interval_s=0.05,
    )
    base.update(kw)
    return EngineConfig(**base)


def run_jobs(cfg: EngineConfig, jobs: list[Job], faults: Faults | None = None) -> list[dict]:
    eng = engine(cfg, faults)
    evs = run_engine(eng, jobs, WAIT)
    assert_clean(eng, evs)
    return evs


def worker_pids(evs: list[dict]) -> set[int]:
    pids = set()
    for e in evs:
        if e["kind"] == "sample":
            pids.update(p["pid"] for p in e["processes"] if p["role"] != "orchestrator")
    return pids


def assert_clean(eng: Engine, evs: list[dict]) -> None:
    """Nothing of ours in /dev/shm, no worker process alive, buffers all released."""
    assert list_ours(prefix_for(os.getpid())) == []
    for pid in worker_pids(evs) | set(eng.worker_pids().values()):
        assert not os.path.exists(f"/proc/{pid}") or _zombie(pid), f"worker {pid} survived"
    last = [e for e in evs if e["kind"] == "sample"][-1]
    assert last["shm_bytes"] == 0
    assert last["counters"]["holding_abc"] == 0
    assert eng.segments.live_bytes() == 0


def _zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] == "Z"
    except OSError:
        return True


def assert_counters_add_up(evs: list[dict], partitions: int) -> dict:
    c = summary.final_counters(evs)
    stages = {k: v for k, v in c.items() if k.startswith("stage_")}
    assert sum(stages.values()) == partitions == c["partitions_submitted"]
    assert c["partitions_submitted_events"] == partitions
    assert c["synth_started"] == c["abc_freed"] + c["holding_abc"]
    assert c["holding_abc"] == 0
    return c


def test_counters_and_bound_delivered(params):
    cfg = make_cfg(params, permit_release="delivered")
    evs = run_jobs(cfg, [Job(PRESET, 4, seed=1), Job(PRESET, 3, seed=2)])
    c = assert_counters_add_up(evs, 7)
    assert c["stage_done"] == 7 and c["dealloc_done"] == 7
    done = [e for e in evs if e["kind"] == "proof_done"]
    assert len(done) == 2 and all(e["verified"] for e in done)
    assert all(len(bytes.fromhex(e["proof"])) == 192 * n for e, n in zip(done, (4, 3)))
    # the bound, on exact maxima from the stage events
    assert summary.bound_excess(evs, 2, 1, 1) <= 0
    # a partition holds its synthesis permit until it enters the channel
    assert summary.max_concurrent(evs, {"synthesizing", "synthesized"}) <= 2
    assert summary.max_concurrent(evs, {"waiting_gpu"}) <= 1
    assert summary.max_concurrent(evs, {"gpu"}) <= 1
    # negative control: a bound one tighter than the configuration is violated in this run
    assert summary.bound_excess(evs, 2, 0, 1) > 0
    # synthesis ends at the worker's reply, not at channel entry: every partition's stages
    # run synthesizing, synthesized, waiting_gpu in turn, and the synthesized stage lasts at
    # least as long as the worker's own timers say synthesis did not
    seq: dict[tuple[int, int], list[tuple[float, str]]] = {}
    for e in evs:
        if e["kind"] == "stage":
            seq.setdefault((e["job"], e["partition"]), []).append((e["t"], e["stage"]))
    for stages in seq.values():
        names = [s for _, s in stages]
        i = names.index("synthesizing")
        assert names[i:i + 3] == ["synthesizing", "synthesized", "waiting_gpu"], names
    timers = {(e["job"], e["partition"]): e["ms"] for e in evs if e["kind"] == "partition_timings"}
    for k, stages in seq.items():
        t = dict((s, t) for t, s in stages)
        synth_ms = (t["synthesized"] - t["synthesizing"]) * 1000.0
        assert synth_ms >= timers[k]["witness"] + timers[k]["eval"] - 1.0  # clocks: 1 ms


def test_synthesized_release_piles_up_and_budget_restores_bound(params):
    # permit_release = "synthesized" without a budget: the cuzk bug, partitions pile up
    cfg = make_cfg(params, permit_release="synthesized")
    evs = run_jobs(cfg, [Job(PRESET, 6)])
    assert_counters_add_up(evs, 6)
    assert summary.max_concurrent(evs, {"synthesizing"}) <= 2
    assert summary.max_concurrent(evs, {"waiting_gpu"}) > 1  # more than the channel holds
    assert summary.bound_excess(evs, 2, 1, 1) > 0
    # the same with a memory budget of (workers + capacity + slots) partitions: bound holds
    per = resolve(PRESET).partition_bytes()
    cfg = make_cfg(params, permit_release="synthesized", memory_budget=4 * per)
    evs = run_jobs(cfg, [Job(PRESET, 6)])
    assert_counters_add_up(evs, 6)
    assert summary.bound_excess(evs, 2, 1, 1) <= 0
    assert all(e["verified"] for e in evs if e["kind"] == "proof_done")


def max_bytes_holding(evs: list[dict]) -> int:
    """Exact maximum of the partition bytes held at once, from stage events and job sizes."""
    size = {e["job"]: resolve(e["preset"]).partition_bytes() for e in evs
            if e["kind"] == "job_submitted"}
    cur: dict[tuple[int, int], str] = {}
    held = best = 0
    for e in evs:
        if e["kind"] != "stage":
            continue
        k = (e["job"], e["partition"])
        old, new = cur.get(k), e["stage"]
        cur[k] = new
        held += size[e["job"]] * ((new in summary.HOLDING) - (old in summary.HOLDING))
        best = max(best, held)
    return best


def test_low_budget_caps_memory_and_jobs_finish(params):
    per = resolve(PRESET).partition_bytes()
    budget = 2 * per
    cfg = make_cfg(params, partition_workers=3, gpu_channel_capacity=3, memory_budget=budget)
    evs = run_jobs(cfg, [Job(PRESET, 6)])
    assert_counters_add_up(evs, 6)
    assert all(e["verified"] for e in evs if e["kind"] == "proof_done")
    assert max_bytes_holding(evs) <= budget
    assert max(e["shm_bytes"] for e in evs if e["kind"] == "sample") <= budget
    assert summary.max_concurrent(evs, summary.HOLDING) == 2  # the budget, not the workers
    # the console's memory panel counts what the budget counts: job_submitted carries the
    # partition's bytes, so while partitions are in flight (no timings yet) the panel's held
    # bytes are the budget's per-partition bytes times the partitions holding, and it reads
    # the whole budget when two hold it
    assert [e["bytes"] for e in evs if e["kind"] == "job_submitted"] == [per]
    state, panel = DashboardState(), []
    for e in evs:
        apply(state, e)
        if e["kind"] == "stage":
            held = sum(state.stage_bytes().values())
            assert held == state.holding() * per, e
            panel.append(held)
    assert max(panel) == budget


def test_budget_smaller_than_a_partition_is_refused(params):
    per = resolve(PRESET).partition_bytes()
    eng = Engine(make_cfg(params, memory_budget=per - 1))
    eng.start()
    try:
        with pytest.raises(ValueError, match="memory budget"):
            eng.submit(Job(PRESET, 1))
    finally:
        eng.stop()


def test_live_knobs_change_concurrency(params):
    cfg = make_cfg(params, partition_workers=1, gpu_channel_capacity=1)
    eng = Engine(cfg)
    q = eng.subscribe()
    eng.start()
    evs: list[dict] = []
    try:
        eng.submit(Job(PRESET, 10))
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            e = q.get(timeout=WAIT)
            evs.append(e)
            if e["kind"] == "stage" and e["stage"] == "done":
                break
        eng.set_knob("partition_workers", 3)
        eng.set_knob("gpu_channel_capacity", 3)
        assert eng.wait_idle(WAIT)
    finally:
        eng.stop()
    evs += drain(q)
    assert_clean(eng, evs)
    assert_counters_add_up(evs, 10)
    knob_at = next(i for i, e in enumerate(evs) if e["kind"] == "knob")
    before, after = evs[:knob_at], evs[knob_at:]
    knobs = [e for e in evs if e["kind"] == "knob"]
    assert [(k["name"], k["old"], k["new"], k["source"]) for k in knobs] == [
        ("partition_workers", 1, 3, "operator"),
        ("gpu_channel_capacity", 1, 3, "operator"),
    ]
    assert summary.max_concurrent(before, {"synthesizing", "synthesized", "waiting_gpu"}) <= 2
    # after the change: more partitions synthesized and waiting than the old knobs allowed
    assert summary.max_concurrent(evs, {"synthesizing", "synthesized", "waiting_gpu"}) > 2
    assert summary.max_concurrent(evs, {"waiting_gpu"}) > 1
    assert summary.bound_excess(evs, 3, 3, 1) <= 0
    assert all(e["verified"] for e in evs if e["kind"] == "proof_done")
    del after


def intervals(evs: list[dict]) -> list[tuple[tuple[float, float], tuple[float, float]]]:
    """Per partition: (wrapper interval, dealloc interval), from stage events and timers."""
    out = []
    for r in summary.partitions(evs).values():
        g = r.first("gpu")
        d = r.interval("deallocating")
        assert g is not None and d is not None
        out.append(((g, g + r.ms["gpu_wrapper"] / 1000.0), d))
    return out


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_dealloc_intervals(params, mode):
    evs = run_jobs(make_cfg(params, dealloc=mode), [Job(PRESET, 3)])
    c = assert_counters_add_up(evs, 3)
    assert c["dealloc_done"] == 3
    eps = 1e-9
    for (w0, w1), (d0, d1) in intervals(evs):
        if mode == "sync":
            assert w0 - eps <= d0 and d1 <= w1 + eps, ((w0, w1), (d0, d1))
        else:
            assert d0 >= w1 - eps, ((w0, w1), (d0, d1))
    first = [e for e in evs if e["kind"] == "sample"][0]
    last = [e for e in evs if e["kind"] == "sample"][-1]
    assert first["shm_bytes"] == last["shm_bytes"] == 0  # memory back to its baseline
    # The wrapper's layers: dispatch + prover host + wait for the turn (~0: parallel calls) + call
    # + return (+ dealloc when sync). The prover stamps dispatch's end and return's start with
    # its own clock; a clock that did not agree with the orchestrator's would push one of the two
    # below zero (clamped to 0 here), and a missing layer would break the sum.
    for r in summary.partitions(evs).values():
        m = r.ms
        parts = m["gpu_dispatch"] + m["gpu_host"] + m["gpu_wait"] + m["gpu_call"] + m["gpu_return"]
        parts += m["dealloc"] if mode == "sync" else 0.0
        assert all(m[k] > 0 for k in ("gpu_dispatch", "gpu_host", "gpu_return")), m
        assert abs(parts - m["gpu_wrapper"]) < 0.5, (parts, m["gpu_wrapper"])


def _mapped_segments(pids: list[int], prefix: str) -> list[str]:
    out = []
    for pid in pids:
        try:
            with open(f"/proc/{pid}/maps") as f:
                out += [line.split()[-2] if line.endswith("(deleted)\n") else line.split()[-1]
                        for line in f if prefix in line]
        except OSError:
            pass
    return out


def test_workers_keep_no_mapping_of_finished_partitions(params):
    """A segment the orchestrator unlinked is only freed once no process maps it. The prover's
    finalize half once kept z mapped through a stray reference, so every partition left its
    witness in memory for the prover's lifetime."""
    eng = Engine(make_cfg(params))
    eng.start()
    try:
        eng.submit(Job(PRESET, 3))
        assert eng.wait_idle(WAIT)
        pids = list(eng.worker_pids().values())
        deadline = time.monotonic() + 10
        while (left := _mapped_segments(pids, prefix_for(os.getpid()))) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert left == []
    finally:
        eng.stop()


def _kill_on_first(
    cfg: EngineConfig, stage: str, role: str, partitions: int, progress=None
) -> list[dict]:
    eng = Engine(cfg, progress=progress)
    q = eng.subscribe()
    eng.start()
    evs: list[dict] = []
    killed = None
    try:
        eng.submit(Job(PRESET, partitions))
        while killed is None:
            e = q.get(timeout=WAIT)
            evs.append(e)
            if e["kind"] == "stage" and e["stage"] == stage:
                pids = eng.worker_pids()
                killed = pids[e["worker"].split("/")[0]]
                os.kill(killed, signal.SIGKILL)
        assert eng.wait_idle(WAIT)
    finally:
        eng.stop()
    evs += drain(q)
    assert_clean(eng, evs)
    assert not os.path.exists(f"/proc/{killed}") or _zombie(killed)
    return evs


@pytest.mark.parametrize("stage, role", [("gpu", "prover"), ("synthesizing", "synth")])
def test_worker_sigkill_loses_no_proof(params, stage, role):
    lines: list[str] = []
    evs = _kill_on_first(make_cfg(params), stage, role, 3, progress=lines.append)
    c = assert_counters_add_up(evs, 3)
    assert c["worker_deaths"] >= 1
    assert c["stage_done"] == 3 and c["stage_failed"] == 0
    done = [e for e in evs if e["kind"] == "proof_done"]
    assert len(done) == 1 and done[0]["verified"]
    errors = [e for e in evs if e["kind"] == "error"]
    assert any("signal 9" in e["message"] for e in errors)
    print(f"retries={c['retries']} deaths={c['worker_deaths']}")
    if role == "prover":
        # the proof in flight was retried on a new prover process
        assert c["retries"] >= 1
        assert any(e.get("reason", "").startswith("retry") for e in evs if e["kind"] == "stage")
        # the restarted prover loaded the job's key again before its slot took work
        assert sum(line.startswith("cpu0: proving key for chain-1024") for line in lines) == 2


def test_corrupted_proof_is_reported_unverified(params):
    evs = run_jobs(make_cfg(params), [Job(PRESET, 2), Job(PRESET, 1)],
                   faults=Faults(corrupt_proof={(1, 1)}))
    done = {e["job"]: e for e in evs if e["kind"] == "proof_done"}
    assert done[1]["verified"] is False
    assert done[2]["verified"] is True
    c = summary.final_counters(evs)
    assert c["proofs_failed"] == 1 and c["proofs_verified"] == 1
    table = summary.render_table(evs)
    assert "NO" in table


def test_stop_without_drain_cancels_and_cleans(params):
    eng = Engine(make_cfg(params))
    q = eng.subscribe()
    eng.start()
    eng.submit(Job(PRESET, 8))
    evs = []
    while True:
        e = q.get(timeout=WAIT)
        evs.append(e)
        if e["kind"] == "stage" and e["stage"] == "gpu":
            break
    eng.stop(drain=False)
    evs += drain(q)
    assert_clean(eng, evs)
    c = assert_counters_add_up(evs, 8)
    # cancelled is not failed: every partition that will not be proven says cancelled, with
    # the reason, and the job (not proven) gets no proof_done at all
    assert c["stage_cancelled"] >= 1 and c["stage_failed"] == 0
    assert c["stage_cancelled"] + c["stage_done"] == 8
    cancelled = [e for e in evs if e["kind"] == "stage" and e["stage"] == "cancelled"]
    assert all(e["reason"] == "engine stopped without draining" for e in cancelled)
    assert [e for e in evs if e["kind"] == "proof_done"] == []
    assert c["partitions_cancelled"] == len(cancelled) and c["jobs_cancelled"] == 1
    with pytest.raises(EngineError, match="not stopping"):
        eng.submit(Job(PRESET, 1))


def test_pause_holds_admission(params):
    eng = Engine(make_cfg(params))
    q = eng.subscribe()
    eng.start()
    try:
        eng.pause()
        eng.submit(Job(PRESET, 2))
        assert not eng.wait_idle(1.0)
        evs = drain(q)
        assert summary.max_concurrent(evs, {"synthesizing"}) == 0
        eng.resume()
        assert eng.wait_idle(WAIT)
    finally:
        eng.stop()
    evs += drain(q)
    knobs = [(e["name"], e["new"]) for e in evs if e["kind"] == "knob"]
    assert knobs == [("paused", True), ("paused", False)]
    assert_counters_add_up(evs, 2)


def test_porep_preset_runs_through_the_engine(params):
    evs = run_jobs(make_cfg(params), [Job("tiny", 2, seed=5)])
    assert_counters_add_up(evs, 2)
    sub = next(e for e in evs if e["kind"] == "job_submitted")
    assert sub["preset"] == "tiny" and sub["constraints"] == resolve("tiny").constraints
    done = [e for e in evs if e["kind"] == "proof_done"]
    assert len(done) == 1 and done[0]["verified"]


def test_unknown_preset_is_refused(params):
    from engine.pipeline.circuits import PresetError

    eng = Engine(make_cfg(params))
    eng.start()
    try:
        with pytest.raises(PresetError, match="unknown preset 'nope'"):
            eng.submit(Job("nope", 1))
        with pytest.raises(PresetError):
            eng.submit(Job("chain-0", 1))
    finally:
        eng.stop()


def test_knob_values_are_checked(params):
    per = resolve(PRESET).partition_bytes()
    eng = Engine(make_cfg(params))
    q = eng.subscribe()
    eng.start()
    try:
        eng.pause()
        eng.submit(Job(PRESET, 1))
        with pytest.raises(ValueError, match="smaller than one queued partition"):
            eng.set_knob("memory_budget", per - 1)
        with pytest.raises(ValueError):
            eng.set_knob("partition_workers", 0)
        with pytest.raises(ValueError, match="unknown knob"):
            eng.set_knob("dealloc", "sync")
        eng.set_knob("memory_budget", "1GiB")
        eng.resume()
        assert eng.wait_idle(WAIT)
    finally:
        eng.stop()
    knobs = [(e["name"], e["new"]) for e in drain(q) if e["kind"] == "knob"]
    assert ("memory_budget", 2**30) in knobs and len(knobs) == 3


def test_key_load_happens_before_the_first_wrapper(params):
    """A slow key load (2 s, injected in the prover) is done before any partition reaches the
    GPU, never inside a GPU wrapper. Before the fix the first prove task loaded the key itself,
    inside the first partition's wrapper (and no load line was reported)."""
    delay = 2.0
    lines: list[tuple[float, str]] = []
    eng = engine(make_cfg(params), Faults(key_load_delay_s=delay))
    eng.progress = lambda line: lines.append((eng.clock.now(), line))
    q = eng.subscribe()
    eng.start()
    try:
        eng.submit(Job(PRESET, 2))
        assert eng.wait_idle(WAIT)
    finally:
        eng.stop()
    evs = drain(q)
    assert_clean(eng, evs)
    loaded = [(t, line) for t, line in lines if line.startswith("cpu0: proving key for")]
    assert len(loaded) == 1 and "memory-mapped in" in loaded[0][1]
    assert float(loaded[0][1].rsplit(" in ", 1)[1].split()[0]) >= delay - 0.05
    first_gpu = min(e["t"] for e in evs if e["kind"] == "stage" and e["stage"] == "gpu")
    assert loaded[0][0] <= first_gpu
    timings = [e for e in evs if e["kind"] == "partition_timings"]
    assert len(timings) == 2
    # the key load would sit in the wrapper outside the prover's call (gpu_host: the slot loads
    # a missing key before it calls the prover); the call itself is kernel time, which on a
    # loaded 2-core machine can pass a second for the first partition's CPU NTT alone
    outside = [e["ms"]["gpu_wrapper"] - e["ms"]["gpu_call"] for e in timings]
    assert all(ms < delay * 1000 / 2 for ms in outside), [e["ms"] for e in timings]


def test_key_load_failure_fails_the_job_with_the_reason(params):
    eng = engine(make_cfg(params), Faults(key_load_fail={"cpu0"}))
    q = eng.subscribe()
    eng.start()
    try:
        eng.submit(Job(PRESET, 3))
        assert eng.wait_idle(60), "a failed key load must not hang the job"
    finally:
        eng.stop()
    evs = drain(q)
    assert_clean(eng, evs)
    c = assert_counters_add_up(evs, 3)
    assert c["stage_failed"] == 3 and c["stage_done"] == 0
    reasons = {e["reason"] for e in evs if e["kind"] == "stage" and e["stage"] == "failed"}
    assert reasons == {
        "cpu0: proving key for chain-1024 could not be loaded: "
        f"RuntimeError: {INJECTED_KEY_FAILURE}"
    }
    assert not any(e["kind"] == "stage" and e["stage"] == "gpu" for e in evs)
    done = [e for e in evs if e["kind"] == "proof_done"]
    assert len(done) == 1 and done[0]["verified"] is False
