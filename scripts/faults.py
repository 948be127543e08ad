"""Fault scenarios against `sealtop run`, and the table of what each left behind.

    python scripts/faults.py [--runs N] [--jobs J] [--only NAME[,NAME...]] [--markdown]

Each run starts `python -m engine run --jobs J --record FILE` (CPU backend, chain-1024, two
partitions per job) in its own session, waits for a moment read from the recording as it is
written (the first synthesis, the first GPU stage, the first finished proof, later proofs), and
injects one fault from outside: SIGKILL of a synthesis worker, of the prover, of the resource
tracker or of the orchestrator; SIGTERM, SIGINT (to the process group, as Ctrl-C), SIGHUP;
SIGTERM twice; SIGSTOP of the prover (stall detection with stall_action = "retry"). Faults come
from this script alone, never from the engine's config.

Per scenario it prints: runs, proofs lost, duplicates, and what was left 5 s after the
orchestrator ended: shared-memory segments with its prefix, semaphores it had open, processes
of its session, and whether the recording reads back.

* proofs lost: a job announced done on stderr whose verified proof is not in the recording,
  or (for faults the run survives) a job neither verified nor cancelled;
* duplicates: more than one proof_done for one job.

The orchestrator-kill scenarios are followed by one more start on the same machine, which
must sweep the leftovers (its "swept" line is counted in the last column).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))  # processes.py: what /proc says, shared with the tests

from processes import semaphores_mapped_by  # noqa: E402

from kernels.textfmt import OneLineParser  # noqa: E402

PRESET = "chain-1024"
SHM = "/dev/shm"
GRACE_S = 5.0


@dataclass
class Watch:
    """What the recording said so far (read as the recorder writes it)."""

    path: Path
    offset: int = 0
    events: list[dict] = field(default_factory=list)
    roles: dict[str, int] = field(default_factory=dict)  # worker name -> pid (from samples)

    def poll(self) -> None:
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                data = f.read()
        except OSError:
            return
        end = data.rfind(b"\n")
        if end < 0:
            return
        self.offset += end + 1
        for line in data[: end + 1].splitlines():
            try:
                ev = json.loads(line)
            except ValueError:
                continue
            if "kind" not in ev:
                continue
            self.events.append(ev)
            if ev["kind"] == "sample":
                for p in ev.get("processes", []):
                    self.roles[p["role"]] = p["pid"]

    def count(self, pred: Callable[[dict], bool]) -> int:
        return sum(1 for e in self.events if pred(e))

    def last(self, pred: Callable[[dict], bool]) -> dict | None:
        return next((e for e in reversed(self.events) if pred(e)), None)


def _stage(name: str) -> Callable[[dict], bool]:
    return lambda e: e["kind"] == "stage" and e["stage"] == name


def _proof(e: dict) -> bool:
    return e["kind"] == "proof_done"


@dataclass
class Scenario:
    name: str
    what: str
    moment: Callable[[Watch], bool]  # when to inject
    inject: Callable[[subprocess.Popen, Watch], None]
    survives: bool = True  # the run goes on to its end (worker faults) or is stopped
    sweep_after: bool = False  # start once more to see the leftovers swept
    extra_config: str = ""


def _kill_worker(role_prefix: str, sig: int = signal.SIGKILL):
    def inject(proc: subprocess.Popen, w: Watch) -> None:
        stage = w.last(lambda e: e["kind"] == "stage" and e["worker"].startswith(role_prefix))
        name = stage["worker"].split("/")[0] if stage else None
        pid = w.roles.get(name) if name else None
        if pid is None:
            pid = next(p for r, p in w.roles.items() if r.startswith(role_prefix))
        os.kill(pid, sig)

    return inject


def _tracker_pid(orchestrator: int) -> int | None:
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            cmd = Path(f"/proc/{d}/cmdline").read_bytes()
            stat = Path(f"/proc/{d}/stat").read_text()
        except OSError:
            continue
        ppid = int(stat[stat.rfind(")") + 2:].split()[1])
        if ppid == orchestrator and b"resource_tracker" in cmd:
            return int(d)
    return None


def _signal(sig: int, group: bool = False, twice: bool = False):
    def inject(proc: subprocess.Popen, w: Watch) -> None:
        (os.killpg if group else os.kill)(proc.pid, sig)
        if twice:
            time.sleep(0.3)
            try:
                os.kill(proc.pid, sig)
            except ProcessLookupError:
                pass

    return inject


def _kill_tracker_then_orchestrator(proc: subprocess.Popen, w: Watch) -> None:
    """The orchestrator is stopped first: a running one would start a new tracker as soon as
    it noticed the old one gone, and that one would clean up after it."""
    os.kill(proc.pid, signal.SIGSTOP)
    tracker = _tracker_pid(proc.pid)
    if tracker is None:
        os.kill(proc.pid, signal.SIGCONT)
        raise ProcessLookupError("no resource tracker among the orchestrator's children")
    os.kill(tracker, signal.SIGKILL)
    os.kill(proc.pid, signal.SIGKILL)


def scenarios() -> list[Scenario]:
    first_synth = lambda w: w.count(_stage("synthesizing")) >= 1  # noqa: E731
    first_gpu = lambda w: w.count(_stage("gpu")) >= 1  # noqa: E731
    proofs = lambda n: (lambda w: w.count(_proof) >= n)  # noqa: E731
    return [
        Scenario("synth-kill-early", "SIGKILL a synthesis worker at the first synthesis",
                 first_synth, _kill_worker("synth")),
        Scenario("synth-kill-mid", "SIGKILL a synthesis worker after 3 proofs",
                 proofs(3), _kill_worker("synth")),
        Scenario("prover-kill-early", "SIGKILL the prover at the first GPU stage",
                 first_gpu, _kill_worker("cpu0")),
        Scenario("prover-kill-mid", "SIGKILL the prover after 3 proofs",
                 proofs(3), _kill_worker("cpu0")),
        Scenario("prover-stop", "SIGSTOP the prover after 1 proof (stall, retry)",
                 proofs(1), _kill_worker("cpu0", signal.SIGSTOP),
                 extra_config='stall_after_s = 5\nstall_action = "retry"\n'),
        Scenario("orch-kill-early", "SIGKILL the orchestrator at the first GPU stage",
                 first_gpu, _signal(signal.SIGKILL), survives=False, sweep_after=True),
        Scenario("orch-kill-mid", "SIGKILL the orchestrator after 3 proofs",
                 proofs(3), _signal(signal.SIGKILL), survives=False, sweep_after=True),
        Scenario("orch+tracker-kill", "SIGKILL the resource tracker, then the orchestrator",
                 proofs(2), _kill_tracker_then_orchestrator, survives=False, sweep_after=True),
        Scenario("sigterm", "SIGTERM to the orchestrator after 2 proofs",
                 proofs(2), _signal(signal.SIGTERM), survives=False),
        Scenario("sigint-group", "SIGINT to the process group (Ctrl-C) after 2 proofs",
                 proofs(2), _signal(signal.SIGINT, group=True), survives=False),
        Scenario("sighup", "SIGHUP to the orchestrator after 2 proofs",
                 proofs(2), _signal(signal.SIGHUP), survives=False),
        Scenario("sigterm-twice", "SIGTERM twice, 0.3 s apart, after 2 proofs",
                 proofs(2), _signal(signal.SIGTERM, twice=True), survives=False),
    ]


@dataclass
class Outcome:
    lost: int = 0
    duplicates: int = 0
    segments: int = 0
    semaphores: int = 0
    processes: int = 0
    replays: bool = True
    exit_code: int | None = None
    swept: int = 0
    seen: int = 0  # worker deaths and stalls the engine reported (error events)
    note: str = ""


def _session_left(sid: int) -> int:
    r = subprocess.run(["pgrep", "-s", str(sid)], capture_output=True, text=True)
    return len(r.stdout.split())


def _default_signals() -> None:
    """The run starts with the default SIGINT and SIGHUP dispositions, as a terminal's
    foreground command does, even when this script runs under nohup or in the background
    (which would hand it those signals ignored, and an ignored signal stays ignored)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


