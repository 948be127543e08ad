"""engine/verbs/runner.py: `run` and `replay --summary` print the same table and counters, computed
from events; `bench pipeline` writes its JSON report; bad input is one line and exit 2."""

from __future__ import annotations

import gzip
import json

import pytest
from processes import follow_stderr

from engine.config import EngineConfig
from engine.verbs.bench_pipeline import Bench, bench_matrix, bench_pipeline
from engine.verbs.runner import replay_summary, run_headless


@pytest.fixture(scope="module")
def params(tmp_path_factory):
    return str(tmp_path_factory.mktemp("params"))


def cpu_overrides(params: str, **extra) -> dict:
    """A bench's settings for a two-partition run on the CPU backend, fast sampling."""
    return {"backend": "cpu", "devices": [], "param_cache": params, "partitions": 2,
            "sample_interval_s": 0.05, **extra}


def write_config(tmp_path, params, **extra) -> str:
    lines = [
        "[engine]",
        'backend = "cpu"',
        "partition_workers = 2",
        "gpu_channel_capacity = 1",
        "[paths]",
        f'param_cache = "{params}"',
        "[telemetry]",
        "sample_interval_s = 0.05",
        "[jobs]",
        'preset = "chain-256"',
        "partitions = 2",
    ]
    p = tmp_path / "c.toml"
    p.write_text("\n".join(lines) + "\n")
    return str(p)


@pytest.mark.parametrize("name", ["run.jsonl", "run.jsonl.gz"])
def test_run_then_replay_summary_prints_the_same(tmp_path, params, capsys, name):
    cfg = write_config(tmp_path, params)
    rec = tmp_path / name
    assert run_headless(cfg, 2, str(rec)) == 0
    live = capsys.readouterr().out
    assert "verified" in live and "final counters:" in live and "seconds per proof" in live
    assert live.count(" yes") == 4  # 2 jobs × 2 partitions, all verified
    assert replay_summary(str(rec)) == 0
    assert capsys.readouterr().out == live
    # summaries are never stored: dropping anything summary-like from the file changes nothing
    raw = rec.read_bytes()
    text = gzip.decompress(raw).decode() if name.endswith(".gz") else raw.decode()
    kept = [ln for ln in text.splitlines(keepends=True)
            if "summary" not in ln and "seconds per proof" not in ln]
    assert len(kept) == len(text.splitlines())
    stripped = tmp_path / "stripped.jsonl"
    stripped.write_text("".join(kept))
    assert replay_summary(str(stripped)) == 0
    assert capsys.readouterr().out == live


def test_bad_config_is_one_line(tmp_path, capsys):
    p = tmp_path / "bad.toml"
    p.write_text("[engine]\npartition_workers = -1\n")
    assert run_headless(str(p), 1) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "bad.toml:2: engine.partition_workers" in err


def test_unknown_preset_is_one_line(tmp_path, params, capsys):
    p = tmp_path / "c.toml"
    p.write_text(f'[engine]\nbackend = "cpu"\n[paths]\nparam_cache = "{params}"\n'
                 '[jobs]\npreset = "warp-9"\n')
    assert run_headless(str(p), 1) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "unknown preset 'warp-9'" in err


def test_bad_session_is_one_line(tmp_path, capsys):
    p = tmp_path / "s.jsonl"
    p.write_text('{"format": "sealtop-session", "version": 1}\n{"t": 0, "kind": 5}\n')
    assert replay_summary(str(p)) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "s.jsonl:2:" in err
    assert replay_summary(str(tmp_path / "none.jsonl")) == 2


def test_bench_pipeline_writes_report(tmp_path, params, capsys):
    out = tmp_path / "bench.json"
    code = bench_pipeline(Bench(
        "chain-256", 1, str(out),
        overrides={"backend": "cpu", "devices": [], "param_cache": params, "partitions": 3,
                   "sample_interval_s": 0.05},
    ))
    assert code == 0
    rep = json.loads(out.read_text())
    s = rep["summary"]
    assert s["partitions_done"] == 3 and s["jobs_verified"] == 1
    assert s["s_per_proof"] > 0 and s["peak_total"] > 0
    assert rep["backend_in_use"] == "cpu" and rep["key_term_counted"] is True
    assert rep["model_peak_bytes"] == (
        rep["baseline_bytes"] + rep["partition_term_bytes"] + rep["key_term_bytes"]
    )
    assert rep["partition_term_bytes"] == rep["model_peak_shm_bytes"]
    assert rep["key_term_bytes"] == rep["key_bytes"] > 0
    assert rep["old_model_peak_bytes"] == rep["model_peak_shm_bytes"] + rep["key_bytes"]
    assert rep["baseline_bytes"] == s["baseline_rss_anon"] > 0
    cap = capsys.readouterr()
    assert "memory model: baseline" in cap.out and "key term: key file size" in cap.out
    assert "report written" in cap.err
    assert rep["bytes_per_partition"] == (3 * 258 + 258) * 32
    assert 0 < rep["peak_shm_vs_model"] <= 1.0
    assert rep["wrapper_minus_kernels_ms"] >= 0


