"""The headless verbs behind `run` and `replay --summary`, and the one way a headless run
is driven (run_engine, drive), which `bench pipeline` (engine.verbs.bench_pipeline) and the farm's
runs (engine.verbs.farm_run) share.

Each is a plain function that prints and returns an exit code, so engine/verbs/cli.py only parses
arguments. Every table printed here comes from engine.stream.summary over the event stream, so a live
run and the replay of its recorded session print the same thing.

Exit codes: 0 every proof verified; 1 a proof failed verification or a partition failed;
2 bad input (config, session file, preset, record target), printed as one line on stderr;
3 the recording failed mid-run (the run still finished and printed its summary);
130 interrupted.
"""

from __future__ import annotations

import os
import queue
import sys
from collections.abc import Callable
from typing import Any, Protocol, TextIO

from engine import signals
from engine.address import AddressError
from engine.config import ConfigError, EngineConfig, load_config
from engine.stream.fold import Fold, JobRecord, StageChange
from engine.stream.reader import SessionError, read_recording
from engine.stream.recorder import RecordingError, SessionRecorder, check_target
from engine.stream.schema import CANCELLED, console
from engine.stream.summary import render_all
from engine.stream.tap import SinkStats, Tap
from engine.watchers import Watch, Watchers, start_watchers
from kernels.textfmt import error_line, exc_line


