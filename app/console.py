"""The Textual application: one app for live, replay and compare modes.

- live: a thread worker builds the embedded Engine (slow the first time: JIT and keys) and
  puts one tap (engine/stream/tap.py) on its subscribe() queue: the recorder and the console's
  bridge are its sinks, the bridge posts batches of events as messages, and the reducer folds
  them into the state on the UI thread. The console's own log lines (actions, their outcome,
  notices) are `console` events published into the same tap, so they are recorded and a replay
  shows them. Tuning keys call the Engine API; the engine confirms each change with a `knob`
  event, which is what the log shows.
- replay: a ReplayController feeds the same reducer from a recorded session at ×1..×64.
- compare: two sessions reduced to their final states, side by side.

Panels are redrawn on a refresh timer (adjustable), never per event, so a busy engine does not
drive the console's CPU use.

Why this module is longer than most (~680 lines): it is the Textual glue of three modes (screens,
refresh, themes, palette commands, and the thin actions each key binds to). What has an idea of
its own lives apart: the live source in app/live_source.py, the replay clock and seek parsing in
app/replay.py, the state in app/state.py.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Callable, Iterable

from textual import on, work
from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.css.query import NoMatches
from textual.message import Message
from textual.screen import Screen

from app.live_source import LiveStream
from app.replay import ReplayController, control_bar
from app.session_io import Session
from app.state import DashboardState, apply, budget_bytes, fmt_bytes, reduce
from engine.stream.schema import console as console_line
from app.widgets.header import HeaderContext
from app.widgets.render import Palette
from themes import DEFAULT_THEME, THEME_NAMES, THEMES

REFRESH_CHOICES = (0.1, 0.25, 0.5, 1.0, 2.0)
# Actions a mode may not offer (see SealtopApp.check_action).
TUNING_ACTIONS = frozenset({"knob", "pause", "submit", "save_config", "autofeed"})
REPLAY_ACTIONS = frozenset({"play", "step", "speed", "seek", "seek_end"})
REPLAY_TICK = 0.05  # s between replay clock advances
GiB = 2**30


class EngineEvents(Message):
    """A batch of events read from the engine's queue (posted from the bridge thread)."""

    def __init__(self, events: list[dict]) -> None:
        super().__init__()
        self.events = events


class FirstRunProgress(Message):
    """A tick of the first-run compile in its child process (app/firstrun.py)."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text


class EngineStatus(Message):
    """The bridge's own news: engine built, started, failed or stopped."""

    def __init__(self, text: str, level: str = "info", engine: Any = None, state: str = "") -> None:
        super().__init__()
        self.text, self.level, self.engine, self.state = text, level, engine, state


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


class SubmitDone(Message):
    """A submission finished in its thread; error is empty on success."""

    def __init__(self, error: str) -> None:
        super().__init__()
        self.error = error


