"""The console's live source: the tap on an engine's stream, with the recorder and the bridge as
its sinks, and the console's own lines published into it; and the live mode around it.

- LiveStream (plain Python): the App's bridge gives it a function that posts a batch of events
  to the UI thread and one that shows a notice, and asks it to say a line or to end. Everything
  the dashboard folds passes through here, in the same order the recorder writes it, which is
  what makes a live session and its replay end in identical states.
- LiveSource: the live mode of the console. It builds the embedded engine in a thread (slow
  the first time: JIT and keys; a fresh install compiles in a child first), puts a LiveStream
  on its queue, folds what the bridge posts, and owns the tuning keys (the dashboard's
  ``app.knob``, ``app.pause``, ``app.submit``, ``app.autofeed``, ``app.save_config``), which
  call the Engine API; the engine confirms each change with a `knob` event, which is what the
  log shows. It talks to the UI only through the app it is given (post_message, notify,
  request_render, push_screen, run_worker).
"""

from __future__ import annotations

import os
import queue
import threading
import time
from collections.abc import Callable
from typing import Any

from app.source import ConsoleSource
from engine.stream.recorder import RecordingError, SessionRecorder
from engine.stream.schema import Event, console
from engine.stream.tap import SinkStats, Tap

WORKER_NICE = 10  # the engine's worker processes' niceness while the console embeds them


class LiveStream:
    """One engine subscription carried to the recorder (when recording) and the dashboard."""

    def __init__(
        self,
        source: queue.Queue,
        record: str | None,
        post_events: Callable[[list[Event]], None],
        notice: Callable[[str, str], None],
        sinks: list[tuple[str, Callable[[list[Event]], None]]] | None = None,
    ) -> None:
        """``notice(level, text)`` hears what the stream itself has to say (a recording that
        cannot start or fails); it may be called from the tap's threads. ``sinks`` are more
        essential sinks (the exporter, the attach socket: engine/watchers.py)."""
        self._notice = notice
        self._lock = threading.Lock()
        self.tap: Tap | None = Tap(source, on_error=self._sink_failed, name="sealtop-console-tap")
        self.recorder: SessionRecorder | None = None
        if record:
            try:
                self.recorder = SessionRecorder(record)
            except RecordingError as exc:
                notice("error", str(exc))
            else:
                rec = self.recorder

                def write_batch(batch: list[Event]) -> None:
                    for e in batch:
                        rec.write(e)

                def close() -> None:
                    rec.close()

                self.tap.add("recorder", write_batch, essential=True, idle=rec.tick, close=close)
        # The bridge never blocks (posting a message only queues it) and must see every event,
        # or the dashboard would differ from the recording.
        self._yielded: set[int] = set()

        def bridge(batch: list[Event]) -> None:
            self._yield_cpu(batch)
            post_events(batch)

        self.tap.add("console", bridge, essential=True)
        for name, take in sinks or []:
            self.tap.add(name, take, essential=True)
        self.tap.start()

    def _yield_cpu(self, batch: list[Event]) -> None:
        """Lower the CPU priority of the engine's worker processes (nice +WORKER_NICE) as the
        samples name them, so that the console's one thread is given a core first.

        The embedded engine's workers keep both cores of a small machine busy; at the same
        priority the console's thread waited about three times its own CPU time in the run
        queue (/proc/self/task/TID/schedstat), which was most of a key's latency. A lower
        priority costs the workers nothing when the machine has cores to spare; the headless
        verbs, where no operator waits, leave their priority alone."""
        me = os.getpid()
        for ev in batch:
            if ev.get("kind") != "sample" or "host" in ev:  # a farm host's pids are not ours
                continue
            for p in ev.get("processes") or []:
                pid = p.get("pid")
                if isinstance(pid, int) and pid != me and pid not in self._yielded:
                    self._yielded.add(pid)
                    if _parent(pid) != me:  # only the console's own children
                        continue
                    try:
                        os.setpriority(os.PRIO_PROCESS, pid,
                                       max(os.getpriority(os.PRIO_PROCESS, pid), WORKER_NICE))
                    except OSError:  # gone already, or not ours to change
                        pass

    def thread_ids(self) -> list[int]:
        """Kernel ids of the threads that carry the stream (empty once it has ended)."""
        with self._lock:
            tap = self.tap
        return tap.native_ids() if tap is not None else []

    @property
    def recording(self) -> bool:
        return self.recorder is not None and self.recorder.error is None

    def _sink_failed(self, sink: SinkStats, exc: BaseException) -> None:
        if sink.name == "recorder":
            self._notice("error", f"{sink.error}; the console goes on without it")
        else:
            self._notice("warn", f"{sink.name} stopped: {sink.error}")

    def say(self, level: str, text: str, engine_state: str | None = None) -> bool:
        """Publish a console line into the stream; False once the stream has ended."""
        with self._lock:
            tap = self.tap
        if tap is None:
            return False
        tap.publish(lambda t: console(t, level, text, engine_state))
        return True

    def end(self, text: str, timeout: float = 30.0) -> bool:
        """End the stream with the line that says the engine stopped: the tap delivers all
        before it, the recorder is synced and closed. False if it had ended already."""
        with self._lock:
            tap, self.tap = self.tap, None
        if tap is None:
            return False
        tap.publish(lambda t: console(t, "warn", text, engine_state="stopped"))
        try:
            tap.close(timeout=timeout)
        except Exception:  # noqa: BLE001 - ending must not fail
            pass
        return True


