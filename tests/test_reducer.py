"""The dashboard reducer on recorded event streams, without a terminal."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.replay import ReplayController
from app.session_io import SessionError, load_session, parse_session
from app.state import DashboardState, apply, fmt_bytes, reduce
from engine.stream import schema as E

FIXTURE = Path(__file__).parent / "data" / "session_fixture.jsonl"


@pytest.fixture(scope="module")
def session():
    return load_session(FIXTURE)


def test_reducer_has_no_textual_import():
    src = (Path(__file__).parents[1] / "app" / "state.py").read_text()
    assert "textual" not in src
    assert "textual" not in (Path(__file__).parents[1] / "app" / "replay.py").read_text()


def test_fixture_final_state(session):
    s = reduce(session.events)
    assert s.started and s.engine_state == "running"
    assert len(s.jobs) == 8
    assert s.proofs_done == 8
    assert s.proofs_bad == 1
    assert s.jobs[4].verified is False and s.jobs[4].status == "bad"
    assert all(j.verified for k, j in s.jobs.items() if k != 4)
    assert s.partitions_done == 32 and s.partitions_failed == 0
    counts = s.stage_counts()
    assert counts["done"] == 32 and sum(counts.values()) == 32
    assert s.knobs["partition_workers"] == 3  # raised from 2 by the operator
    assert s.knobs["gpu_channel_capacity"] == 1
    assert s.memory_budget == 8 * 2**30
    assert s.backend == "cuda"
    assert s.errors == 1
    assert s.jobs[2].parts[1].attempts == 2  # the retried partition
    assert s.gpus[0].name.startswith("NVIDIA H200")


def test_peak_memory_is_max_of_sampled_totals(session):
    s = reduce(session.events)
    totals = [
        sum(p["rss_anon"] for p in e["processes"]) + e["shm_bytes"]
        for e in session.events
        if e["kind"] == "sample"
    ]
    assert s.mem_peak == max(totals)
    assert s.mem_total == totals[-1]


def test_max_holding_is_exact_from_stage_events(session):
    """The exact maximum of partitions holding buffers, recomputed independently."""
    stage_of: dict[tuple, str] = {}
    best = 0
    holding = {"synthesizing", "synthesized", "waiting_gpu", "gpu", "deallocating"}
    for e in session.events:
        if e["kind"] == "stage":
            stage_of[(e["job"], e["partition"])] = e["stage"]
            best = max(best, sum(1 for v in stage_of.values() if v in holding))
    assert reduce(session.events).max_holding == best
    # design.md's bound: partition_workers (3 at most) + capacity (1) + GPU slots (2) + dealloc
    assert best <= 3 + 1 + 2 + 1


def test_mean_timers_and_totals(session):
    s = reduce(session.events)
    j = s.jobs[1]
    walls = [p.ms["gpu_wrapper"] for p in j.parts.values()]
    assert j.mean_ms("gpu_wrapper") == pytest.approx(sum(walls) / len(walls))
    for p in j.parts.values():
        # layered timers nest: wrapper >= call >= kernels
        assert p.ms["gpu_wrapper"] >= p.ms["gpu_call"] >= p.kernel_ms
    totals = [e["total_ms"] for e in session.events if e["kind"] == "proof_done"]
    assert s.mean_total_ms() == pytest.approx(sum(totals) / len(totals))
    assert s.overall_throughput() > 0


def test_prefix_states_are_consistent(session):
    """At every prefix the per-stage counts add up to the partitions submitted."""
    s = DashboardState()
    for e in session.events:
        apply(s, e)
        counts = s.stage_counts()
        assert all(v >= 0 for v in counts.values())
        assert sum(counts.values()) == sum(j.partitions for j in s.jobs.values())
        assert s.holding() <= s.max_holding


PIPELINE = ("queued", "synthesizing", "synthesized", "waiting_gpu", "gpu", "deallocating",
            "finalizing", "done")


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(PIPELINE), min_size=1, max_size=12))
def test_a_running_job_reads_what_it_is_doing(stages):
    """A job whose partitions have started reads its most advanced stage in flight (3/10 done,
    one on the GPU and the rest queued is "gpu", not "queued"); queued only when none is in
    flight; the detail's proof line says the same and the proofs table has a word for it."""
    from app.widgets.gantt import kernel_split
    from app.widgets.proofrows import STAGE_WORDS
    from app.widgets.render import Palette

    n = len(stages)
    evs = [E.job_submitted(0.0, 1, "porep-32g", n, 100)]
    evs += [E.stage(0.0, 1, i, "queued", "scheduler") for i in range(n)]
    evs += [E.stage(1.0 + i, 1, i, s, "w") for i, s in enumerate(stages) if s != "queued"]
    job = reduce(evs).jobs[1]
    flying = [s for s in stages if s not in ("queued", "done")]
    if flying:
        want = PIPELINE[max(PIPELINE.index(s) for s in flying)]
    else:
        # every partition done but no proof_done yet: not "done", which says verified
        want = "finalizing" if all(s == "done" for s in stages) else "queued"
    assert job.status == want
    assert job.done_partitions == stages.count("done")
    assert f"proof {want}" in kernel_split(job, Palette()).plain
    assert want in STAGE_WORDS
    if want == "finalizing":  # and done once the proof is reported verified
        evs.append(E.proof_done(99.0, 1, "00" * 192 * n, True, 1.0))
        assert reduce(evs).jobs[1].status == "done"


