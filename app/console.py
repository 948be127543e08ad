"""The Textual application: themes, the refresh tick, screens and the command palette, around
one mode that the App hands what only that mode does.

- live (app/live_source.py's LiveSource): the embedded engine built in a thread, one tap on its
  stream (recorder and the console's bridge as sinks), the reducer folding the bridge's batches
  on the UI thread, and the tuning keys. The console's own log lines are `console` events of
  that stream, so they are recorded and a replay shows them.
- replay (app/replay.py's ReplayActions): a ReplayController feeding the same reducer from a
  recorded session at ×1..×64, with its keys and clock tick.
- compare (app/screens/compare.py's CompareSource): two sessions reduced to their final states,
  side by side.

The dashboard binds the modes' keys in Textual's ``app.`` namespace (``app.knob``,
``app.seek``...): the App resolves them on its mode, and says through check_action which the
mode offers. Panels are redrawn on a refresh timer (adjustable), never per event, so a busy
engine does not drive the console's CPU use.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from textual import on
from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.css.query import NoMatches
from textual.screen import Screen

from app.consoleapp import ConsoleApp
from app.live_source import LiveSource
from app.messages import EngineEvents, EngineStatus, FirstRunProgress, SubmitDone
from app.replay import ReplayActions, ReplayController
from app.screens.compare import CompareSource
from app.session_io import Session
from app.source import ConsoleSource
from app.state import DashboardState, apply
from app.widgets.header import HeaderContext
from app.widgets.render import Palette
from engine.stream.schema import console as console_line
from themes import DEFAULT_THEME, THEME_NAMES, THEMES

REFRESH_CHOICES = (0.1, 0.25, 0.5, 1.0, 2.0)
# The keys a mode may offer: the App asks its mode about each (SealtopApp.check_action).
MODE_ACTIONS = LiveSource.ACTIONS | ReplayActions.ACTIONS


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
        self.config = config
        self.config_path = config_path
        self.readonly = readonly
        self.record = record
        self.refresh_s = refresh
        self.notice = unavailable
        self.session = session
        self.attached_to = ""  # the engine socket `sealtop attach` watches (app/serve.py)
        self.sessions = sessions
        self._empty = DashboardState()  # shown where there is no mode to show (no session)
        self._dirty = True
        self._bar_dirty = False
        self._pal = Palette()
        self._pal_theme = ""
        self._t_start = time.monotonic()  # the header's clock runs from here until events do
        self._start_theme = theme or DEFAULT_THEME
        self.source: ConsoleSource | None = None  # LiveSource | ReplayActions | CompareSource
        if mode == "live":
            self.source = LiveSource(self, engine_factory, config=config, config_path=config_path,
                                     readonly=readonly, record=record, autofeed=autofeed,
                                     watch=watch, compile_first=compile_first)
        elif mode == "replay" and session is not None:
            controller = ReplayController(session.events)
            if autoplay:
                controller.playing = True
            else:
                controller.to_end()
            replay = ReplayActions(self, controller, session.warnings)
            self.source = replay
            self.notice = self.notice or replay.notice
        elif mode == "compare" and sessions:
            self.source = CompareSource(*sessions)

    # ---- state access ---------------------------------------------------------------------

    @property
    def state(self) -> DashboardState:
        return self.source.state if self.source is not None else self._empty

    @property
    def live(self) -> LiveSource | None:
        """The live mode's source (the engine, its tuning), None in the other modes."""
        return self.source if isinstance(self.source, LiveSource) else None

    @property
    def replay(self) -> ReplayActions | None:
        """The replay mode's source (its keys and controller), None in the other modes."""
        return self.source if isinstance(self.source, ReplayActions) else None

    @property
    def engine(self) -> Any:
        return self.live.engine if self.live is not None else None

    @property
    def controller(self) -> ReplayController | None:
        return self.replay.controller if self.replay is not None else None

    @property
    def autofeed(self) -> int:
        """Jobs the live mode keeps in flight (0 = off; always 0 in the other modes)."""
        return self.live.autofeed if self.live is not None else 0

    @autofeed.setter
    def autofeed(self, n: int) -> None:
        if self.live is not None:
            self.live.autofeed = n

    @property
    def can_tune(self) -> bool:
        return self.live is not None and self.live.can_tune

    @property
    def _engine_failed(self) -> bool:
        return self.live is not None and self.live.failed

    @property
    def _watchers(self) -> Any:
        return self.live.watchers if self.live is not None else None

    def bridge_tids(self) -> list[int]:
        """Kernel ids of the threads that carry the live stream to the UI (the console CPU
        benchmark adds their CPU time to the event loop's)."""
        return self.source.thread_ids() if self.source is not None else []

    def replay_seek(self, where: str) -> bool:
        """Seek the replay (seconds, "50%", "start", "end"); False outside replay or for a
        time it cannot read."""
        return self.source.seek(where) if self.source is not None else False

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
        first = self.source.first_screen() if self.source is not None else None
        if first is not None:
            self.push_screen(first)
        elif self.home is not None:
            self.push_screen(self.home())
        else:
            from app.screens.dashboard import DashboardScreen

            self.push_screen(DashboardScreen())
        self._refresh_timer = self.set_interval(self.refresh_s, self._on_refresh)
        if self.source is not None and self.source.TICK_S > 0:
            self.set_interval(self.source.TICK_S, self._on_tick)
        if self.source is not None:
            self.source.start()
        self.request_render()

    def watch_theme(self, theme: str) -> None:
        self._dirty = True
        self.call_after_refresh(self.render_views)

    async def action_quit(self) -> None:
        self._stop_mode()
        self.exit()

    def on_unmount(self) -> None:
        """However the app ends (q, ctrl+c, a test's exit), stop the engine and the recorder."""
        self._stop_mode()

    def _stop_mode(self) -> None:
        if self.source is not None:
            self.source.shutdown()

    # ---- what the live source's threads post ----------------------------------------------

    @on(FirstRunProgress)
    def _on_first_run(self, message: FirstRunProgress) -> None:
        if self.live is not None:  # posted by the live source's threads only
            self.live.on_first_run(message.text)
        self._dirty = True

    @on(EngineEvents)
    def _on_engine_events(self, message: EngineEvents) -> None:
        if self.live is not None:  # posted by the live source's threads only
            self.live.on_events(message.events)
        for take in self.listeners:
            take(message.events)
        self._dirty = True

    @on(EngineStatus)
    def _on_engine_status(self, message: EngineStatus) -> None:
        if self.live is not None:  # posted by the live source's threads only
            self.live.on_status(message.text, message.level, message.engine, message.state)
        if self.screen_stack:  # a status can arrive while the app closes, its screens gone
            self.screen.refresh_bindings()  # tuning keys become available (or not)

    @on(SubmitDone)
    def _on_submit_done(self, message: SubmitDone) -> None:
        if self.live is not None:  # posted by the live source's threads only
            self.live.on_submit_done(message.error)

    def _local_log(self, level: str, text: str) -> None:
        """A console-side log line (an action and its outcome, a notice). While the live stream
        runs it is a `console` event of that stream (recorded, replayed, seekable); without one
        (no engine, or a replay's own notices) it is folded into the shown state directly."""
        if self.source is None or not self.source.say(level, text):
            apply(self.state, console_line(self.state.t, level, text))
        self._dirty = True

    # ---- refresh --------------------------------------------------------------------------

    def _on_refresh(self) -> None:
        if self.source is not None and self.source.refresh():
            self._dirty = True  # the header's clock runs while the engine prepares
        self.render_views()

    def _on_tick(self) -> None:
        if self.source is None:
            return
        changed, moved = self.source.tick()
        self._dirty |= changed
        self._bar_dirty |= moved

    def header_context(self) -> HeaderContext:
        source = self.source
        return HeaderContext(
            mode=source.header_mode() if source is not None else self.mode,
            recording=source.recording() if source is not None else None,
            readonly=self.readonly or source is None or "pause" not in source.ACTIONS,
            refresh=self.refresh_s,
            replay=source.header() if source is not None else "",
            uptime=time.monotonic() - self._t_start,
            notice=self.notice,
        )

    def replay_bar(self) -> str:
        return self.source.bar() if self.source is not None else ""

    def palette(self) -> Palette:
        """The palette of the current theme (one per theme: views cache by it)."""
        if self._pal_theme != self.theme:
            self._pal, self._pal_theme = Palette.from_theme(self.current_theme), self.theme
        return self._pal

    def render_proofs(self) -> None:
        """Redraw the proofs table alone, now: after a sort or filter change, which changes
        nothing else. Redrawing every panel for it would cost the key press most of its latency;
        the other panels are redrawn on the next tick as usual."""
        for s in self.screen_stack:
            show = getattr(s, "show_proofs", None)
            if show is not None and s.is_mounted:
                try:
                    show(self.state, self.palette())
                except NoMatches:  # still composing: its mount draws it
                    self.request_render()

    def render_views(self) -> None:
        """Redraw whatever screen is showing, if anything changed since the last redraw."""
        if not (self._dirty or self._bar_dirty):
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

    # ---- actions --------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """A mode's key is the mode's to say: hidden (False) where the mode never offers it
        (replay's keys live, tuning in replay or a read-only console), shown disabled (None)
        where it is only off for now (engine not running)."""
        if action in MODE_ACTIONS:
            return self.source.offers(action) if self.source is not None else False
        return True

    # The modes' keys (MODE_ACTIONS), bound as ``app.NAME`` by the dashboard and the hosts view;
    # check_action lets each run only where its mode offers it.

    def action_knob(self, name: str, direction: int) -> None:
        if self.live is not None:
            self.live.action_knob(name, direction)

    def action_pause(self) -> None:
        if self.live is not None:
            self.live.action_pause()

    def action_submit(self) -> None:
        if self.live is not None:
            self.live.action_submit()

    def action_save_config(self) -> None:
        if self.live is not None:
            self.live.action_save_config()

    def action_autofeed(self) -> None:
        if self.live is not None:
            self.live.action_autofeed()

    def action_play(self) -> None:
        if self.replay is not None:
            self.replay.action_play()

    def action_step(self, n: int) -> None:
        if self.replay is not None:
            self.replay.action_step(n)

    def action_speed(self, d: int) -> None:
        if self.replay is not None:
            self.replay.action_speed(d)

    def action_seek(self) -> None:
        if self.replay is not None:
            self.replay.action_seek()

    def action_seek_end(self) -> None:
        if self.replay is not None:
            self.replay.action_seek_end()

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
        for title, help_text, run in self.source.commands() if self.source is not None else []:
            yield SystemCommand(title, help_text, run)


def _hosts_screen() -> Screen:
    from app.screens.hosts import HostsScreen

    return HostsScreen()


__all__ = ["SealtopApp", "EngineEvents", "EngineStatus"]

if TYPE_CHECKING:  # SealtopApp is the ConsoleApp its screens and widgets are typed against
    _checked: ConsoleApp = SealtopApp("live")