def _parent(pid: int) -> int | None:
    """The parent pid of a process (None where it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None



class LiveSource(ConsoleSource):
    """The live mode: the embedded engine, its stream, the state it folds into, the tuning."""

    ACTIONS = frozenset({"knob", "pause", "submit", "save_config", "autofeed"})

    def __init__(self, app: Any, engine_factory: Callable[[], Any] | None, *, config: Any,
                 config_path: str | None, readonly: bool, record: str | None, autofeed: int,
                 watch: Any, compile_first: bool) -> None:
        from app.state import DashboardState

        self.app = app
        self._opened = time.monotonic()  # the clock of the lines said before the session
        self.engine_factory = engine_factory
        self.engine: Any = None
        self.config, self.config_path = config, config_path
        self.readonly, self.record, self.watch = readonly, record, watch
        self.autofeed = autofeed  # keep this many jobs in flight; 0 = off
        self.compile_first = compile_first  # compile a fresh install's kernels in a child
        self.state = DashboardState()
        self.failed = False  # the engine failed to start
        self.stream: LiveStream | None = None  # while the engine runs
        self.watchers: Any = None  # engine.watchers.Watchers, while the engine runs
        self._quitting = threading.Event()  # the app is ending: stop the compile child, the start
        self._handoff = threading.Lock()  # between the starting thread and shutdown()
        self._started_engine: Any = None  # started, not yet handed to the app (on_status)
        self._submitted = self._submitting = 0
        self._background: Any = None  # app.firstrun.Background: the warm-up's rest compiling
        if engine_factory is not None:
            _start_resource_tracker()

    # ---- what the App asks of a mode ----------------------------------------------------------

    def header_mode(self) -> str:
        return "unavailable" if self.engine_factory is None or self.failed else "live"

    @property
    def can_tune(self) -> bool:
        return not self.readonly and self.engine is not None

    def offers(self, action: str) -> bool | None:
        """True where the tuning key works now, None where it is off for now (engine not
        running: shown disabled), False where this console never offers it (read-only)."""
        if action not in self.ACTIONS or self.readonly:
            return False
        return True if self.can_tune else None

    def start(self) -> None:
        """On mount: build and start the engine in a thread, or say why there is none."""
        if self.engine_factory is None:
            self.app._local_log("error", self.app.notice or "embedded engine unavailable")
            return
        self.app.notice = self.app.notice or "engine starting… (first run compiles kernels and makes keys)"
        self.app.run_worker(self._run_engine, thread=True, exclusive=True, group="engine",
                            exit_on_error=False)

    def refresh(self) -> bool:
        """The app's refresh tick: keep jobs flowing; True while the header's clock must run
        (the engine is preparing)."""
        if self.autofeed:
            self.feed()
        return not self.state.started

    def say(self, level: str, text: str) -> bool:
        """A console line into the live stream (recorded, replayed). Before the engine's session
        has begun (a first run's compile, the engine starting) there is no session clock: the
        line is logged at the seconds since the console opened, so each step of a long first run
        shows when it happened rather than 0.00 s. False once the stream has ended."""
        if self.stream is not None and self.stream.say(level, text):
            return True
        if self.state.started or self.engine_factory is None:
            return False
        from app.state import LogEntry

        self.state.log.append(LogEntry(time.monotonic() - self._opened, level, text))
        return True

    def thread_ids(self) -> list[int]:
        return self.stream.thread_ids() if self.stream is not None else []

    def recording(self) -> str | None:
        return self.record if self.stream is not None and self.stream.recording else None

    # ---- the engine's life --------------------------------------------------------------------

    def _run_engine(self) -> None:
        """Build the engine, put the live stream on it (recorder, bridge), start it."""
        from app.messages import EngineEvents, EngineStatus

        post = self.app.post_message
        if self.compile_first:
            self._compile_in_child()
        try:
            engine = self.engine_factory()  # type: ignore[misc]
            if hasattr(engine, "progress"):  # first-run compilation and key setup, line by line
                engine.progress = lambda line: post(EngineStatus(line.strip(), "info", state="preparing"))
            q = engine.subscribe()
        except Exception as exc:  # noqa: BLE001 - shown in the console, not raised
            post(EngineStatus(f"engine failed to start: {exc}", "error", state="unavailable"))
            return
        watchers = None
        if self.watch is not None:
            from engine.address import AddressError
            from engine.watchers import start_watchers

            try:
                watchers = start_watchers(engine, self.watch, self.config)
            except AddressError as exc:
                post(EngineStatus(str(exc), "error"))
        self.watchers = watchers
        stream = LiveStream(q, self.record, lambda b: post(EngineEvents(b)),
                            lambda level, text: post(EngineStatus(text, level)),
                            sinks=watchers.sinks() if watchers is not None else None)
        self.stream = stream
        try:
            engine.start()
        except Exception as exc:  # noqa: BLE001 - shown in the console, not raised
            stream.end(f"engine failed to start: {exc}")
            self._close_watchers()
            post(EngineStatus("", state="unavailable"))
            return
        with self._handoff:
            quitting = self._quitting.is_set()
            if not quitting:
                self._started_engine = engine  # shutdown() stops it if on_status never comes
        if quitting:
            # the app ended while the engine started: shutdown() found no engine to stop, and
            # nothing else would (its threads and workers would hold the process open)
            self._stop_quietly(engine, "console closed while the engine started; engine stopped")
            return
        for line in watchers.lines if watchers is not None else []:
            stream.say("info", line)  # after start: the session's first line is session_start
        post(EngineStatus("engine started", engine=engine, state="running"))

    def _compile_in_child(self) -> None:
        """On a fresh install, compile what the first proof needs in child processes (the GIL
        stays free, so the console keeps drawing; one child per lane, so both cores of a small
        machine compile), with a progress line each tick; then the rest of the warm-up in the
        background while the engine proves. The engine then finds the cache warm. Each step's
        line is also a log line."""
        from app.messages import EngineStatus, FirstRunProgress

        try:
            from engine.warmup import is_warm

            if is_warm():
                return
        except Exception:  # noqa: BLE001 - the engine compiles in-process, as before
            return
        from app.firstrun import compile_first, compile_rest_in_background

        if not is_warm("first"):
            said: set[str] = set()

            def report(p) -> None:
                self.app.post_message(FirstRunProgress(p.text()))
                if p.line and p.line not in said:
                    said.add(p.line)
                    self.app.post_message(EngineStatus(p.line, "info", state="preparing"))

            p = compile_first(report, stop=self._quitting, params=self._warm_params())
            if p.failed:
                self.app.post_message(EngineStatus(
                    f"first-run compile in a child failed ({p.failed}); the engine compiles it "
                    "itself", "warn"))
                return
            self.app.post_message(EngineStatus(
                f"first run: compiled in {p.elapsed:.1f} s (what the first proof needs)", "info",
                state="preparing"))
        if self._quitting.is_set():
            return
        self._background = compile_rest_in_background(stop=self._quitting)
        if self._background is not None:
            self.app.post_message(EngineStatus(
                "first run: the rest of the kernels compile in the background (lowest priority)",
                "info", state="preparing"))

    def _warm_params(self) -> str | None:
        """The key cache the first-run compile may leave the first preset's key in: the
        engine's, when the console proves the warm-up's preset."""
        from engine.warmup import WARM_PRESET

        if getattr(self.config, "preset", None) != WARM_PRESET:
            return None
        try:
            return str(self.config.param_cache_path())
        except Exception:  # noqa: BLE001 - not an engine config: nothing to share
            return None

    def stop_engine(self, drain: bool = True) -> None:
        """Stop the engine off the UI thread; the tap then delivers every event the engine
        emitted before it stopped, ends with the console's "engine stopped" line and closes."""
        self.app.run_worker(lambda: self._stop(drain), thread=True, group="engine-stop",
                            exit_on_error=False)

    def _stop(self, drain: bool) -> None:
        from app.messages import EngineStatus

        eng = self.engine
        if eng is None:
            return
        try:
            eng.stop(drain=drain)
        except Exception as exc:  # noqa: BLE001
            self.app.post_message(EngineStatus(f"engine stop failed: {exc}", "error"))
        if self.stream is not None:
            self.stream.end("engine stopped")
        self._close_watchers()
        self.app.post_message(EngineStatus("", state="stopped"))

    def shutdown(self) -> None:
        """However the app ends (q, ctrl+c, a test's exit): stop the engine and the recorder.
        An engine still starting is stopped by its starting thread once start() returns."""
        with self._handoff:
            self._quitting.set()
            eng = self.engine if self.engine is not None else self._started_engine
            self.engine = self._started_engine = None
        self.app.workers.cancel_group(self.app, "engine")
        if self._background is not None:  # the rest of a first run's compile: next time
            self._background.stop()
        if eng is not None:
            self._stop_quietly(eng, "console closed; engine stopped")

    def _stop_quietly(self, eng: Any, line: str) -> None:
        try:
            eng.stop(drain=False)
        except Exception:  # noqa: BLE001 - quitting must not fail
            pass
        if self.stream is not None:
            self.stream.end(line)
        self._close_watchers()

    def _close_watchers(self) -> None:
        watchers, self.watchers = self.watchers, None
        if watchers is not None:
            watchers.close()

    # ---- what the bridge posts ------------------------------------------------------------------

    def on_events(self, events: list[Event]) -> None:
        from app.state import apply

        for ev in events:
            apply(self.state, ev)
            if ev.get("kind") == "session_start":
                self.app.notice = ""

    def on_first_run(self, text: str) -> None:
        if not self.state.started:
            self.app.notice = text

    def on_status(self, text: str, level: str, engine: Any, state: str) -> None:
        app = self.app
        if engine is not None:
            self.engine = engine
            app.notice = "" if self.state.started else "engine started; waiting for its first events…"
            self.feed()
        if state == "unavailable":
            app.notice = text or app.notice
            self.failed = True
        if state == "preparing" and not self.state.started:
            app.notice = f"preparing: {text}"
        if state == "stopped":
            self.engine = None  # the stream's last line already said so
        if text:
            app._local_log(level, text)

    def on_submit_done(self, error: str) -> None:
        self._submitting -= 1
        if self.app.notice.startswith("preparing the first job"):
            self.app.notice = ""
        if error:
            self._submitted -= 1
            self.autofeed = 0
            self.app._local_log("error", error)
        self.app.request_render()

    # ---- tuning -------------------------------------------------------------------------------

    def _refuse(self) -> bool:
        if self.can_tune:
            return False
        why = "read-only console (--readonly)" if self.readonly else "engine not running"
        self.app.notify(f"tuning disabled: {why}", severity="warning")
        return True

    def set_knob(self, name: str, value: Any) -> bool:
        """Ask the engine to change a knob; the engine's knob event confirms it in the log."""
        from app.knobs import show

        if self._refuse():
            return False
        try:
            self.engine.set_knob(name, value)
        except Exception as exc:  # noqa: BLE001 - the engine says why; show it
            self.app._local_log("error", f"{name} = {value} refused: {exc}")
            self.app.notify(f"{name}: {exc}", severity="error")
            self.app.request_render()
            return False
        self.app.notify(f"{name} → {show(name, value)}", timeout=2)
        return True

    def action_knob(self, name: str, direction: int) -> None:
        """One step of a knob (app/knobs.py: ±1 for counts, ±1 GiB for the memory budget; an
        unlimited budget becomes one just above the current use)."""
        from app.knobs import least_text, next_value

        if self._refuse():
            return
        cur = self.state.knobs.get(name)
        new = next_value(name, cur, direction, self.state.mem_total)
        if new != cur:
            self.set_knob(name, new)
        else:  # a key at its end says so rather than doing nothing
            self.app.notify(f"{name} is at its least, {least_text(name)}", severity="warning",
                            timeout=2)

    def action_pause(self) -> None:
        if self._refuse():
            return
        try:
            (self.engine.resume if self.state.paused else self.engine.pause)()
        except Exception as exc:  # noqa: BLE001
            self.app._local_log("error", f"pause/resume failed: {exc}")
        self.app.request_render()

    def action_submit(self, quiet: bool = False) -> None:
        """Submit one job of the config's preset. engine.submit may make or load the proving
        key (seconds the first time), so it runs in a thread and the header says so."""
        if (not quiet and self._refuse()) or self.engine is None:
            return
        self._submitting += 1
        self._submitted += 1
        if not self.state.jobs:
            self.app.notice = "preparing the first job: compiling kernels and making/loading keys…"
        engine = self.engine
        self.app.run_worker(lambda: self._submit(engine), thread=True, group="submit",
                            exit_on_error=False)
        self.app.request_render()

    def _submit(self, engine: Any) -> None:
        from app.live import make_job
        from app.messages import SubmitDone

        try:
            engine.submit(make_job(engine, self.config))
        except Exception as exc:  # noqa: BLE001 - the engine says why; the log shows it
            self.app.post_message(SubmitDone(f"submit failed: {exc}"))
        else:
            self.app.post_message(SubmitDone(""))

    def action_autofeed(self) -> None:
        if self._refuse():
            return
        self.autofeed = 0 if self.autofeed else 2
        self.app._local_log("info", f"auto-submit {'on' if self.autofeed else 'off'}")
        self.app.request_render()

    def feed(self) -> None:
        """Keep `autofeed` jobs in flight so that proofs keep moving."""
        if not self.autofeed or self.engine is None or self.state.paused:
            return
        in_flight = sum(1 for j in self.state.jobs.values() if j.verified is None and not j.failed)
        pending = max(self._submitting, self._submitted - len(self.state.jobs))
        for _ in range(max(0, self.autofeed - in_flight - pending)):
            self.action_submit(quiet=True)

    def action_save_config(self) -> None:
        from app.configsave import ConfigSaveError, save_knobs
        from app.defaults import DEFAULT_CONFIG

        if self.readonly:
            self._refuse()
            return
        path = self.config_path or DEFAULT_CONFIG  # a plain `sealtop` reads it next time
        try:
            changed = save_knobs(path, self.state.knobs)
        except ConfigSaveError as exc:
            self.app._local_log("error", str(exc))
            self.app.notify(str(exc), severity="error")
        else:
            what = ", ".join(changed) if changed else "no changes"
            self.app._local_log("knob", f"saved knobs to {path} ({what})")
            self.app.notify(f"saved {path}", timeout=2)
        self.app.request_render()

    def prompt_knob(self, name: str) -> None:
        from app.knobs import is_size, parse_answer, show
        from app.screens.prompt import PromptScreen
        from app.state import budget_bytes

        if self._refuse():
            return

        def done(answer: str | None) -> None:
            if not answer:
                return
            try:  # a count needs a whole number; a typed size must not read as 0 (no budget)
                value = parse_answer(name, answer)
            except ValueError as exc:
                self.app.notify(str(exc), severity="error")
                return
            self.set_knob(name, value)

        cur = self.state.knobs.get(name)
        shown = show(name, cur) if is_size(name) and budget_bytes(cur) else cur
        self.app.push_screen(PromptScreen(f"{name} (now {shown})", value=""), done)

    def commands(self) -> list[tuple[str, str, Callable[[], object]]]:
        """The palette's live commands (none in a read-only console)."""
        if self.readonly:
            return []
        from app.knobs import knob_names  # the settings table's live knobs

        def prompt(name: str) -> Callable[[], None]:
            return lambda: self.prompt_knob(name)

        cmds: list[tuple[str, str, Callable[[], object]]] = [
            (f"Set {n}…", f"Change {n} live", prompt(n)) for n in knob_names()]
        return cmds + [
            ("Pause / resume engine", "Stop or restart admissions", self.action_pause),
            ("Submit a job", "Queue one job of the config's preset", self.action_submit),
            ("Auto-submit on/off", "Keep jobs flowing", self.action_autofeed),
            ("Save knobs to config", "Write knobs to the TOML (keeps comments)",
             self.action_save_config),
        ]


def _start_resource_tracker() -> None:
    """Start multiprocessing's resource tracker now, while sys.stderr is the real one.

    While Textual runs, sys.stderr is a capture object whose fileno() is -1; the tracker, which
    the engine's first spawned worker or shared-memory segment would start, passes stderr's fd
    to its process and fails with "bad value(s) in fds_to_keep".
    """
    try:
        from multiprocessing import resource_tracker

        resource_tracker.ensure_running()
    except Exception:  # noqa: BLE001 - the engine reports its own start failure
        pass


__all__ = ["LiveStream", "LiveSource"]
