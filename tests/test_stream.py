"""engine/stream: the tap (slow and failing sinks), the fold's outcomes, the recorder under a
full disk and a kill, and the reader's bounds."""

from __future__ import annotations

import errno
import gzip
import io
import json
import queue
import random
import threading
import time
import zlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.stream import schema as E
from engine.stream.fold import Fold, fold
from engine.stream.reader import SessionError, parse_recording, read_recording
from engine.stream.recorder import RecordingError, SessionRecorder, check_target, dumps, header
from engine.stream.summary import final_counters, render_all, render_table, run_summary
from engine.stream.tap import Tap


def _events(n: int) -> list[dict]:
    return [E.error(float(i), "w", f"e{i}") for i in range(n)]


# ---- the tap ------------------------------------------------------------------------------------


def test_a_slow_sink_holds_up_neither_the_engine_nor_the_recorder():
    src: queue.Queue = queue.Queue()
    recorded: list[dict] = []
    release = threading.Event()
    slow_seen: list[dict] = []

    def slow(batch: list[dict]) -> None:
        release.wait(30)  # stuck until the test lets it go
        slow_seen.extend(batch)

    tap = Tap(src)
    rec_stats = tap.add("recorder", recorded.extend, essential=True)
    slow_stats = tap.add("slow", slow, capacity=8)
    tap.start()
    n = random.randint(500, 1500)
    evs = _events(n)
    t0 = time.perf_counter()
    for e in evs:
        src.put(e)  # what Engine._emit does
    put_s = time.perf_counter() - t0
    deadline = time.monotonic() + 10
    while len(recorded) < n and time.monotonic() < deadline:
        time.sleep(0.01)
    assert recorded == evs  # every event, in order, while the slow sink is still stuck
    assert put_s < 1.0
    release.set()
    tap.close(timeout=10)
    assert rec_stats.dropped == 0 and rec_stats.delivered == n
    assert slow_stats.delivered + slow_stats.dropped == n and slow_stats.dropped > 0
    assert slow_seen == [e for e in evs if e in slow_seen]  # what it got, it got in order


def test_a_failing_sink_is_stopped_and_the_others_go_on():
    src: queue.Queue = queue.Queue()
    good: list[dict] = []
    calls = []

    def bad(batch: list[dict]) -> None:
        raise OSError(errno.EIO, "Input/output error")

    tap = Tap(src, on_error=lambda s, exc: calls.append((s.name, s.error)))
    tap.add("good", good.extend, essential=True)
    bad_stats = tap.add("bad", bad, essential=True)
    tap.start()
    evs = _events(50)
    for e in evs:
        src.put(e)
    tap.close(timeout=10)
    assert good == evs
    assert calls == [("bad", "[Errno 5] Input/output error")]  # heard once
    assert bad_stats.error and bad_stats.delivered == 0 and bad_stats.dropped == 50


def test_published_lines_take_the_stream_time_and_keep_its_order():
    src: queue.Queue = queue.Queue()
    got: list[dict] = []
    tap = Tap(src)
    tap.add("all", got.extend, essential=True)
    tap.start()
    src.put(E.error(1.0, "a", "x"))
    src.put(E.error(2.5, "a", "y"))
    tap.publish(lambda t: E.console(t, "info", "operator did something"))
    src.put(E.error(3.0, "a", "z"))
    src.put(None)  # an end mark some producers put: not an event
    tap.close(timeout=10)
    assert [e["kind"] for e in got] == ["error", "error", "console", "error"]
    assert got[2]["t"] == 2.5 and got[2]["text"] == "operator did something"
    ts = [e["t"] for e in got]
    assert ts == sorted(ts)


# ---- the fold: outcomes apart -----------------------------------------------------------------