class SealtopApp(App):
    """sealtop's console."""

    CSS_PATH = "sealtop.tcss"
    TITLE = "sealtop"
    BINDINGS = [
        Binding("q", "quit", "Quit", id="quit"),
        Binding("question_mark", "help", "Help", id="help"),
        Binding("f1", "help", "Help", show=False, id="help-f1"),
        Binding("t", "next_theme", "Theme", show=False, tooltip="Next theme", id="theme"),
        Binding("r", "refresh_rate", "Refresh interval", show=False, id="refresh-rate"),
    ]

    def __init__(
        self,
        mode: str,
        *,
        engine_factory: Callable[[], Any] | None = None,
        config: Any = None,
        config_path: str | None = None,
        session: Session | None = None,
        sessions: tuple[Session, Session] | None = None,
        readonly: bool = False,
        record: str | None = None,
        refresh: float = 1.0,
        theme: str | None = None,
        autoplay: bool = True,
        autofeed: int = 0,
        unavailable: str = "",
        watch: Any = None,
        compile_first: bool = False,
        home: Callable[[], Screen] | None = None,
    ) -> None:
        """``watch`` (engine.watchers.Watch): serve /metrics and offer the attach socket while
        the embedded engine runs. ``home`` builds the first screen instead of the dashboard
        (the farm console's hosts view); ``listeners`` (a list, added to after construction)
        see every batch of live events on the UI thread, after the state folded it."""
        super().__init__()
        self.mode = mode  # live | replay | compare
        self.home = home
        self.listeners: list[Callable[[list[dict]], None]] = []
        self.engine_factory = engine_factory
        self.engine: Any = None
        self.config = config
        self.config_path = config_path
        self.readonly = readonly
        self.record = record
        self.refresh_s = refresh
        self.autofeed = autofeed  # keep this many jobs in flight (live); 0 = off
        self.notice = unavailable
        self._live = DashboardState()
        self._dirty = True
        self._bar_dirty = False
        self._engine_failed = False
        self._pal = Palette()
        self._pal_theme = ""
        self._submitted = 0
        self._submitting = 0
        self._stream: LiveStream | None = None  # the live source, while the engine runs
        self.watch = watch
        # compile a fresh install's kernels in a child process before building the engine
        self.compile_first = compile_first
        self._first_run_stop = threading.Event()
        self._t_start = time.monotonic()  # the header's clock runs from here until events do
        self._watchers: Any = None  # engine.watchers.Watchers, while the engine runs
        self.session = session
        self.sessions = sessions
        self.controller: ReplayController | None = None
        if mode == "replay" and session is not None:
            self.notice = self.notice or "; ".join(session.warnings)  # a crashed run's cut end
            self.controller = ReplayController(session.events)
            if autoplay:
                self.controller.playing = True
            else:
                self.controller.to_end()
        self._last_tick = time.monotonic()
        self._start_theme = theme or DEFAULT_THEME
        if mode == "live" and engine_factory is not None:
            _start_resource_tracker()

    # ---- state access ---------------------------------------------------------------------

    @property
    def state(self) -> DashboardState:
        if self.controller is not None:
            return self.controller.state
        return self._live

    def bridge_tids(self) -> list[int]:
        """Kernel ids of the threads that carry the live stream to the UI (the console CPU
        benchmark adds their CPU time to the event loop's)."""
        return self._stream.thread_ids() if self._stream is not None else []

    @property
    def can_tune(self) -> bool:
        return self.mode == "live" and not self.readonly and self.engine is not None

    def request_render(self) -> None:
        """Mark the views stale and redraw on the next frame (after operator actions, and once a
        screen has mounted). The proofs table recomputes its rows even if no proof changed,
        since the operator may have changed its sort or filter."""
        self._dirty = True
        from app.widgets.proofs import ProofsTable

        for s in self.screen_stack:
            for table in s.query(ProofsTable):
                table.refilter()
        self.call_after_refresh(self.render_views)

    # ---- lifecycle ------------------------------------------------------------------------

    def on_mount(self) -> None:
        for theme in THEMES:
            self.register_theme(theme)
        self.theme = self._start_theme if self._start_theme in self.available_themes else DEFAULT_THEME
        if self.mode == "compare" and self.sessions:
            from app.screens.compare import CompareScreen

            a, b = self.sessions
            self.push_screen(CompareScreen(reduce(a.events), reduce(b.events), a.name, b.name))
        elif self.home is not None:
            self.push_screen(self.home())
        else:
            from app.screens.dashboard import DashboardScreen

            self.push_screen(DashboardScreen())
        self._refresh_timer = self.set_interval(self.refresh_s, self._on_refresh)
        if self.mode == "replay":
            self.set_interval(REPLAY_TICK, self._on_replay_tick)
        if self.mode == "live":
            if self.engine_factory is not None:
                self.notice = self.notice or "engine starting… (first run compiles kernels and makes keys)"
                self.run_engine()
            else:
                self._local_log("error", self.notice or "embedded engine unavailable")
        self.request_render()

    def watch_theme(self, theme: str) -> None:
        self._dirty = True
        self.call_after_refresh(self.render_views)

    async def action_quit(self) -> None:
        self._shutdown_engine()
        self.exit()

    def on_unmount(self) -> None:
        """However the app ends (q, ctrl+c, a test's exit), stop the engine and the recorder."""
        self._shutdown_engine()

    def _shutdown_engine(self) -> None:
        self._first_run_stop.set()
        eng, self.engine = self.engine, None
        self.workers.cancel_group(self, "engine")
        if eng is not None:
            try:
                eng.stop(drain=False)
            except Exception:  # noqa: BLE001 - quitting must not fail
                pass
        if self._stream is not None:
            self._stream.end("console closed; engine stopped")
        self._close_watchers()

    def _close_watchers(self) -> None:
        watchers, self._watchers = self._watchers, None
        if watchers is not None:
            watchers.close()

    # ---- the engine bridge (thread worker) ------------------------------------------------

    @work(thread=True, exclusive=True, group="engine", exit_on_error=False)
    def run_engine(self) -> None:
        """Build the engine, put the live source on its stream (recorder, bridge), start it."""
        if self.compile_first:
            self._compile_in_child()
        try:
            engine = self.engine_factory()  # type: ignore[misc]
            if hasattr(engine, "progress"):  # first-run compilation and key setup, line by line
                engine.progress = lambda line: self.post_message(
                    EngineStatus(line.strip(), "info", state="preparing"))
            q = engine.subscribe()
        except Exception as exc:  # noqa: BLE001 - shown in the console, not raised
            self.post_message(EngineStatus(f"engine failed to start: {exc}", "error", state="unavailable"))
            return
        watchers = None
        if self.watch is not None:
            from engine.watchers import AddressError
            from engine.watchers import start_watchers

            try:
                watchers = start_watchers(engine, self.watch, self.config)
            except AddressError as exc:
                self.post_message(EngineStatus(str(exc), "error"))
        self._watchers = watchers
        stream = LiveStream(q, self.record, lambda b: self.post_message(EngineEvents(b)),
                            lambda level, text: self.post_message(EngineStatus(text, level)),
                            sinks=watchers.sinks() if watchers is not None else None)
        self._stream = stream
        try:
            engine.start()
        except Exception as exc:  # noqa: BLE001 - shown in the console, not raised
            stream.end(f"engine failed to start: {exc}")
            self._close_watchers()
            self.post_message(EngineStatus("", state="unavailable"))
            return
        for line in watchers.lines if watchers is not None else []:
            stream.say("info", line)  # after start: the session's first line is session_start
        self.post_message(EngineStatus("engine started", engine=engine, state="running"))

    def _compile_in_child(self) -> None:
        """On a fresh install, compile the kernels in a child process (the GIL stays free, so
        the console keeps drawing), with a progress line each tick; the engine then finds the
        cache warm. Each step's line is also a log line."""
        try:
            from engine.warmup import is_warm

            if is_warm():
                return
        except Exception:  # noqa: BLE001 - the engine compiles in-process, as before
            return
        from app.firstrun import compile_in_child

        said = [""]

        def report(p) -> None:
            self.post_message(FirstRunProgress(p.text()))
            if p.line and p.line != said[0]:
                said[0] = p.line
                self.post_message(EngineStatus(p.line, "info", state="preparing"))

        p = compile_in_child(report, stop=self._first_run_stop)
        if p.failed:
            self.post_message(EngineStatus(f"first-run compile in a child failed ({p.failed}); "
                                           "the engine compiles it itself", "warn"))

    @on(FirstRunProgress)
    def _on_first_run(self, message: FirstRunProgress) -> None:
        if not self._live.started:
            self.notice = message.text
            self._dirty = True

    @work(thread=True, group="engine-stop", exit_on_error=False)
    def stop_engine(self, drain: bool = True) -> None:
        """Stop the engine off the UI thread; the tap then delivers every event the engine
        emitted before it stopped, ends with the console's "engine stopped" line and closes."""
        eng = self.engine
        if eng is None:
            return
        try:
            eng.stop(drain=drain)
        except Exception as exc:  # noqa: BLE001
            self.post_message(EngineStatus(f"engine stop failed: {exc}", "error"))
        if self._stream is not None:
            self._stream.end("engine stopped")
        self._close_watchers()
        self.post_message(EngineStatus("", state="stopped"))

    @on(EngineEvents)
    def _on_engine_events(self, message: EngineEvents) -> None:
        for ev in message.events:
            apply(self._live, ev)
            if ev.get("kind") == "session_start":
                self.notice = ""
        for take in self.listeners:
            take(message.events)
        self._dirty = True

    @on(EngineStatus)
    def _on_engine_status(self, message: EngineStatus) -> None:
        if message.engine is not None:
            self.engine = message.engine
            self.notice = "" if self._live.started else "engine started; waiting for its first events…"
            self._feed()
        if message.state == "unavailable":
            self.notice = message.text or self.notice
            self._engine_failed = True
        if message.state == "preparing" and not self._live.started:
            self.notice = f"preparing: {message.text}"
        if message.state == "stopped":
            self.engine = None  # the stream's last line already said so (see _end_stream)
        if message.text:
            self._local_log(message.level, message.text)
        self.screen.refresh_bindings()  # tuning keys become available (or not)

    def _local_log(self, level: str, text: str) -> None:
        """A console-side log line (an action and its outcome, a notice). While the live stream
        runs it is a `console` event of that stream (recorded, replayed, seekable); without one
        (no engine, or a replay's own notices) it is folded into the shown state directly."""
        if self._stream is None or not self._stream.say(level, text):
            apply(self.state, console_line(self.state.t, level, text))
        self._dirty = True

    # ---- refresh --------------------------------------------------------------------------

    def _on_refresh(self) -> None:
        if self.mode == "live" and not self._live.started:
            self._dirty = True  # the header's clock runs while the engine prepares
        if self.mode == "live" and self.autofeed:
            self._feed()
        self.render_views()

    def _on_replay_tick(self) -> None:
        now = time.monotonic()
        dt, self._last_tick = now - self._last_tick, now
        if self.controller is not None and self.controller.playing:
            if self.controller.advance(dt):
                self._dirty = True
            self._bar_dirty = True

    def header_context(self) -> HeaderContext:
        c = self.controller
        replay = ""
        if c is not None:
            icon = "▶" if c.playing else "⏸"
            replay = f"{icon} ×{c.speed}  {c.clock:.2f}/{c.duration:.2f} s"
        return HeaderContext(
            mode="unavailable"
            if self.mode == "live" and (self.engine_factory is None or self._engine_failed)
            else self.mode,
            recording=self.record if self._stream is not None and self._stream.recording else None,
            readonly=self.readonly or self.mode != "live",
            refresh=self.refresh_s,
            replay=replay,
            uptime=time.monotonic() - self._t_start,
            notice=self.notice,
        )

    def replay_bar(self) -> str:
        return control_bar(self.controller) if self.controller is not None else ""

    def palette(self) -> Palette:
        """The palette of the current theme (one per theme: views cache by it)."""
        if self._pal_theme != self.theme:
            self._pal, self._pal_theme = Palette.from_theme(self.current_theme), self.theme
        return self._pal

    def render_proofs(self) -> None:
        """Redraw the proofs table alone, now: after a sort or filter change, which changes
        nothing else. Redrawing every panel for it would cost the key press most of its latency;
        the other panels are redrawn on the next tick as usual."""
        from app.screens.dashboard import DashboardScreen

        for s in self.screen_stack:
            if isinstance(s, DashboardScreen) and s.is_mounted:
                try:
                    s.show_proofs(self.state, self.palette())
                except NoMatches:  # still composing: its mount draws it
                    self.request_render()

    def render_views(self) -> None:
        """Redraw whatever screen is showing, if anything changed since the last redraw."""
        bar_dirty = getattr(self, "_bar_dirty", False)
        if not (self._dirty or bar_dirty):
            return
        drawn = False
        # Every screen with a redraw(app) is kept current: the dashboard stays so under a
        # detail or help screen.
        for s in self.screen_stack:
            redraw = getattr(s, "redraw", None)
            if redraw is None or not s.is_mounted:
                continue
            try:
                redraw(self)
                drawn = True
            except NoMatches:  # a screen still composing, or being torn down at exit
                continue
        if drawn:  # before the first screen mounts, stay dirty so its mount draws it
            self._dirty = self._bar_dirty = False

    # ---- actions: the dashboard binds these in the app namespace ---------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Hidden (False) where a mode never offers the action (replay, a read-only console);
        shown disabled (None) where it is only switched off for now (engine not running)."""
        if action in TUNING_ACTIONS:
            if self.mode != "live" or self.readonly:
                return False  # hidden: a read-only console never offers them
            return True if self.can_tune else None
        if action in REPLAY_ACTIONS:
            return self.mode == "replay"
        return True

    def action_knob(self, name: str, direction: int) -> None:
        self.nudge_knob(name, direction)

    def action_pause(self) -> None:
        self.toggle_pause()

    def action_submit(self) -> None:
        self.submit_job()

    def action_autofeed(self) -> None:
        self.toggle_autofeed()

    def action_save_config(self) -> None:
        self.save_config()

    def action_play(self) -> None:
        self.replay_toggle()

    def action_step(self, n: int) -> None:
        self.replay_step(n)

    def action_speed(self, d: int) -> None:
        self.replay_speed(d)

    def action_seek(self) -> None:
        self.replay_seek_prompt()

    def action_seek_end(self) -> None:
        self.replay_seek("end")

    # ---- actions shared by screens --------------------------------------------------------

    def action_help(self) -> None:
        from app.screens.help import HelpScreen

        if type(self.screen).__name__ == "HelpScreen":
            return
        self.push_screen(HelpScreen(self.screen))

    def action_next_theme(self) -> None:
        names = list(THEME_NAMES)
        i = names.index(self.theme) if self.theme in names else -1
        self.theme = names[(i + 1) % len(names)]
        self.notify(f"theme {self.theme}", timeout=1.5)

    def action_refresh_rate(self) -> None:
        choices = list(REFRESH_CHOICES)
        i = choices.index(self.refresh_s) if self.refresh_s in choices else 1
        self.set_refresh(choices[(i + 1) % len(choices)])

    def set_refresh(self, seconds: float) -> None:
        self.refresh_s = seconds
        self._refresh_timer.stop()
        self._refresh_timer = self.set_interval(seconds, self._on_refresh)
        self._local_log("info", f"refresh interval {seconds:g} s")
        self.request_render()

    def open_detail(self, job: int) -> None:
        from app.screens.detail import DetailScreen

        self.push_screen(DetailScreen(job))

    # ---- live tuning ------------------------------------------------------------------------

    def _refuse(self) -> bool:
        if self.can_tune:
            return False
        why = ("read-only console (--readonly)" if self.readonly
               else "not available in replay" if self.mode != "live" else "engine not running")
        self.notify(f"tuning disabled: {why}", severity="warning")
        return True

    def set_knob(self, name: str, value: Any) -> bool:
        """Ask the engine to change a knob; the engine's knob event confirms it in the log."""
        if self._refuse():
            return False
        try:
            self.engine.set_knob(name, value)
        except Exception as exc:  # noqa: BLE001 - the engine says why; show it
            self._local_log("error", f"{name} = {value} refused: {exc}")
            self.notify(f"{name}: {exc}", severity="error")
            self.request_render()
            return False
        shown = fmt_bytes(value) if name == "memory_budget" and value else value
        self.notify(f"{name} → {shown}", timeout=2)
        return True

    def nudge_knob(self, name: str, direction: int) -> None:
        """One step of a knob: ±1 for counts, ±1 GiB for the memory budget."""
        if self._refuse():
            return
        cur = self.state.knobs.get(name)
        if name == "memory_budget":
            b = budget_bytes(cur)
            if b is None:  # unlimited: either key sets a budget just above the current use
                b = (self.state.mem_total // GiB + 2) * GiB
                direction = min(direction, 0)
            new = max(GiB, (b // GiB + direction) * GiB)
        else:
            new = max(1, int(cur or 1) + direction)
        if new != cur:
            self.set_knob(name, new)

    def toggle_pause(self) -> None:
        if self._refuse():
            return
        try:
            if self.state.paused:
                self.engine.resume()
            else:
                self.engine.pause()
        except Exception as exc:  # noqa: BLE001
            self._local_log("error", f"pause/resume failed: {exc}")
        self.request_render()

    def submit_job(self, quiet: bool = False) -> None:
        """Submit one job of the config's preset. engine.submit may make or load the proving
        key (seconds the first time), so it runs in a thread and the header says so."""
        if not quiet and self._refuse():
            return
        if self.engine is None:
            return
        self._submitting += 1
        self._submitted += 1
        if not self._live.jobs:
            self.notice = "preparing the first job: compiling kernels and making/loading keys…"
        self._submit_in_thread(self.engine)
        self.request_render()

    @work(thread=True, group="submit", exit_on_error=False)
    def _submit_in_thread(self, engine: Any) -> None:
        from app.live import make_job

        try:
            engine.submit(make_job(engine, self.config))
        except Exception as exc:  # noqa: BLE001 - the engine says why; the log shows it
            self.post_message(SubmitDone(f"submit failed: {exc}"))
        else:
            self.post_message(SubmitDone(""))

    @on(SubmitDone)
    def _on_submit_done(self, message: SubmitDone) -> None:
        self._submitting -= 1
        if self.notice.startswith("preparing the first job"):
            self.notice = ""
        if message.error:
            self._submitted -= 1
            self.autofeed = 0
            self._local_log("error", message.error)
        self.request_render()

    def toggle_autofeed(self) -> None:
        if self._refuse():
            return
        self.autofeed = 0 if self.autofeed else 2
        self._local_log("info", f"auto-submit {'on' if self.autofeed else 'off'}")
        self.request_render()

    def _feed(self) -> None:
        """Keep `autofeed` jobs in flight so that proofs keep moving."""
        if not self.autofeed or self.engine is None or self.state.paused:
            return
        in_flight = sum(1 for j in self._live.jobs.values() if j.verified is None and not j.failed)
        pending = max(self._submitting, self._submitted - len(self._live.jobs))
        for _ in range(max(0, self.autofeed - in_flight - pending)):
            self.submit_job(quiet=True)

    def save_config(self) -> None:
        if self.readonly or self.mode != "live":
            self._refuse()
            return
        from app.configsave import ConfigSaveError, save_knobs

        from app.main import DEFAULT_CONFIG

        path = self.config_path or DEFAULT_CONFIG  # a plain `sealtop` reads it next time
        try:
            changed = save_knobs(path, self.state.knobs)
        except ConfigSaveError as exc:
            self._local_log("error", str(exc))
            self.notify(str(exc), severity="error")
        else:
            what = ", ".join(changed) if changed else "no changes"
            self._local_log("knob", f"saved knobs to {path} ({what})")
            self.notify(f"saved {path}", timeout=2)
        self.request_render()

    # ---- replay -----------------------------------------------------------------------------

    def replay_toggle(self) -> None:
        if self.controller is None:
            return
        self.controller.toggle()
        self._last_tick = time.monotonic()
        self.request_render()

    def replay_step(self, n: int) -> None:
        if self.controller is None:
            return
        self.controller.step(n)
        self.request_render()

    def replay_speed(self, d: int) -> None:
        if self.controller is None:
            return
        s = self.controller.faster() if d > 0 else self.controller.slower()
        self.notify(f"replay ×{s}", timeout=1)
        self.request_render()

    def replay_seek(self, where: str) -> bool:
        """Seek to seconds ("12.5", "12.5s"), a percentage ("50%"), "start" or "end"."""
        c = self.controller
        if c is None:
            return False
        try:
            c.seek_to(where)
        except ValueError:
            self.notify(f"not a time: {where!r} (try 12.5, 50% or end)", severity="error")
            return False
        self.request_render()
        return True

    def replay_seek_prompt(self) -> None:
        if self.controller is None:
            return
        from app.screens.prompt import PromptScreen

        def done(answer: str | None) -> None:
            if answer:
                self.replay_seek(answer)

        self.push_screen(
            PromptScreen(f"seek to (0–{self.controller.duration:.2f} s, 50%, start, end)",
                         placeholder="seconds"),
            done,
        )

    def prompt_knob(self, name: str) -> None:
        if self._refuse():
            return
        from app.screens.prompt import PromptScreen

        def done(answer: str | None) -> None:
            if not answer:
                return
            value: Any = answer
            if name != "memory_budget":
                try:
                    value = int(answer)
                except ValueError:
                    self.notify(f"{name} needs a whole number", severity="error")
                    return
            else:
                b = budget_bytes(answer) if not answer.isdigit() else int(answer)
                value = b or 0
            self.set_knob(name, value)

        cur = self.state.knobs.get(name)
        shown = fmt_bytes(budget_bytes(cur)) if name == "memory_budget" and budget_bytes(cur) else cur
        self.push_screen(PromptScreen(f"{name} (now {shown})", value=""), done)

    # ---- command palette --------------------------------------------------------------------

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        yield SystemCommand("Help: keys", "List every key binding", self.action_help)
        yield SystemCommand("Hosts of the farm", "One row per host of a farm session",
                            lambda: self.push_screen(_hosts_screen()))
        yield SystemCommand("Next theme", "Cycle dark / light / high-contrast", self.action_next_theme)
        for s in REFRESH_CHOICES:
            yield SystemCommand(f"Refresh every {s:g} s", "Set the refresh interval",
                                lambda s=s: self.set_refresh(s))
        if self.mode == "live" and not self.readonly:
            for name in ("partition_workers", "gpu_channel_capacity", "memory_budget"):
                yield SystemCommand(f"Set {name}…", f"Change {name} live",
                                    lambda n=name: self.prompt_knob(n))
            yield SystemCommand("Pause / resume engine", "Stop or restart admissions", self.toggle_pause)
            yield SystemCommand("Submit a job", "Queue one job of the config's preset", self.submit_job)
            yield SystemCommand("Auto-submit on/off", "Keep jobs flowing", self.toggle_autofeed)
            yield SystemCommand("Save knobs to config", "Write knobs to the TOML (keeps comments)",
                                self.save_config)
        if self.mode == "replay":
            yield SystemCommand("Replay: play/pause", "Toggle playback", self.replay_toggle)
            yield SystemCommand("Replay: seek…", "Jump to a time", self.replay_seek_prompt)
            yield SystemCommand("Replay: faster", "Double the speed", lambda: self.replay_speed(1))
            yield SystemCommand("Replay: slower", "Halve the speed", lambda: self.replay_speed(-1))
            yield SystemCommand("Replay: go to end", "Show the final state", lambda: self.replay_seek("end"))


def _hosts_screen() -> Screen:
    from app.screens.hosts import HostsScreen

    return HostsScreen()


__all__ = ["SealtopApp", "EngineEvents", "EngineStatus"]