def test_bench_matrix_dealloc(tmp_path, params, capsys):
    out = tmp_path / "m.json"
    rec = tmp_path / "runs.jsonl"
    code = bench_matrix("dealloc", Bench(
        "chain-256", 1, str(out),
        overrides=cpu_overrides(params), record=str(rec)))
    assert code == 0
    rows = json.loads(out.read_text())["rows"]
    assert [r["variant"] for r in rows] == ["dealloc=async", "dealloc=sync"]
    assert all(r["jobs_verified"] == 1 for r in rows)
    assert all(len(r["partitions"]) == 2 and "gpu_wrapper" in r["partitions"][0]["ms"] for r in rows)
    assert "dealloc comparison" in capsys.readouterr().out
    # one session file per variant, each replayable into its own per-proof table
    for variant in ("dealloc-async", "dealloc-sync"):
        assert replay_summary(str(tmp_path / f"runs.{variant}.jsonl")) == 0
        assert "verified" in capsys.readouterr().out
    assert bench_matrix("nope", Bench("chain-256", 1)) == 2


def test_bench_matrix_in_one_engine_keeps_its_keys(tmp_path, params, capsys):
    """--matrix cuzk --one-engine: one engine, one session, the key loaded once, a warm-up
    job that is no row, then each variant's jobs under its own knobs and policies (knob events
    from config), each row from its own stretch of the session, equal to what the session's
    events of that variant's jobs say."""
    from engine.stream.reader import read_recording
    from engine.stream.summary import setting

    out, rec = tmp_path / "m.json", tmp_path / "one.jsonl"
    code = bench_matrix("cuzk", Bench(
        "chain-256", 1, str(out),
        overrides=cpu_overrides(params, partition_workers=2), record=str(rec), one_engine=True))
    assert code == 0
    rows = json.loads(out.read_text())["rows"]
    assert [r["variant"] for r in rows] == [
        "capacity=1 permit=delivered", "capacity=1 permit=synthesized",
        "capacity=2 permit=delivered", "capacity=2 permit=synthesized"]
    assert all(r["jobs_verified"] == 1 and len(r["partitions"]) == 2 for r in rows)
    events = read_recording(str(rec)).events
    assert sum(e["kind"] == "session_start" for e in events) == 1
    assert not list(tmp_path.glob("one.*.jsonl"))  # no file per variant
    done = [e for e in events if e["kind"] == "proof_done"]
    assert len(done) == 1 + len(rows) and all(e["verified"] for e in done)
    # each variant's jobs are the ones its row counts, and ran under its settings
    warm = done[0]["job"]
    assert all(p["job"] != warm for r in rows for p in r["partitions"])
    for r, job in zip(rows, [e["job"] for e in done[1:]]):
        assert {p["job"] for p in r["partitions"]} == {job}
        before = [e for e in events if e["t"] <= next(
            x["t"] for x in events if x["kind"] == "job_submitted" and x["job"] == job)]
        assert setting(before, "permit_release") == r["overrides"]["permit_release"]
        assert setting(before, "gpu_channel_capacity") == r["overrides"]["gpu_channel_capacity"]
    knobs = [e for e in events if e["kind"] == "knob"]
    assert knobs and all(e["source"] == "config" for e in knobs)
    assert replay_summary(str(rec)) == 0
    assert "cuzk comparison" in capsys.readouterr().out