def _job_stream(plan: dict[int, str]) -> list[dict]:
    """Jobs of 3 partitions ending as planned: verified, failed, badproof, cancelled, running."""
    evs = [E.session_start(0.0, {}, {"cpus": 2}, [], "x")]
    t = 0.0
    for jid, how in plan.items():
        t += 0.1
        evs.append(E.job_submitted(t, jid, "p", 3, 10))
        for i in range(3):
            evs.append(E.stage(t, jid, i, "queued", "scheduler"))
        if how == "cancelled":
            evs.append(E.stage(t + 0.01, jid, 0, "synthesizing", "s0"))
            evs.append(E.stage(t + 0.02, jid, 0, "done", "f"))  # one done, the rest stopped
            for i in (1, 2):
                evs.append(E.stage(t + 0.03, jid, i, "cancelled", "scheduler", "stopped"))
            continue
        if how == "running":
            evs.append(E.stage(t + 0.01, jid, 1, "synthesizing", "s0"))
            evs.append(E.stage(t + 0.02, jid, 2, "gpu", "gpu0/0"))
            continue
        for i in range(3):
            end = "failed" if (how == "failed" and i == 1) else "done"
            evs.append(E.stage(t + 0.01, jid, i, "synthesizing", "s0"))
            evs.append(E.stage(t + 0.02, jid, i, end, "s0", "worker died" if end == "failed" else None))
        evs.append(E.proof_done(t + 0.05, jid, "00" * 192, how == "verified", 50.0))
    return evs


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.dictionaries(st.integers(1, 200),
                       st.sampled_from(["verified", "failed", "badproof", "cancelled", "running"]),
                       min_size=1, max_size=12))
def test_outcomes_are_kept_apart(plan):
    evs = _job_stream(plan)
    f = fold(evs)
    want = {"verified": "verified", "failed": "failed", "badproof": "failed",
            "cancelled": "cancelled", "running": "running"}
    assert {j: r.outcome for j, r in f.jobs.items()} == {j: want[h] for j, h in plan.items()}
    for j, how in plan.items():
        r = f.jobs[j]
        if how == "failed":
            assert r.reason == "p1 worker died" and r.status == "failed"
        elif how == "badproof":
            assert r.reason == "failed verification" and r.status == "bad"
        elif how == "cancelled":
            assert r.reason is None and r.status == "cancelled"
        elif how == "running":
            assert r.status == "gpu"  # what it does: its most advanced partition in flight
    n = {h: sum(1 for v in plan.values() if v == h) for h in want}
    assert f.proofs_bad == n["badproof"]
    assert f.proofs_cancelled == n["cancelled"]
    assert f.partitions_cancelled == 2 * n["cancelled"]
    assert f.partitions_failed == n["failed"]
    c = final_counters(evs)
    assert c["proofs_cancelled"] == n["cancelled"] and c["stage_cancelled"] == 2 * n["cancelled"]
    s = run_summary(evs)
    assert s.jobs_cancelled == n["cancelled"]
    assert s.jobs_failed == n["failed"] + n["badproof"]
    assert s.jobs_failed_verification == n["badproof"]
    assert s.jobs_verified == n["verified"]
    table = render_table(evs)
    assert table.count(" cancelled") == 2 * n["cancelled"]
    assert table.count(" failed") == n["failed"]
    out = render_all(evs)
    assert ("cancelled, never proven" in out) == bool(n["cancelled"])


def test_a_retry_takes_a_failed_partition_back():
    evs = [E.job_submitted(0.0, 1, "p", 1, 10), E.stage(0.1, 1, 0, "synthesizing", "s0"),
           E.stage(0.2, 1, 0, "failed", "s0", "died")]
    f = fold(evs)
    assert f.jobs[1].outcome == "failed" and f.partitions_failed == 1
    f.apply(E.stage(0.3, 1, 0, "synthesizing", "s1"))
    assert f.jobs[1].outcome == "running" and f.partitions_failed == 0
    assert f.jobs[1].parts[0].attempts == 2 and f.jobs[1].parts[0].reason is None


def test_the_fold_refuses_what_does_not_fit():
    f = Fold()
    with pytest.raises(ValueError):
        f.apply(E.stage(0.0, 7, 0, "queued", "s"))  # no such job
    assert fold([E.stage(0.0, 7, 0, "queued", "s")]).jobs == {}  # summaries skip it


def _paths(rng: random.Random, n: int, synthesized: bool) -> list[list[tuple[float, str]]]:
    """Per partition, its stages with random times (a session with or without schema 4's
    synthesized stage)."""
    names = ["synthesizing"] + (["synthesized"] if synthesized else []) + [
        "waiting_gpu", "gpu", "deallocating", "finalizing", "done"]
    out = []
    for _ in range(n):
        t = 1.0 + rng.uniform(0, 5)
        path = []
        for s in names[: rng.randint(1, len(names))]:
            path.append((t, s))
            t += rng.uniform(0.01, 30.0)
        out.append(path)
    return out