def _write_config(d: Path, params: Path, extra: str) -> Path:
    cfg = d / "faults.toml"
    cfg.write_text(
        "[engine]\nbackend = \"cpu\"\npartition_workers = 2\ngpu_channel_capacity = 1\n" + extra
        + f"[paths]\nparam_cache = \"{params}\"\n[telemetry]\nsample_interval_s = 0.2\n"
        f"[jobs]\npreset = \"{PRESET}\"\npartitions = 2\n")
    return cfg


def run_once(sc: Scenario, jobs: int, params: Path, work: Path) -> Outcome:
    d = Path(tempfile.mkdtemp(prefix=f"{sc.name}-", dir=work))
    cfg = _write_config(d, params, sc.extra_config)
    rec = d / "run.jsonl"
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.Popen([sys.executable, "-m", "engine", "run", "--config", str(cfg),
                             "--jobs", str(jobs), "--record", str(rec)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            start_new_session=True, cwd=d, preexec_fn=_default_signals)
    err: list[str] = []
    threading.Thread(target=lambda: err.extend(proc.stderr), daemon=True).start()
    threading.Thread(target=lambda: proc.stdout.read(), daemon=True).start()
    w = Watch(rec)
    out = Outcome()
    sems: set[str] = set()
    deadline = time.monotonic() + 300
    injected = False
    while proc.poll() is None and time.monotonic() < deadline:
        w.poll()
        sems |= semaphores_mapped_by(proc.pid)
        if not injected and sc.moment(w):
            try:
                sc.inject(proc, w)
                injected = True
            except (StopIteration, ProcessLookupError) as exc:
                out.note = f"could not inject: {exc!r}"
                break
        time.sleep(0.05)
    stopped_pid = None
    if sc.name == "prover-stop":
        stopped_pid = w.roles.get("cpu0")
    if proc.poll() is None and not injected:
        os.killpg(proc.pid, signal.SIGKILL)
        out.note = out.note or "timed out before the moment"
    proc.wait(300)
    out.exit_code = proc.returncode
    time.sleep(GRACE_S)
    out.segments = len([n for n in os.listdir(SHM) if n.startswith(f"sealtop-{proc.pid}-")])
    out.semaphores = sum(1 for n in sems if os.path.exists(os.path.join(SHM, n)))
    out.processes = _session_left(proc.pid)
    if out.processes:
        subprocess.run(["pkill", "-KILL", "-s", str(proc.pid)], capture_output=True)
    if stopped_pid is not None:
        try:
            os.kill(stopped_pid, signal.SIGCONT)
        except ProcessLookupError:
            pass
    from engine.stream.reader import SessionError, read_recording

    try:
        events = read_recording(rec).events
    except SessionError:
        out.replays = False
        events = w.events
    verified = [e["job"] for e in events if e["kind"] == "proof_done" and e["verified"]]
    done = [e["job"] for e in events if e["kind"] == "proof_done"]
    out.duplicates = len(done) - len(set(done))
    out.seen = sum(1 for e in events if e["kind"] == "error"
                   and (" died " in e["message"] or "stalled" in e["message"]))
    announced = {int(line.split("job ")[1].split()[0]) for line in err
                 if "] job " in line and ": verified" in line}
    lost = announced - set(verified)
    if sc.survives:
        cancelled = {e["job"] for e in events if e["kind"] == "stage" and e["stage"] == "cancelled"}
        lost |= set(range(1, jobs + 1)) - set(verified) - cancelled
    out.lost = len(lost)
    if sc.sweep_after:
        out.swept = _sweep_run(params, work)
    return out


def _sweep_run(params: Path, work: Path) -> int:
    """One more engine start: the number of leftovers it reports sweeping."""
    code = (f"import sys; sys.path.insert(0, {str(ROOT)!r})\n"
            "from engine.config import EngineConfig\nfrom engine.pipeline.engine import Engine\n"
            f"e = Engine(EngineConfig(backend='cpu', devices=[], partition_workers=1, "
            f"param_cache={str(params)!r}), progress=print)\ne.start(); e.stop()\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    for line in r.stdout.splitlines():
        if line.startswith("swept what dead runs left"):
            nums = [int(t) for t in line.replace(",", " ").split() if t.isdigit()]
            return sum(nums)
    return 0


def table(rows: list[tuple[Scenario, list[Outcome]]], markdown: bool) -> str:
    head = ["scenario", "runs", "faults seen", "proofs lost", "duplicates", "segments left",
            "semaphores left", "processes left", "replays", "exit", "swept next start"]
    body = []
    for sc, outs in rows:
        body.append([
            sc.name, str(len(outs)), str(sum(o.seen for o in outs)) if sc.survives else "-",
            str(sum(o.lost for o in outs)),
            str(sum(o.duplicates for o in outs)), str(sum(o.segments for o in outs)),
            str(sum(o.semaphores for o in outs)), str(sum(o.processes for o in outs)),
            f"{sum(o.replays for o in outs)}/{len(outs)}",
            ",".join(sorted({str(o.exit_code) for o in outs})),
            str(sum(o.swept for o in outs)) if sc.sweep_after else "-",
        ])
    if markdown:
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        lines += ["| " + " | ".join(b) + " |" for b in body]
    else:
        widths = [max(len(h), *(len(b[i]) for b in body)) for i, h in enumerate(head)]
        lines = ["  ".join(h.ljust(w) for h, w in zip(head, widths))]
        lines += ["  ".join(c.ljust(w) for c, w in zip(b, widths)) for b in body]
    notes = [f"{sc.name}: {o.note}" for sc, outs in rows for o in outs if o.note]
    return "\n".join(lines + notes)


def main(argv: list[str] | None = None) -> int:
    ap = OneLineParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=2, help="runs per scenario (default 2)")
    ap.add_argument("--jobs", type=int, default=12, help="jobs per run (default 12)")
    ap.add_argument("--only", default=None, help="comma-separated scenario names")
    ap.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    args = ap.parse_args(argv)
    chosen = scenarios()
    if args.only:
        names = set(args.only.split(","))
        unknown = names - {s.name for s in chosen}
        if unknown:
            ap.error(f"unknown scenario(s): {', '.join(sorted(unknown))}")
        chosen = [s for s in chosen if s.name in names]
    if args.runs < 1 or args.jobs < 4:
        ap.error("--runs must be at least 1 and --jobs at least 4")
    work = Path(tempfile.mkdtemp(prefix="sealtop-faults-"))
    params = work / "params"
    rows = []
    t0 = time.monotonic()
    for sc in chosen:
        outs = []
        for i in range(args.runs):
            o = run_once(sc, args.jobs, params, work)
            print(f"{sc.name} run {i + 1}: lost={o.lost} dup={o.duplicates} segs={o.segments} "
                  f"sems={o.semaphores} procs={o.processes} replays={o.replays} "
                  f"exit={o.exit_code} swept={o.swept} seen={o.seen} {o.note}", file=sys.stderr,
                  flush=True)
            outs.append(o)
        rows.append((sc, outs))
    print(table(rows, args.markdown))
    print(f"\n{sum(len(o) for _, o in rows)} runs in {time.monotonic() - t0:.0f} s; "
          f"{args.jobs} jobs of {PRESET} x 2 partitions each, CPU backend")
    # a killed resource tracker leaves segments and semaphores by design; the next start must
    # sweep them all
    bad = any(o.lost or o.duplicates or o.processes or not o.replays
              or (o.segments + o.semaphores > (o.swept if sc.sweep_after else 0))
              for sc, outs in rows for o in outs)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