def test_bench_matrix_lone_in_one_engine_times_the_steady_run_the_lone_job_and_the_first(tmp_path, params, capsys):
    """--matrix lone --one-engine: after the warm-up job (reported apart, as the first job's
    time), the --jobs jobs submitted together, then one job alone; each row's job count and
    seconds a job are what the session's own submission and proof_done events say."""
    from engine.stream.reader import read_recording

    out, rec = tmp_path / "lone.json", tmp_path / "lone.jsonl"
    code = bench_matrix("lone", Bench(
        "chain-256", 2, str(out),
        overrides=cpu_overrides(params, partition_workers=2), record=str(rec), one_engine=True))
    assert code == 0
    rep = json.loads(out.read_text())
    rows = rep["rows"]
    assert [(r["variant"], r["jobs"], r["jobs_verified"]) for r in rows] == [
        ("2 jobs at once", 2, 2), ("one job alone", 1, 1)]
    events = read_recording(str(rec)).events
    # the session ends as the run did: with the engine stopped, so a replay does not end running
    assert {k: events[-1].get(k) for k in ("kind", "text", "engine_state")} == {
        "kind": "console", "text": "run finished", "engine_state": "stopped"}
    sub = {e["job"]: e["t"] for e in events if e["kind"] == "job_submitted"}
    done = {e["job"]: e["t"] for e in events if e["kind"] == "proof_done" and e["verified"]}
    assert len(sub) == len(done) == 4
    first, *together, alone = sorted(sub)
    assert rep["warm_up"]["jobs"] == 1 and {p["job"] for p in rep["warm_up"]["partitions"]} == {first}
    assert rep["warm_up"]["s_per_job"] == pytest.approx(done[first] - sub[first])
    assert {p["job"] for p in rows[0]["partitions"]} == set(together)
    assert rows[0]["s_per_job"] == pytest.approx((max(done[j] for j in together) - min(sub[j] for j in together)) / 2)
    assert {p["job"] for p in rows[1]["partitions"]} == {alone}
    assert rows[1]["s_per_job"] == pytest.approx(done[alone] - sub[alone])
    assert sub[alone] >= max(done[j] for j in together)  # alone: submitted once the others were done
    printed = capsys.readouterr().out
    assert "lone comparison" in printed and "warm-up job (makes or loads the keys)" in printed


def test_a_policy_changes_only_between_jobs(params):
    from engine.pipeline.engine import Engine, Job

    cfg = EngineConfig(backend="cpu", devices=[], param_cache=params, partition_workers=1,
                       preset="chain-256", partitions=1)
    eng = Engine(cfg)
    eng.start()
    try:
        eng.submit(Job("chain-256", 1, seed=3))
        with pytest.raises(ValueError, match="only between jobs"):
            eng.set_policy("dealloc", "sync")
        assert eng.wait_idle(120)
        with pytest.raises(ValueError):
            eng.set_policy("dealloc", "sometimes")
        with pytest.raises(ValueError, match="unknown policy"):
            eng.set_policy("backend", "cuda")
        eng.set_policy("dealloc", "sync")
        assert eng.config.dealloc == "sync"
    finally:
        eng.stop(drain=False)


@pytest.mark.parametrize("signame, group", [("SIGINT", True), ("SIGTERM", False)])
def test_a_stop_signal_stops_cleanly(tmp_path, params, capsys, signame, group):
    """Ctrl-C (SIGINT to the whole process group) and SIGTERM (kill, systemd, docker stop: to
    the orchestrator alone) to `sealtop run --jobs 200` mid-run: exit 130 without a traceback,
    no process and no segment left, the jobs that never ran reported as cancelled (never as
    failed), and a complete session whose replay prints the very summary the run printed."""
    import os
    import signal
    import subprocess
    import sys
    import time

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    cfg = write_config(tmp_path, params)
    rec = tmp_path / "int.jsonl"
    # A shell starts background commands with SIGINT ignored, and that is inherited; restore the
    # interactive disposition so the child sees Ctrl-C as a terminal's foreground process does.
    code = (f"import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
            f"sys.path.insert(0, {root!r}); from engine.verbs.cli import main; "
            f"sys.exit(main(['run', '--config', {cfg!r}, '--jobs', '200', '--record', "
            f"{str(rec)!r}]))")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    # Interrupt once proofs are flowing (the first "done" line), far from the end of the run.
    followed = follow_stderr(proc, " done in ")
    assert followed.seen.wait(timeout=180), "".join(followed.lines)
    sig = getattr(signal, signame)
    if group:
        os.killpg(proc.pid, sig)
    else:
        os.kill(proc.pid, sig)
    live = proc.stdout.read()  # drain, so the final table never blocks on a full pipe
    proc.wait(timeout=120)
    followed.thread.join(timeout=10)
    err = "".join(followed.lines)
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "interrupted" in err
    assert not [n for n in os.listdir("/dev/shm") if n.startswith(f"sealtop-{proc.pid}-")]
    for _ in range(50):  # multiprocessing's resource tracker exits just after its parent
        left = subprocess.run(["pgrep", "-s", str(proc.pid)], capture_output=True, text=True)
        if not left.stdout.split():
            break
        time.sleep(0.1)
    assert left.stdout.split() == [], left.stdout
    # cancelled, not failed: most of the 200 jobs never started
    assert "cancelled, never proven" in err, err
    assert "FAILED" not in err and " failed" not in err, err
    assert "proofs_failed=0" in live.replace(" ", ""), live
    capsys.readouterr()
    assert replay_summary(str(rec)) == 0  # the interrupted session was recorded whole
    assert capsys.readouterr().out == live
    from engine.stream.reader import read_recording

    last = read_recording(str(rec)).events[-1]  # and it ends with the stop that cut it short
    assert last["kind"] == "console" and last["engine_state"] == "stopped"
    assert last["text"].startswith("run interrupted: "), last