def test_synthesized_holds_a_partition_apart_from_synthesis():
    """Schema 4: synthesis ends at the worker's reply; the partition is `synthesized` (still
    holding its buffers) until channel entry; every partition weighs the job's bytes."""
    rng = random.Random()
    n, nbytes = rng.randint(2, 12), rng.randint(1, 2**36)
    paths = _paths(rng, n, synthesized=True)
    evs = [E.job_submitted(0.5, 1, "p", n, rng.randint(1, 2**27), nbytes)]
    assert E.check_event(evs[0]) is None and evs[0]["bytes"] == nbytes
    evs += [E.stage(0.5, 1, i, "queued", "scheduler") for i in range(n)]
    evs += sorted((E.stage(t, 1, i, s, "w") for i, path in enumerate(paths) for t, s in path),
                  key=lambda e: e["t"])
    f = Fold()
    for e in evs:
        f.apply(e)
        now = {i: max((s for t, s in path if t <= e["t"]), key=E.STAGES.index, default="queued")
               for i, path in enumerate(paths)} if e["t"] > 0.5 else {i: "queued" for i in range(n)}
        for stage in E.STAGES:
            assert f.counts[stage] == list(now.values()).count(stage)
        holding = [i for i, st_ in now.items() if st_ in ("synthesizing", "synthesized",
                                                             "waiting_gpu", "gpu", "deallocating")]
        assert f.holding() == len(holding)
        assert all(f.jobs[1].footprint(f.jobs[1].parts[i]) == nbytes for i in range(n))
    p = f.jobs[1].parts
    for i, path in enumerate(paths):
        assert p[i].entered == {"queued": 0.5, **{s: t for t, s in path}}
    bad = E.job_submitted(0.0, 2, "p", 1, 10)
    assert E.check_event({**bad, "bytes": -1}) is not None
    assert E.check_event({**bad, "bytes": "9"}) is not None


def test_a_session_before_schema_4_gets_what_its_timers_say():
    """No synthesized stage and no job bytes: a partition reads synthesizing until channel
    entry and weighs the a, b, c estimate, until timings arrive: then its synthesis ends at
    its start plus the worker's witness and eval, and its job's partitions weigh what it held."""
    rng = random.Random()
    n, constraints, held = rng.randint(2, 10), rng.randint(1, 2**27), rng.randint(1, 2**36)
    f = Fold()
    f.apply(E.job_submitted(0.0, 1, "p", n, constraints))
    starts = [rng.uniform(0.1, 5.0) for _ in range(n)]
    for i, t in enumerate(starts):
        f.apply(E.stage(t, 1, i, "synthesizing", "s"))
    assert all(f.jobs[1].footprint(q) == constraints * 96 for q in f.jobs[1].parts.values())
    w, ev_ms, wait = rng.uniform(1, 20000), rng.uniform(1, 20000), rng.uniform(1, 60)
    t_wait = starts[0] + (w + ev_ms) / 1000.0 + wait
    f.apply(E.stage(t_wait, 1, 0, "waiting_gpu", "scheduler"))
    assert f.jobs[1].parts[0].stage == "waiting_gpu" and f.counts["synthesized"] == 0
    f.apply(E.stage(t_wait + 1, 1, 0, "done", "f"))
    f.apply(E.partition_timings(t_wait + 1, 1, 0, {"witness": w, "eval": ev_ms}, held))
    p0 = f.jobs[1].parts[0]
    assert p0.entered["synthesized"] == pytest.approx(starts[0] + (w + ev_ms) / 1000.0)
    assert all(f.jobs[1].footprint(q) == held for q in f.jobs[1].parts.values())  # one circuit, one size
    # timers that do not fit the stages (synthesis past channel entry) derive nothing
    f.apply(E.stage(t_wait + 2, 1, 1, "waiting_gpu", "scheduler"))
    late = (t_wait + 3 - starts[1]) * 1000.0
    f.apply(E.partition_timings(t_wait + 3, 1, 1, {"witness": late, "eval": 1.0}, held))
    assert "synthesized" not in f.jobs[1].parts[1].entered


