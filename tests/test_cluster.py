"""The farm for real: Dask's scheduler and sealtop farm workers as processes on 127.0.0.1.

Two workers prove tiny jobs; every proof is checked with py_arkworks_bls12381's pairing (not the
engine's word); the merged session records and replays to the same summary. A worker SIGKILLed
while it proves loses no proof and duplicates none, its processes and segments go with it, and a
worker that joins late takes work. The scheduler going away is one line, never a hang.
Kept affordable on two cores: tiny preset, CPU backend, one synthesis worker per host.
"""

from __future__ import annotations

import ctypes
import os
import queue
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from engine_events import drain
from processes import alive, children, threads_left

pytest.importorskip("distributed")

from engine.cluster import ClusterError  # noqa: E402
from engine.cluster.farm import Farm  # noqa: E402
from engine.cluster.jobs import PROOF_BYTES  # noqa: E402
from engine.config import EngineConfig  # noqa: E402
from engine.groth16.verify import verify  # noqa: E402
from engine.pipeline.circuits import circuit_cache_dir, resolve  # noqa: E402
from engine.pipeline.proving import ensure_key  # noqa: E402
from engine.pipeline.shm import list_ours, prefix_for  # noqa: E402
from engine.stream.reader import read_recording  # noqa: E402
from engine.stream.schema import check_event  # noqa: E402
from engine.stream.summary import final_counters, render_all  # noqa: E402
from engine.verbs.farm_run import run_farm  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
PRESET, PARTS = "tiny", 2
START_S = 120  # a worker's engine starts (numba warm-up, its processes) within this


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _die_with_test() -> None:
    """preexec: the child gets SIGKILL if the test process dies (PR_SET_PDEATHSIG)."""
    ctypes.CDLL(None).prctl(1, signal.SIGKILL)