def test_pause_resume_and_knob_log():
    s = reduce(
        [
            E.session_start(0.0, {"partition_workers": 2, "backend": "cpu", "memory_budget": 0},
                            {"cpus": 2}, [], "2026-01-01T00:00:00Z"),
            E.knob(1.0, "paused", False, True, "operator"),
        ]
    )
    assert s.engine_state == "paused"
    apply(s, E.knob(2.0, "paused", True, False, "operator"))
    apply(s, E.knob(3.0, "partition_workers", 2, 5, "operator"))
    assert s.engine_state == "running"
    assert s.knobs["partition_workers"] == 5
    texts = [e.text for e in s.log]
    assert any("partition_workers: 2 → 5" in t for t in texts)
    assert any("paused" in t for t in texts) and any("resumed" in t for t in texts)
    assert s.backend == "cpu" and not s.gpus  # no GPU: the panel shows N/A
    assert s.memory_budget is None  # 0 means unlimited


def test_failed_partition_and_na_gpu_fields():
    s = reduce(
        [
            E.session_start(0.0, {}, {"cpus": 2}, [{"index": 0, "name": "G", "memory_total": None}], "x"),
            E.job_submitted(0.1, 1, "tiny", 2, 1024),
            E.stage(0.2, 1, 0, "synthesizing", "synth-0"),
            E.stage(0.3, 1, 0, "failed", "synth-0", "boom"),
            E.sample(0.4, [{"pid": 1, "role": "console", "rss_anon": 100}], 50, {}, [
                {"index": 0, "util": None, "mem_used": None, "mem_total": None,
                 "power_w": None, "temp_c": None, "sm_clock_mhz": None}]),
        ]
    )
    assert s.jobs[1].status == "failed"
    assert s.partitions_failed == 1
    assert s.jobs[1].parts[0].reason == "boom"
    assert s.gpus[0].util is None and s.gpus[0].power_w is None
    assert s.mem_total == 150


def test_malformed_and_unknown_events_are_logged_not_raised():
    s = reduce([{"t": 0.0, "kind": "bogus"}, {"t": 0.1, "kind": "stage", "job": 9}])
    levels = [e.level for e in s.log]
    assert levels == ["warn", "warn"]
    assert s.events == 2


def test_replay_ends_in_the_same_state(session):
    direct = reduce(session.events).final_counters()
    rc = ReplayController(session.events)
    rc.speed = 64
    rc.toggle()
    while rc.playing:
        rc.advance(0.05)
    assert rc.at_end
    assert rc.state.final_counters() == direct


def test_replay_step_and_seek(session):
    rc = ReplayController(session.events)
    rc.step(10)
    assert rc.pos == 10 and rc.state.events == 10
    rc.step(-3)
    assert rc.pos == 7 and rc.state.events == 7
    rc.seek(2.5)
    expect = reduce([e for e in session.events if e["t"] <= 2.5]).final_counters()
    assert rc.state.final_counters() == expect
    rc.seek(1.0)  # backwards: rebuilt, not undone
    assert rc.state.final_counters() == reduce([e for e in session.events if e["t"] <= 1.0]).final_counters()
    assert rc.faster() == 2 and rc.slower() == 1 and rc.slower() == 1


HEADER = '{"format": "sealtop-session", "version": 1, "schema": 1, "created": "x"}\n'


@pytest.mark.parametrize(
    "text",
    [
        "",
        "not json\n",
        '{"format": "sealtop-session", "version": 99}\n',
        HEADER,
        HEADER + '{"t": 0, "kind": "sample", "processes": [], "shm_bytes": 0, "counters": {}, "gpus": []}\n',
        HEADER + "[1,2]\n",
        HEADER + '{"t": 0, "kind": "bogus"}\n',
    ],
)
def test_bad_session_text_gets_a_one_line_message(text):
    with pytest.raises(SessionError) as info:
        parse_session(text, "bad.jsonl")
    msg = str(info.value)
    assert msg.startswith("bad.jsonl") and "\n" not in msg