def test_the_32g_session_shows_the_key_wait_and_the_held_bytes():
    """The recorded porep-32g session (schema 3): p0-p3 synthesized in under 30 s and then
    waited for the device key until 77.5 s; at 90 s the four partitions in flight hold what the
    engine reported per partition (z included), not the a, b, c estimate."""
    from pathlib import Path

    path = Path(__file__).parents[1] / "docs" / "sessions" / "porep-32g-h200.jsonl.gz"
    evs = read_recording(path).events
    assert read_recording(path).header["schema"] == 3
    f = Fold()
    for e in evs:
        if e["t"] > 90.0:
            break
        f.apply(e)
    job = f.jobs[1]
    flying = [q for q in job.parts.values() if q.stage in E.HOLDING]
    timed = [e for e in evs if e["kind"] == "partition_timings" and e["t"] <= 90.0]
    assert len(flying) == 4 and {e["bytes_held"] for e in timed} == {16738153280}
    assert sum(job.footprint(q) for q in flying) == 4 * 16738153280 > 4 * job.constraints * 96
    assert job.status == "gpu" and job.done_partitions == 3  # not "queued" (p7-p9 are)
    assert "synthesized" not in job.parts[3].entered  # its timers are not in yet at 90 s
    whole = fold(evs).jobs[1]
    for q in (whole.parts[i] for i in range(4)):
        ms = next(e["ms"] for e in evs if e["kind"] == "partition_timings"
                  and e["partition"] == q.index)
        assert q.entered["synthesized"] == pytest.approx(
            q.entered["synthesizing"] + (ms["witness"] + ms["eval"]) / 1000.0)
        assert q.entered["synthesized"] < 35.0 < 77.0 < q.entered["waiting_gpu"]


def test_the_32g_serial_session_replays_with_its_turn_waits():
    """The recorded five-job porep-32g session with two slots taking turns at the GPU
    (docs/sessions/porep-32g-h200-5jobs.jsonl.gz): every proof verified, every partition's
    timings carry its wait for the turn, kept out of the slot's host time, and the wrapper's
    parts add up; the summary gives the steady pace the record's completions say."""
    from pathlib import Path

    path = Path(__file__).parents[1] / "docs" / "sessions" / "porep-32g-h200-5jobs.jsonl.gz"
    evs = read_recording(path).events
    start = next(e for e in evs if e["kind"] == "session_start")
    assert (start["config"]["gpu_slots_per_device"], start["config"]["gpu_calls"]) == (2, "serial")
    f = fold(evs)
    assert sorted(f.jobs) == [1, 2, 3, 4, 5] and all(j.done_t is not None for j in f.jobs.values())
    timed = [e["ms"] for e in evs if e["kind"] == "partition_timings"]
    assert len(timed) == 50
    for ms in timed:
        parts = ms["gpu_dispatch"] + ms["gpu_wait"] + ms["gpu_host"] + ms["gpu_call"] + ms["gpu_return"]
        assert parts == pytest.approx(ms["gpu_wrapper"], abs=2.0)
        assert ms["gpu_host"] < ms["gpu_call"]
    waits = sorted(ms["gpu_wait"] for ms in timed)
    assert waits[len(waits) // 2] > 500.0  # a slot mostly waits while the other's call runs
    s = run_summary(evs)
    done = sorted(j.done_t for j in f.jobs.values() if j.done_t is not None)
    assert s.steady_s_per_proof is not None
    assert 10 * s.steady_s_per_proof == pytest.approx((done[-1] - done[0]) / 4, rel=0.05)


def test_the_32g_lone_session_replays():
    """The recorded porep-32g session of the lone-job bench
    (docs/sessions/porep-32g-h200-7jobs.jsonl.gz: a warm-up job that makes the device key, five
    jobs at once, then one job alone): every proof verified, the lone job submitted only once
    the five are done, and the summary's steady pace the one the five jobs' completions give."""
    from pathlib import Path

    path = Path(__file__).parents[1] / "docs" / "sessions" / "porep-32g-h200-7jobs.jsonl.gz"
    evs = read_recording(path).events
    f = fold(evs)
    assert sorted(f.jobs) == list(range(1, 8))
    assert all(e["verified"] for e in evs if e["kind"] == "proof_done")
    assert sum(e["kind"] == "proof_done" for e in evs) == 7
    submitted = {e["job"]: e["t"] for e in evs if e["kind"] == "job_submitted"}
    five = sorted(f.jobs[j].done_t for j in range(2, 7))
    assert submitted[7] >= five[-1] and f.jobs[7].done_t > submitted[7]
    s = run_summary([e for e in evs if e.get("job") not in (1, 7)])
    assert s.steady_s_per_proof is not None
    assert 10 * s.steady_s_per_proof == pytest.approx((five[-1] - five[0]) / 4, rel=0.05)


# ---- the recorder -------------------------------------------------------------------------------


class FullDisk(io.RawIOBase):
    """A file that takes ``room`` bytes and then fails with ENOSPC (a short write first)."""

    def __init__(self, room: int) -> None:
        self.room = room
        self.data = bytearray()

    def writable(self) -> bool:
        return True

    def write(self, b) -> int:  # type: ignore[override]
        b = bytes(b)
        if self.room <= 0:
            raise OSError(errno.ENOSPC, "No space left on device")
        take = b[: self.room]
        self.data += take
        self.room -= len(take)
        return len(take)


def _sample_stream(n: int) -> list[dict]:
    evs = [E.session_start(0.0, {"partition_workers": 2}, {"cpus": 2}, [], "x"),
           E.job_submitted(0.1, 1, "p", n, 10)]
    for i in range(n):
        evs.append(E.stage(0.2 + i, 1, i, "queued", "scheduler"))
        evs.append(E.partition_timings(0.3 + i, 1, i, {"queue": 1.0 + i, "ntt": 2.5}, 4096))
    evs.append(E.console(n + 1.0, "info", "partition_workers 2 → 3 ✓"))
    evs.append(E.proof_done(n + 2.0, 1, "ab" * 192, True, 400.0))
    return evs


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.integers(0, 3000), st.booleans())
def test_a_full_disk_is_one_error_and_the_bytes_before_it_read_back(room, gz):
    evs = _sample_stream(12)
    disk = FullDisk(room)
    errors = []
    wrote = 0
    try:
        rec = SessionRecorder("full.jsonl" + (".gz" if gz else ""), file=disk)
    except RecordingError as exc:
        errors.append(str(exc))
        rec = None
    if rec is not None:
        for e in evs:
            try:
                rec.write(e)
                wrote += 1
            except RecordingError as exc:
                errors.append(str(exc))
        try:
            rec.close()
        except RecordingError as exc:
            errors.append(str(exc))
    if errors:
        assert all(m == errors[0] for m in errors)  # the same one line every time
        assert "\n" not in errors[0] and "No space left on device" in errors[0]
        assert errors[0].startswith("recording to full.jsonl")
    else:
        assert wrote == len(evs)
    # Whatever reached the disk is a readable prefix of the stream (or too little to be one).
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "s"
        p.write_bytes(bytes(disk.data))
        try:
            back = read_recording(p)
        except SessionError as exc:
            # only when not even the header (or the first gzip member) made it
            assert len(disk.data) <= len(dumps(header()).encode()) + 40, (len(disk.data), str(exc))
        else:
            assert back.events == evs[: len(back.events)]
            if not errors:
                assert back.events == evs and not back.warnings