@pytest.mark.parametrize("target", ["missing/run.jsonl", "."])
def test_a_bad_record_target_is_one_line_before_any_work(tmp_path, params, capsys, target):
    import time

    cfg = write_config(tmp_path, params)
    t0 = time.perf_counter()
    assert run_headless(cfg, 2, str(tmp_path / target)) == 2
    took = time.perf_counter() - t0
    cap = capsys.readouterr()
    err = cap.err.strip()
    assert err.count("\n") == 0 and err.startswith("sealtop: run: cannot record to ")
    assert ("does not exist" in err) if target != "." else ("is a directory" in err)
    assert "engine started" not in err and cap.out == ""  # refused before the engine was built
    assert took < 5.0
    assert not (tmp_path / "missing").exists()  # and nothing was created


def test_a_full_disk_mid_run_still_prints_every_verified_proof(tmp_path, params, capsys, monkeypatch):
    """The recording fails after a few KiB (a file object handed to the recorder from the test):
    one line says so, the run goes on to its summary with every proof, exit 3; what reached the
    disk replays as a crashed session's prefix."""
    import errno

    from engine.stream.recorder import SessionRecorder
    from engine.verbs import runner

    room = 3000
    written = tmp_path / "full.jsonl"

    class FullDisk:
        def __init__(self) -> None:
            self.f = open(written, "wb", buffering=0)
            self.left = room

        def write(self, b) -> int:
            if self.left <= 0:
                raise OSError(errno.ENOSPC, "No space left on device")
            b = bytes(b)[: self.left]
            self.left -= len(b)
            return self.f.write(b)

        def close(self) -> None:
            self.f.close()

    monkeypatch.setattr(runner, "SessionRecorder",
                        lambda path: SessionRecorder(path, file=FullDisk()))
    cfg = write_config(tmp_path, params)
    assert run_headless(cfg, 2, str(tmp_path / "run.jsonl")) == 3
    cap = capsys.readouterr()
    assert cap.out.count(" yes") == 4  # both jobs' partitions, verified, in the table
    assert "(2 verified)" in cap.out and "final counters:" in cap.out
    failed = [ln for ln in cap.err.splitlines() if "recording to" in ln]
    assert len(failed) == 1 and "No space left on device" in failed[0], cap.err
    assert "Traceback" not in cap.err and "session recorded" not in cap.err
    assert 0 < written.stat().st_size <= room
    assert replay_summary(str(written)) == 0  # the prefix that made it replays
    err = capsys.readouterr().err
    cut_in_a_line = not written.read_bytes().endswith(b"\n")
    assert ("warning:" in err and "cut off" in err) == cut_in_a_line


def test_bench_pipeline_model_counts_what_the_budget_admits(tmp_path, params):
    """With a memory budget the model's partition term is what the budget can hold, not
    workers + capacity + slots (a porep-32g run held 4 partitions under its budget while the
    model counted 9)."""
    per_part = (3 * 258 + 258) * 32  # chain-256's a, b, c and z
    out = tmp_path / "bench.json"
    code = bench_pipeline(Bench(
        "chain-256", 1, str(out),
        overrides={"backend": "cpu", "devices": [], "param_cache": params, "partitions": 3,
                   "partition_workers": 2, "gpu_channel_capacity": 2,
                   "memory_budget": 2 * per_part + per_part // 2, "sample_interval_s": 0.05},
    ))
    assert code == 0
    rep = json.loads(out.read_text())
    assert rep["summary"]["jobs_verified"] == 1
    assert rep["bytes_per_partition"] == per_part
    assert rep["partition_term_bytes"] == rep["model_peak_shm_bytes"] == 2 * per_part