class _Progress:
    """The headless progress lines, from the stream's fold: one line per finished job (verified,
    failed with its reason, or failed verification), each engine error, and at the end one line
    for the jobs a stop cancelled (never proven, never counted as failed)."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.fold = Fold()
        self.cancelled: list[int] = []

    def _line(self, t: float, text: str) -> None:
        print(f"[{t:8.2f}s] {text}", file=self.out, flush=True)

    def take(self, batch: list[dict]) -> None:
        for ev in batch:
            try:
                rec = self.fold.apply(ev)
            except (KeyError, TypeError, ValueError):
                continue
            kind = ev["kind"]
            if kind == "proof_done" and isinstance(rec, JobRecord):
                took = f"done in {ev['total_ms'] / 1000:.2f} s"
                if rec.outcome == "verified":
                    self._line(ev["t"], f"job {rec.job} {took}: verified")
                elif rec.failed:
                    self._line(ev["t"], f"job {rec.job} failed: {rec.reason}")
                elif rec.outcome == "failed":
                    self._line(ev["t"], f"job {rec.job} {took}: FAILED verification")
            elif kind == "stage" and isinstance(rec, StageChange) and rec.new == CANCELLED:
                job = rec.job
                if job.job not in self.fold.active and job.outcome == "cancelled":
                    self.cancelled.append(job.job)
            elif kind == "error":
                self._line(ev["t"], f"{ev['where']}: {ev['message']}")

    def close(self) -> None:
        if self.cancelled:
            print(f"{len(self.cancelled)} job(s) cancelled, never proven: "
                  f"{_id_ranges(self.cancelled)}", file=self.out, flush=True)


def _id_ranges(ids: list[int]) -> str:
    """3, 4, 5, 9 -> '3-5, 9'."""
    out: list[str] = []
    for i in sorted(set(ids)):
        if out and out[-1].split("-")[-1] == str(i - 1):
            out[-1] = f"{out[-1].split('-')[0]}-{i}"
        else:
            out.append(str(i))
    return ", ".join(out)


class Sinks:
    """The headless run's tap: every event into a list (the summaries) and, when asked, a
    session file and the progress lines. A recording that fails is said in one line and the run
    goes on; ``record_failed`` tells the exit status."""

    def __init__(self, q: queue.Queue, recorder: SessionRecorder | None,
                 progress: TextIO | None, watchers: Watchers | None = None) -> None:
        self.events: list[dict] = []
        self.recorder = recorder
        self.record_failed = False
        self.tap = Tap(q, on_error=self._sink_failed)
        self.tap.add("events", self.events.extend, essential=True)
        for name, take in (watchers.sinks() if watchers is not None else []):
            self.tap.add(name, take, essential=True)
        if recorder is not None:
            rec = recorder

            def record(batch: list[dict[str, Any]]) -> None:
                for e in batch:
                    rec.write(e)

            def close() -> None:
                rec.close()

            self.tap.add("recorder", record, essential=True, idle=rec.tick, close=close)
        if progress is not None:
            p = _Progress(progress)
            self.tap.add("progress", p.take, capacity=100_000, close=p.close)
        self.tap.start()

    def _sink_failed(self, sink: SinkStats, exc: BaseException) -> None:
        if sink.name == "recorder":
            self.record_failed = True
            say(f"sealtop: {sink.error}; the run goes on without its recording")
        else:
            say(f"sealtop: warning: the {sink.name} output stopped: {sink.error}")

    def finish(self, ending: str = "run finished") -> list[dict]:
        """End the stream with the line that says the engine stopped (``ending``: why), deliver
        what is left and close the sinks (the recorder is synced and closed), so a replay of
        the session ends as the run did, not still running."""
        self.tap.publish(lambda t: console(t, "info", ending, engine_state="stopped"))
        self.tap.close()
        if self.recorder is not None and self.recorder.error is not None and not self.record_failed:
            self.record_failed = True
            say(f"sealtop: {self.recorder.error}; the run goes on without its recording")
        return self.events


def say(msg: str) -> None:
    """One line on stderr, flushed (the headless verbs' notices and refusals)."""
    print(msg, file=sys.stderr, flush=True)


def run_engine(
    cfg: EngineConfig,
    jobs: int,
    record: str | os.PathLike[str] | None = None,
    progress: TextIO | None = sys.stderr,
    watch: Watch = Watch(),
    plan: Callable[[Any], None] | None = None,
    verb: str = "run",
) -> tuple[int, list[dict]]:
    """Run ``jobs`` jobs of the config's preset to completion; (exit code, events). ``watch``
    says whether /metrics is served and whether the engine offers its socket to
    `sealtop attach` and `sealtop serve` for the run. ``plan``, when given, submits the
    ``jobs`` jobs itself (it is handed the started Engine) in place of submitting them at once.
    ``verb`` names the command in its error lines (``sealtop: VERB: ...``)."""
    from engine.pipeline.circuits import PresetError, circuit_cache_dir, resolve
    from engine.pipeline.engine import Engine, EngineError
    from kernels.backend import BackendUnavailable, pick_backend

    def refuse(why: object) -> tuple[int, list[dict]]:  # bad input: one line, exit 2
        say(error_line(f"sealtop {verb}", str(why)))
        return 2, []

    if jobs < 1:
        return refuse("--jobs must be at least 1")
    try:
        if record is not None:
            check_target(record)
        # the backend before the circuit: building a large preset takes minutes and writes GBs
        # into the parameter cache, all for nothing on a machine the backend cannot run on
        pick_backend(cfg.backend)
        if cfg.c1:  # the C1 output read and its ids checked now, one line if they are wrong
            from engine.c2.job import config_job

            preset = config_job(cfg, 0).preset
            resolve(preset, circuit_cache_dir(cfg.param_cache_path()))
        else:
            preset = cfg.preset
            resolve(preset, circuit_cache_dir(cfg.param_cache_path())).check_partitions(cfg.partitions)
    except BackendUnavailable as exc:
        return refuse(f"backend = \"{cfg.backend}\" but {exc}")
    except (PresetError, RecordingError, ValueError) as exc:  # C1 errors are ValueErrors
        return refuse(exc)
    note = (lambda msg: print(f"  {msg}", file=progress, flush=True)) if progress else None
    try:
        eng = Engine(cfg, progress=note)
    except EngineError as exc:
        return refuse(exc)
    try:
        recorder = SessionRecorder(record) if record is not None else None
    except RecordingError as exc:
        return refuse(exc)
    try:
        watchers = start_watchers(eng, watch, cfg)
    except AddressError as exc:
        return refuse(exc)
    for line in watchers.lines:
        say(line)

    def submit() -> None:
        if progress is not None:
            what = f"the C1 output {cfg.c1}" if cfg.c1 else f"{cfg.preset}, {jobs} job(s) of {cfg.partitions} partitions"
            print(f"engine started ({what}); "
                  "making or loading the proving key...", file=progress, flush=True)
        if plan is not None:
            plan(eng)
            return
        from engine.c2.job import config_job

        for i in range(jobs):
            eng.submit(config_job(cfg, cfg.seed + i))

    try:
        return drive(eng, Sinks(eng.subscribe(), recorder, progress, watchers), jobs, submit,
                     (ValueError, EngineError), "cancelling in-flight partitions", verb=verb)
    finally:
        watchers.close()


class Driven(Protocol):
    """What a headless run drives: the Engine, or the farm's client (engine/cluster/farm.py)."""

    def start(self) -> None: ...

    def wait_idle(self, timeout: float | None = None) -> bool: ...

    def stop(self, drain: bool = True, timeout: float | None = None) -> None: ...

    def hurry(self) -> None: ...


def drive(src: Driven, sinks: Sinks, jobs: int, submit: Callable[[], None],
          refused: tuple[type[BaseException], ...], cancelling: str,
          late_error: Callable[[], object] = lambda: None,
          verb: str = "run") -> tuple[int, list[dict]]:
    """Start ``src``, ``submit`` the jobs, wait for them and stop; (exit code, events).

    The one shape of a headless run, local or on a farm: a stop signal cancels what is in
    flight (a second one hurries), an exception of ``refused`` is bad input (one line, exit 2),
    anything else stops ``src`` and is raised. ``late_error`` is an error ``src`` reports after
    its stream ended (the farm lost; exit 2 unless the run was interrupted). ``verb`` names the
    command in the error line."""
    signals.on_again(src.hurry)  # a second stop signal: stop now (still completing the session)
    interrupted = False
    try:
        src.start()
        submit()
        while not src.wait_idle(0.5):
            pass
        with signals.shielded():
            src.stop(drain=True)
    except KeyboardInterrupt:  # Ctrl-C, SIGTERM or SIGHUP (engine.signals)
        interrupted = True
        say(f"interrupted: {cancelling}")
        with signals.shielded():
            src.stop(drain=False)
    except refused as exc:
        say(error_line(f"sealtop {verb}", exc_line(exc)))
        src.stop(drain=False)
        return 2, sinks.finish("run refused")
    except BaseException:
        src.stop(drain=False)
        sinks.finish("run stopped by an error")
        raise
    with signals.shielded():
        events = sinks.finish(f"run interrupted: {cancelling}" if interrupted else "run finished")
    error = late_error()
    if error is not None and not interrupted:
        say(error_line(f"sealtop {verb}", str(error)))
        return 2, events
    if interrupted or signals.received():
        return 130, events
    if sinks.record_failed:
        return 3, events
    done = [e for e in events if e["kind"] == "proof_done"]
    ok = len(done) == jobs and all(e["verified"] for e in done)
    return (0 if ok else 1), events


def run_headless(config_path: str, jobs: int, record: str | None = None,
                 watch: Watch = Watch()) -> int:
    """`sealtop run --config F --jobs N [--record FILE]`: prints the per-proof table, the
    summary and the final counters."""
    try:
        cfg = load_config(config_path)
    except ConfigError as exc:
        say(error_line("sealtop run", str(exc)))
        return 2
    code, events = run_engine(cfg, jobs, record, watch=watch)
    if events:
        print(render_all(events))
    if record is not None and code not in (2, 3):
        say(f"session recorded to {record}")
    return code


def replay_summary(path: str) -> int:
    """`sealtop replay FILE --summary`: the same table and counters as the live run printed."""
    try:
        rec = read_recording(path)
    except SessionError as exc:
        say(error_line("sealtop replay", str(exc)))
        return 2
    for line in rec.warnings:
        say(line)
    print(render_all(rec.events))
    return 0