def test_plain_lines_reach_the_file_as_they_are_written(tmp_path):
    path = tmp_path / "s.jsonl"
    rec = SessionRecorder(path)
    evs = _sample_stream(3)
    for i, e in enumerate(evs, 1):
        rec.write(e)
        assert read_recording(path).events == evs[:i]  # no buffer between the event and the file
    rec.close()


def test_gzip_flushes_every_second_and_on_every_proof(tmp_path):
    path = tmp_path / "s.jsonl.gz"
    now = [100.0]
    rec = SessionRecorder(path, clock=lambda: now[0])
    evs = _sample_stream(2)
    rec.write(evs[0])
    rec.write(evs[1])
    assert read_recording(path).events == []  # within the second: still in the member
    now[0] += 1.0
    rec.write(evs[2])
    assert read_recording(path).events == evs[:3]  # a second passed: flushed
    rec.write(evs[3])
    rec.tick()  # the tap's idle call
    assert read_recording(path).events == evs[:4]
    for e in evs[4:]:
        rec.write(e)
    assert read_recording(path).events == evs  # the proof_done flushed at once
    rec.close()
    assert gzip.decompress(path.read_bytes()).decode().count("\n") == len(evs) + 1


SHARE = 1 << 16  # more steps than the recording has bytes past its header


@settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_a_killed_recording_leaves_a_readable_prefix(tmp_path_factory, data):
    """Cut the file at any byte past the header (what a SIGKILL between writes or inside one
    leaves): the reader returns a prefix of the events, and a warning exactly when the cut
    fell inside a line (plain) or inside a member (gzip)."""
    gz = data.draw(st.booleans())
    d = tmp_path_factory.mktemp("kill")
    path = d / ("s.jsonl.gz" if gz else "s.jsonl")
    now = [0.0]
    rec = SessionRecorder(path, clock=lambda: now[0])
    evs = _sample_stream(6)
    for e in evs:
        now[0] += 0.6
        rec.write(e)
    rec.close()
    full = path.read_bytes()
    assert len(full) < SHARE
    head = len(dumps(header()).encode()) + 1
    ends = [len(full)]  # where each gzip member ends
    if gz:
        rest = full
        ends = []
        while rest:
            dz = zlib.decompressobj(wbits=31)
            dz.decompress(rest)
            rest = dz.unused_data
            ends.append(len(full) - len(rest))
        head = ends[0]  # the header's own member
    # Where to cut, drawn as a share of the bytes past the header: the header line holds the
    # wall-clock second, so its gzip member's length (and the file's) changes from one example
    # to the next, and bounds drawn from those lengths made Hypothesis stop the test as
    # "inconsistent data generation" (FlakyStrategyDefinition) whenever a second boundary
    # changed them. The share's own bounds are fixed; 0 and SHARE still cut at the header's end
    # and keep the whole file, and every byte in between can be drawn.
    share = data.draw(st.integers(0, SHARE))
    cut = head + share * (len(full) - head) // SHARE
    path.write_bytes(full[:cut])
    back = read_recording(path)
    assert back.events == evs[: len(back.events)]
    if cut == len(full):
        assert back.events == evs and not back.warnings
    elif not gz:
        # inside a line: not just after a newline, and not just before one (a whole last line
        # without its newline is still a whole event)
        in_line = full[cut - 1:cut] != b"\n" and full[cut:cut + 1] != b"\n"
        assert bool(back.warnings) == in_line
    else:  # a cut between members is a clean (shorter) session
        assert bool(back.warnings) == (cut not in ends)
        assert all("cut off" in w for w in back.warnings)
    for w in back.warnings:
        assert "\n" not in w and w.startswith("warning: ")


# ---- the reader's bounds ---------------------------------------------------------------------

H = dumps(header("2026-01-01T00:00:00Z"))


def test_a_line_past_the_bound_is_refused_with_its_number(tmp_path):
    p = tmp_path / "long.jsonl"
    big = json.dumps(E.error(0.0, "w", "x" * 5000))
    p.write_text(H + "\n" + json.dumps(E.error(0.0, "w", "ok")) + "\n" + big + "\n")
    with pytest.raises(SessionError) as info:
        read_recording(p, limit=4096)
    assert str(info.value).startswith(f"{p}:3: ") and "longer than" in str(info.value)
    assert len(read_recording(p, limit=8192).events) == 2


def test_a_non_utf8_line_is_named_by_its_number(tmp_path):
    p = tmp_path / "bin.jsonl"
    good = json.dumps(E.error(0.0, "w", "ok")).encode()
    p.write_bytes(H.encode() + b"\n" + good + b"\n" + good + b"\n" + b'{"t": 0, "\xff"}\n')
    with pytest.raises(SessionError) as info:
        read_recording(p)
    assert str(info.value) == f"{p}:4: the line is not UTF-8 text"


@pytest.mark.parametrize("schema", [0, 5, 99, "2", True, None])
def test_an_unknown_schema_is_refused_in_one_line(schema):
    head = {"format": "sealtop-session", "version": 1, "schema": schema, "created": "x"}
    with pytest.raises(SessionError) as info:
        parse_recording(json.dumps(head) + "\n")
    msg = str(info.value)
    assert "\n" not in msg and f"event schema {schema!r} is not supported" in msg


def test_a_schema_1_session_still_reads():
    head = {"format": "sealtop-session", "version": 1, "schema": 1, "created": "x"}
    ev = E.stage(0.0, 1, 0, "finalizing", "f")
    assert parse_recording(json.dumps(head) + "\n" + json.dumps(ev) + "\n").events == [ev]


def test_a_cut_last_line_is_a_warning_a_bad_middle_line_an_error():
    ok = json.dumps(E.error(0.0, "w", "ok"))
    rec = parse_recording(H + "\n" + ok + "\n" + ok[:-7], "f")
    assert len(rec.events) == 1 and rec.warnings[0].startswith("warning: f:3: the last line is cut")
    with pytest.raises(SessionError, match="f:3: the event is not valid JSON"):
        parse_recording(H + "\n" + ok + "\n" + ok[:-7] + "\n" + ok + "\n", "f")


def test_record_targets_are_checked_before_any_work(tmp_path):
    with pytest.raises(RecordingError, match="does not exist"):
        check_target(tmp_path / "nope" / "s.jsonl")
    with pytest.raises(RecordingError, match="is a directory"):
        check_target(tmp_path)
    assert check_target(tmp_path / "s.jsonl") == tmp_path / "s.jsonl"
    assert not (tmp_path / "s.jsonl").exists()  # checking creates nothing