class Proc:
    """A farm process started by the test, its output in a file."""

    def __init__(self, args: list[str], log: Path) -> None:
        self.log = log
        self.f = open(log, "w")
        self.p = subprocess.Popen([sys.executable, "-m", "engine", *args], cwd=ROOT,
                                  stdout=self.f, stderr=subprocess.STDOUT,
                                  env={**os.environ, "PYTHONUNBUFFERED": "1"},
                                  preexec_fn=_die_with_test)

    def wait_for(self, text: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if text in self.log.read_text():
                return
            if self.p.poll() is not None:
                break
            time.sleep(0.2)
        raise AssertionError(f"{text!r} not in {self.log}: {self.log.read_text()[-2000:]}")

    def end(self) -> int:
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
            try:
                self.p.wait(30)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait(10)
        self.f.close()
        return self.p.returncode


def _ended_within(pids: list[int], timeout: float) -> list[int]:
    """The pids still running (not gone, not zombies) after up to ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        left = [k for k in pids if alive(k)]
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.2)


@pytest.fixture(scope="module")
def farm(tmp_path_factory):
    """A scheduler and workers hA, hB; yields (address, params dir, config, start_worker)."""
    d = tmp_path_factory.mktemp("farm")
    params = d / "params"
    conf = d / "host.toml"
    conf.write_text('[engine]\nbackend = "cpu"\npartition_workers = 1\ngpu_channel_capacity = 1\n'
                    f'[paths]\nparam_cache = "{params}"\n[telemetry]\nsample_interval_s = 0.25\n'
                    f'[jobs]\npreset = "{PRESET}"\npartitions = {PARTS}\n')
    port = _free_port()
    addr = f"tcp://127.0.0.1:{port}"
    procs: list[Proc] = []
    sched = Proc(["cluster", "scheduler", "--host", "127.0.0.1", "--port", str(port)],
                 d / "scheduler.log")
    procs.append(sched)

    def start_worker(name: str) -> Proc:
        w = Proc(["cluster", "worker", "--scheduler", addr, "--config", str(conf), "--name", name],
                 d / f"{name}.log")
        procs.append(w)
        return w

    try:
        sched.wait_for("scheduler at", 30)
        workers = {n: start_worker(n) for n in ("hA", "hB")}
        for w in workers.values():
            w.wait_for("joined", START_S)
        cfg = EngineConfig(backend="cpu", devices=[], partition_workers=1, gpu_channel_capacity=1,
                           param_cache=str(params), preset=PRESET, partitions=PARTS, seed=11)
        yield {"addr": addr, "params": params, "cfg": cfg, "start": start_worker, "conf": conf,
               "workers": workers, "sched": sched}
    finally:
        for p in reversed(procs):
            p.end()


def _independently_verified(params: Path, cfg: EngineConfig, proof_done: list[dict]) -> int:
    """Check every partition proof with the arkworks pairing against the statement derived from
    the job's seed (job n of a session has seed cfg.seed + n - 1); returns how many."""
    circuit = resolve(PRESET, circuit_cache_dir(params))
    _, vk = ensure_key(circuit, params, "cpu")
    checked = 0
    for ev in proof_done:
        raw = bytes.fromhex(ev["proof"])
        assert len(raw) == PARTS * PROOF_BYTES
        seed = cfg.seed + ev["job"] - 1
        for i in range(PARTS):
            public = circuit.public_inputs(seed, i, PARTS)
            proof = raw[i * PROOF_BYTES:(i + 1) * PROOF_BYTES]
            assert verify(vk, public, proof), (ev["job"], i)
            bad = bytes([proof[0] ^ 1]) + proof[1:]
            assert not verify(vk, public, bad)  # the check can fail
            checked += 1
    return checked


def test_two_hosts_prove_and_the_merged_session_replays(farm, tmp_path):
    # a session before this one, so the hosts' long-lived engines have counted other jobs
    assert run_farm(farm["cfg"], 1, farm["addr"], None, progress=None)[0] == 0
    rec = tmp_path / "farm.jsonl"
    code, events, f = run_farm(farm["cfg"], 4, farm["addr"], str(rec), progress=None)
    errors = [e for e in events if e["kind"] == "error"]
    assert code == 0, errors
    done = [e for e in events if e["kind"] == "proof_done"]
    assert sorted(e["job"] for e in done) == [1, 2, 3, 4]
    assert {e["host"] for e in done} == {"hA", "hB"}, done  # both hosts proved
    assert _independently_verified(farm["params"], farm["cfg"], done) == 4 * PARTS
    # one stream: the client's session_start first, a host event per host, every event
    # well-formed and tagged, t never going back
    assert events[0]["kind"] == "session_start"
    assert events[0]["config"]["backend_in_use"] == "farm" and events[0]["gpus"] == []
    hosts = [e for e in events if e["kind"] == "host"]
    assert sorted((h["host"], h["state"]) for h in hosts) == [("hA", "joined"), ("hB", "joined")], \
        hosts
    assert all(h["session_start"]["config"]["backend_in_use"] == "cpu" for h in hosts)
    assert [(check_event(e), e) for e in events if check_event(e)] == []
    # every host's event tagged with its host; the client's own line, the last, says how the
    # run ended
    untagged = [e for e in events[1:] if not isinstance(e.get("host"), str)]
    assert [e for e in untagged if e["kind"] != "console"] == []
    assert [(e["text"], e.get("engine_state")) for e in events if e["kind"] == "console"] == [
        ("run finished", "stopped")] and events[-1]["kind"] == "console"
    ts = [e["t"] for e in events]
    assert ts == sorted(ts)
    stages = [e for e in events if e["kind"] == "stage"]
    assert {e["worker"].split("/")[0] for e in stages} == {"hA", "hB"}
    assert [e for e in stages if "/" not in e["worker"]] == []  # workers named with their host
    # re-based clocks: a job's events fall between its submission and its proof on our clock
    for ev in done:
        sub = next(e for e in events if e["kind"] == "job_submitted" and e["job"] == ev["job"])
        assert 0 <= sub["t"] <= ev["t"] <= events[-1]["t"]
        assert ev["total_ms"] / 1000.0 >= ev["t"] - sub["t"] - 0.5, (ev, sub)
    # the recording replays to the same summary
    replayed = read_recording(rec)
    assert not replayed.warnings
    assert render_all(replayed.events) == render_all(events)
    assert "4 verified" in render_all(events)
    # the final counters are this session's, summed over its hosts, with every proof in them
    c = final_counters(events)
    assert (c["partitions_submitted"], c["partitions_done"]) == (4 * PARTS, 4 * PARTS), c
    assert (c["proofs_done"], c["proofs_verified"], c["proofs_failed"]) == (4, 4, 0), c
    assert c["partitions_submitted"] == c["partitions_submitted_events"]
    # per-job overhead was measured
    assert [t for t in f.timings.values() if t.first_synthesis is None or t.collected is None] == []


def test_a_worker_killed_mid_job_loses_and_duplicates_no_proof(farm):
    farm_ = Farm(farm["addr"], farm["cfg"])
    q = farm_.subscribe()
    farm_.start()
    victim = farm["workers"]["hA"]
    pid = victim.p.pid
    kids = children(pid)
    assert kids, "the host engine's worker processes"
    events: list[dict] = []
    try:
        for i in range(5):
            farm_.submit(PRESET, PARTS, farm["cfg"].seed + i)
        deadline = time.monotonic() + 120
        killed = False
        while not killed and time.monotonic() < deadline:
            try:
                ev = q.get(timeout=1)
            except queue.Empty:
                continue
            events.append(ev)
            if ev["kind"] == "stage" and ev["stage"] == "gpu" and ev.get("host") == "hA":
                os.kill(pid, signal.SIGKILL)  # mid-job: a partition of hA is being proven
                killed = True
                # a host that joins late, warming up meanwhile (test_a_late_host_takes_work)
                farm["workers"]["hC"] = farm["start"]("hC")
        assert killed
        assert farm_.wait_idle(180)
    finally:
        farm_.stop(drain=False)
    events += drain(q)
    victim.p.wait(10)
    done = [e for e in events if e["kind"] == "proof_done"]
    jobs = [e["job"] for e in done]
    assert sorted(jobs) == [1, 2, 3, 4, 5]  # none lost, none twice
    assert all(e["verified"] for e in done)
    assert _independently_verified(farm["params"], farm["cfg"], done) == 5 * PARTS
    assert any(e["kind"] == "host" and e["host"] == "hA" and e["state"] == "left" for e in events)
    # what hA ran when it died was proven elsewhere
    assert any(e["host"] == "hB" for e in done)
    # the killed host's engine processes died with it and left no segment
    assert _ended_within(kids, 10) == []
    assert list_ours(prefix_for(pid)) == []


def test_a_late_host_takes_work(farm, tmp_path, capsys):
    """hC joined after the others (it was started when hA was killed); `bench pipeline
    --cluster` sends it work and reports the farm's figures."""
    import json

    from engine.verbs.cli import main

    # hA is gone when test_a_worker_killed_mid_job_loses_and_duplicates_no_proof ran before
    # this one on this farm; under xdist it may have run in the other process, on its own farm
    victim = farm["workers"]["hA"]
    if victim.p.poll() is None:
        victim.end()
    late = farm["workers"].get("hC") or farm["start"]("hC")
    farm["workers"]["hC"] = late
    late.wait_for("joined", START_S)
    out, rec = tmp_path / "farm.json", tmp_path / "farm.jsonl"
    code = main(["bench", "pipeline", "--cluster", farm["addr"], "--preset", PRESET, "--jobs", "4",
                 "--set", f"partitions={PARTS}", "--set", "needs=cpu",  # placed by resource
                 "--json", str(out), "--record", str(rec)])
    assert code == 0, capsys.readouterr().err
    report = json.loads(out.read_text())
    assert report["jobs_verified"] == 4 and report["exit_code"] == 0
    assert "hC" in report["proofs_per_host"] and "hA" not in report["proofs_per_host"]
    assert sum(report["proofs_per_host"].values()) == 4
    assert report["submit_to_first_synthesis_ms"] > 0 and report["proof_back_ms"] > 0
    events = read_recording(rec).events
    assert {e["host"] for e in events if e["kind"] == "host"} == {"hB", "hC"}
    assert "farm overhead per job" in capsys.readouterr().out


def test_jobs_no_host_can_take_are_one_line_not_a_hang(farm, capsys):
    cfg = EngineConfig(**{**farm["cfg"].to_dict(), "needs": "cuda"})
    code, events, _ = run_farm(cfg, 1, farm["addr"], progress=None)
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no host of the farm takes jobs that need cuda" in err[0], err


def test_no_scheduler_is_one_line(monkeypatch, capsys):
    import engine.cluster.farm as farm_mod

    monkeypatch.setattr(farm_mod, "CONNECT_TIMEOUT_S", 1.0)
    cfg = EngineConfig(backend="cpu", devices=[], preset=PRESET)
    t0 = time.monotonic()
    code, events, _ = run_farm(cfg, 1, f"tcp://127.0.0.1:{_free_port()}", progress=None)
    assert code == 2 and time.monotonic() - t0 < 15
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("sealtop: run: no scheduler at tcp://127.0.0.1:")
    with pytest.raises(ClusterError):
        f = Farm(f"tcp://127.0.0.1:{_free_port()}", cfg)
        f.start()


async def _until(pilot, cond, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout} s: {what}")
        await pilot.pause(0.25)


async def test_the_console_on_the_farm(farm, tmp_path):
    """`sealtop --cluster ADDR` on this farm (Pilot; its hosts have their keys by now): the
    hosts view is the home with a row per host; enter opens a host's dashboard holding that
    host's partitions alone; a knob and pause there reach that host's Engine alone (its own knob
    events), and `*` sends a knob to every host; Esc goes back; q leaves nothing running; the
    recording replays to the same summary and folds to the same hosts and host dashboards."""
    pytest.importorskip("textual")
    import threading

    from test_cluster_hosts_view import _text

    from app.main import build_app
    from app.screens.hosts import HostDashboardScreen, HostsScreen
    from app.session_io import load_session

    hosts = sorted(n for n, w in farm["workers"].items() if w.p.poll() is None)[:2]
    assert len(hosts) == 2, farm["workers"]
    one, other = hosts
    rec = tmp_path / "console.jsonl"
    app = build_app(["--cluster", farm["addr"], "--config", str(farm["conf"]),
                     "--record", str(rec), "--no-attach"])
    before = {t.ident for t in threading.enumerate()}
    async with app.run_test(size=(120, 36)) as pilot:
        home = app.screen
        assert isinstance(home, HostsScreen) and home.home  # the hosts view is the home
        await _until(pilot, lambda: set(hosts) <= set(home.state.hosts), 60, "the hosts")
        # the console keeps jobs in flight: work on both hosts, a proof back
        await _until(pilot, lambda: all(home.fold.state_of(h).jobs for h in hosts)
                     and home.state.proofs >= 1, 90, "jobs on both hosts and a proof")

        def host_rows() -> list[str]:
            return [ln for ln in _text(home.query_one("#hosts-table")).splitlines()
                    if any(h in ln for h in hosts)]

        await _until(pilot, lambda: len(host_rows()) == 2 and all(" up " in ln for ln in host_rows()),
                     20, "both hosts' rows drawn")
        rows = host_rows()
        assert len(rows) == 2 and all(" up " in ln for ln in rows), rows
        assert f"{len(home.state.hosts)} of" in _text(home.query_one("#hosts-title"))
        assert f"p → {one}" in _text(home.query_one("#hosts-keys"))  # where knobs go
        await pilot.press("escape")  # the home stays
        assert app.screen is home

        # drill-down into the first host: its partitions alone, its own config
        assert home.selected == one
        await pilot.press("enter")
        await _until(pilot, lambda: isinstance(app.screen, HostDashboardScreen), 20,
                     "the host's dashboard")
        d = app.screen
        assert isinstance(d, HostDashboardScreen) and d.host == one
        mine = {job for (job, _), (h, _) in home.state.where.items() if h == one}
        theirs = {job for (job, _), (h, _) in home.state.where.items() if h == other}
        assert mine and mine <= set(d.host_state.jobs)  # every job it ran
        assert not set(d.host_state.jobs) & theirs  # and none of the other host's
        assert d.host_state.config.get("backend_in_use") == "cpu"  # the host's session_start
        assert f"host {one}" in _text(d.query_one("#header"))
        workers = d.host_state.knobs["partition_workers"]

        # a knob and a pause on that host reach its engine alone
        await pilot.press("W")
        await _until(pilot, lambda: d.host_state.knobs.get("partition_workers") == workers + 1,
                     20, "the host's knob event")
        assert home.fold.state_of(other).knobs["partition_workers"] == workers
        assert any(f"{one}: partition_workers: {workers} → {workers + 1} (operator)" in e.text
                   for e in d.host_state.log)
        await pilot.press("p")
        await _until(pilot, lambda: d.host_state.paused, 20, "the host paused")
        assert not home.fold.state_of(other).paused
        await pilot.press("p")
        await _until(pilot, lambda: not d.host_state.paused, 20, "the host resumed")
        await pilot.press("escape")
        await _until(pilot, lambda: app.screen is home, 20, "back to the hosts view")
        assert app.screen is home

        # every host: * then C, each host's channel one up from its own
        chan = {h: home.fold.state_of(h).knobs["gpu_channel_capacity"] for h in hosts}
        await pilot.press("asterisk")
        assert "p → all hosts" in _text(home.query_one("#hosts-keys"))
        await pilot.press("C")
        await _until(pilot, lambda: all(home.fold.state_of(h).knobs.get("gpu_channel_capacity")
                                        == chan[h] + 1 for h in hosts), 20, "every channel")
        await pilot.press("q")
    assert app.engine is None  # stopped as the app ended
    assert threads_left(before) == []  # the farm client's threads end with it

    # the recording has every host's knob events, tagged with the host that made them
    events = read_recording(rec).events
    knobs = [(e.get("host"), e["name"], e["old"], e["new"]) for e in events if e["kind"] == "knob"]
    assert (one, "partition_workers", workers, workers + 1) in knobs
    assert not [k for k in knobs if k[0] == other and k[1] == "partition_workers"]
    assert [k for k in knobs if k[1] == "paused"] == [(one, "paused", False, True),
                                                       (one, "paused", True, False)]
    assert sorted(k[0] for k in knobs if k[1] == "gpu_channel_capacity") == hosts
    # it replays like any session: the same summary, and folded again, the same hosts and the
    # same host dashboards (the Pilot replay of a farm session: tests/test_app_cluster.py)
    from app.cluster_source import FarmFold

    session = load_session(rec)
    assert render_all(session.events) == render_all(events)
    again = FarmFold()
    again.take(session.events)
    assert set(hosts) <= set(again.hosts.hosts)
    assert again.state_of(one).knobs["partition_workers"] == workers + 1
    assert again.state_of(other).knobs["partition_workers"] == workers
    assert set(again.state_of(one).jobs) >= mine


def test_the_scheduler_going_away_is_one_line_not_a_hang(farm):
    """Last in the module: it ends the farm. A pending job's client stops waiting with one
    line; every worker says so in one line and exits 2, leaving no process behind."""
    f = Farm(farm["addr"], farm["cfg"])
    f.start()
    f.submit(PRESET, PARTS, 99)
    live = [w for w in farm["workers"].values() if w.p.poll() is None]
    kids = {w.p.pid: children(w.p.pid) for w in live}
    farm["sched"].p.send_signal(signal.SIGTERM)
    t0 = time.monotonic()
    assert f.wait_idle(60)
    assert time.monotonic() - t0 < 30
    assert f.error is not None and "went away" in f.error
    f.stop(drain=False)
    for w in live:
        assert w.p.wait(60) == 2
        lines = [ln for ln in w.log.read_text().splitlines() if ln.startswith("sealtop: ")]
        assert lines and lines[-1].endswith("closed") and "went away" in lines[-1]
        assert _ended_within(kids[w.p.pid], 10) == []
        assert list_ours(prefix_for(w.p.pid)) == []