def test_missing_binary_and_directory_files(tmp_path):
    for p in (tmp_path / "nope.jsonl", tmp_path):
        with pytest.raises(SessionError):
            load_session(p)
    b = tmp_path / "bin.jsonl"
    b.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(SessionError):
        load_session(b)


def test_fmt_bytes():
    assert fmt_bytes(None) == "N/A"
    assert fmt_bytes(512) == "512 B"
    assert fmt_bytes(3 * 2**30) == "3.00 GiB"
    assert fmt_bytes(300 * 2**20) == "300 MiB"


def test_reducer_agrees_with_engine_summary(session):
    """The dashboard and the headless summary count the same things from the same events."""
    from engine.stream import summary

    s = reduce(session.events)
    assert s.stage_counts() == summary.stage_counts(session.events)
    assert s.max_holding == summary.max_concurrent(session.events, summary.HOLDING)
    assert s.mem_peak == summary.peak_memory(session.events)[0]


def test_detail_kernel_line_shows_the_wrapper_outside_the_call_only_when_recorded() -> None:
    from app.state import JobState, PartitionState
    from app.widgets.gantt import kernel_split
    from app.widgets.render import Palette

    job = JobState(job=1, preset="tiny", partitions=2, constraints=10, submitted=0.0)
    job.parts[0] = PartitionState(1, 0, 10, ms={"ntt": 4.0, "gpu_dispatch": 2.0, "gpu_host": 3.0, "gpu_return": 5.0})
    job.parts[1] = PartitionState(1, 1, 10, ms={"ntt": 6.0, "gpu_dispatch": 4.0, "gpu_host": 1.0, "gpu_return": 7.0})
    text = kernel_split(job, Palette()).plain
    assert "wrapper outside the call" in text
    assert "dispatch 3.0" in text and "prover host 2.0" in text and "return 6.0" in text
    old = JobState(job=2, preset="tiny", partitions=1, constraints=10, submitted=0.0)
    old.parts[0] = PartitionState(2, 0, 10, ms={"ntt": 4.0})
    assert "wrapper outside the call" not in kernel_split(old, Palette()).plain


def test_cancelled_jobs_are_neither_failed_nor_in_flight():
    from app.widgets.proofrows import matches, status_cell
    from app.widgets.render import Palette

    n = random.randint(2, 6)
    evs = [E.session_start(0.0, {}, {"cpus": 2}, [], "x")]
    for j in range(1, n + 1):
        evs.append(E.job_submitted(0.1 * j, j, "tiny", 2, 64))
        for i in range(2):
            evs.append(E.stage(0.1 * j, j, i, "queued", "scheduler"))
    evs.append(E.stage(1.0, 1, 0, "synthesizing", "s0"))
    evs.append(E.stage(1.1, 1, 0, "failed", "s0", "worker died"))
    for j in range(1, n + 1):  # a stop: everything not terminal is cancelled
        for i in range(2):
            if (j, i) != (1, 0):
                evs.append(E.stage(2.0, j, i, "cancelled", "scheduler", "stopped"))
    s = reduce(evs)
    assert s.proofs_cancelled == n - 1 and s.proofs_failed == 1 and s.proofs_bad == 0
    assert s.partitions_cancelled == 2 * n - 1 and s.partitions_failed == 1
    assert s.jobs[1].outcome == "failed" and s.jobs[1].status == "failed"
    assert all(s.jobs[j].status == "cancelled" for j in range(2, n + 1))
    assert not s.active and s.stage_counts()["cancelled"] == 2 * n - 1
    cancelled_lines = [e.text for e in s.log if "cancelled, never proven" in e.text]
    assert len(cancelled_lines) == n - 1  # one line per job, not per partition
    assert not any("FAILED verification" in e.text for e in s.log)
    assert status_cell(s.jobs[2], Palette()).plain == "⊘"
    assert matches(s.jobs[2], "cancel") and not matches(s.jobs[1], "cancel")


@settings(max_examples=100, deadline=None)
@given(st.floats(0.0, 1e4, allow_nan=False), st.floats(0.0, 1e4, allow_nan=False),
       st.sampled_from(["", "s", " s"]))
def test_seek_requests_name_a_time_or_are_refused(duration, t, unit):
    from app.replay import seek_target

    assert seek_target(f" {t!r}{unit} ", duration) == min(t, duration)
    pct = t / 100.0
    assert seek_target(f"{pct!r}%", duration) == pytest.approx(min(duration * pct / 100.0, duration))
    assert seek_target("END", duration) == seek_target("$", duration) == duration
    assert seek_target("start", duration) == seek_target("0", duration) == 0.0
    for bad in ("-1", "nan", "inf", "soon", "%", "12..5"):
        with pytest.raises(ValueError):
            seek_target(bad, duration)
