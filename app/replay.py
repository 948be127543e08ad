"""Replay control: which prefix of a recorded stream the dashboard is showing.

Plain Python so that it is tested without a terminal. The reducer is pure, so any position is
reached by reducing the prefix; stepping back rebuilds from the nearest checkpoint instead of
undoing events. ReplayActions is the replay mode's side of the console (its keys, palette
commands and clock tick), driving the app it is given.
"""

from __future__ import annotations

import bisect
import copy
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from app.source import ConsoleSource
from app.state import DashboardState, apply
from engine.stream.schema import Event

SPEEDS = (1, 2, 4, 8, 16, 32, 64)
CHECKPOINT_EVERY = 500  # events between saved states, for fast seeks backwards


def seek_target(where: str, duration: float) -> float:
    """The session time an operator's seek request names: seconds ("12.5", "12.5s"), a
    percentage of the recording ("50%"), "start" (or "0", "^") or "end" (or "$"). ValueError for
    anything else, a negative or non-finite time included; times past the end clamp to it."""
    w = where.strip().lower()
    if w in ("end", "$"):
        return duration
    if w in ("start", "^"):
        return 0.0
    if w.endswith("%"):
        t = duration * float(w[:-1]) / 100.0
    else:
        t = float(w[:-1] if w.endswith("s") else w)
    if not math.isfinite(t) or t < 0:
        raise ValueError(f"not a time in the recording: {where!r}")
    return min(t, duration)


def control_bar(c: ReplayController, width: int = 40) -> str:
    """The replay control bar: play state, speed, clock, a progress bar and the keys."""
    frac = c.clock / c.duration if c.duration else 1.0
    full = int(round(frac * width))
    icon = "▶ playing" if c.playing else "⏸ paused "
    return (
        f" {icon}  ×{c.speed:<2}  {c.clock:7.2f} / {c.duration:.2f} s  "
        f"{'█' * full}{'░' * (width - full)}  event {c.pos}/{len(c.events)}   "
        "space play/pause · [ ] step · < > speed · g seek · G end"
    )


@dataclass
class ReplayController:
    """Plays a stream of events into a DashboardState at ×1..×64 of recorded time."""

    events: list[Event]
    state: DashboardState = field(default_factory=DashboardState)
    pos: int = 0  # events[:pos] are applied
    clock: float = 0.0  # session time being shown
    speed: int = 1
    playing: bool = False
    _checkpoints: dict[int, DashboardState] = field(default_factory=dict)
    _times: list[float] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._times = [float(e.get("t", 0.0)) for e in self.events]
        self._checkpoints[0] = copy.deepcopy(self.state)

    @property
    def duration(self) -> float:
        return self._times[-1] if self._times else 0.0

    @property
    def at_end(self) -> bool:
        return self.pos >= len(self.events)

    def _apply_to(self, target: int) -> None:
        """Move so that exactly events[:target] are applied."""
        target = max(0, min(target, len(self.events)))
        if target < self.pos:
            base = max(k for k in self._checkpoints if k <= target)
            self.state = copy.deepcopy(self._checkpoints[base])
            self.pos = base
        while self.pos < target:
            apply(self.state, self.events[self.pos])
            self.pos += 1
            if self.pos % CHECKPOINT_EVERY == 0 and self.pos not in self._checkpoints:
                self._checkpoints[self.pos] = copy.deepcopy(self.state)

    def advance(self, dt: float) -> int:
        """Play dt wall seconds at the current speed; return how many events were applied."""
        if not self.playing:
            return 0
        before = self.pos
        self.clock = min(self.duration, self.clock + dt * self.speed)
        self._apply_to(bisect.bisect_right(self._times, self.clock))
        if self.at_end:
            self.playing = False
        return self.pos - before

    def step(self, n: int = 1) -> None:
        """Step n events forward (or back when negative) and pause."""
        self.playing = False
        self._apply_to(self.pos + n)
        self.clock = self._times[self.pos - 1] if self.pos else 0.0

    def seek(self, t: float) -> None:
        """Show the session as it was at time t (seconds), clamped to the recording."""
        t = max(0.0, min(float(t), self.duration))
        self._apply_to(bisect.bisect_right(self._times, t))
        self.clock = t

    def to_end(self) -> None:
        self.seek(self.duration)

    def seek_to(self, where: str) -> None:
        """Seek as an operator asks (see seek_target) and pause; ValueError if it names no
        time."""
        self.seek(seek_target(where, self.duration))
        self.playing = False

    def toggle(self) -> bool:
        if self.at_end and not self.playing:
            self.seek(0.0)
        self.playing = not self.playing
        return self.playing

    def faster(self) -> int:
        i = SPEEDS.index(self.speed) if self.speed in SPEEDS else 0
        self.speed = SPEEDS[min(i + 1, len(SPEEDS) - 1)]
        return self.speed

    def slower(self) -> int:
        i = SPEEDS.index(self.speed) if self.speed in SPEEDS else 0
        self.speed = SPEEDS[max(i - 1, 0)]
        return self.speed


class ReplayActions(ConsoleSource):
    """The replay mode of the console: its keys (the dashboard's ``app.play``, ``app.step``,
    ``app.speed``, ``app.seek``, ``app.seek_end``), its palette commands, its clock tick and what
    the header and control bar say. ``app`` is the console (notify, request_render, push_screen)."""

    ACTIONS = frozenset({"play", "step", "speed", "seek", "seek_end"})
    TICK_S = 0.05  # s between replay clock advances

    def __init__(self, app, controller: ReplayController, warnings: list[str]) -> None:
        self.app = app
        self.controller = controller
        self.warnings = list(warnings)
        # a crashed run's cut end: one header line, cut to fit, so it names the file by its name
        session = getattr(app, "session", None)
        short = [w.replace(session.path, session.name) if session is not None else w
                 for w in warnings]
        self.notice = "; ".join(short)
        self._last_tick = time.monotonic()

    def start(self) -> None:
        """Once the console is up: each warning in full, as a toast (the header's notice line is
        cut to the screen's width)."""
        for w in self.warnings:
            self.app.notify(w, severity="warning", timeout=15)

    @property
    def state(self) -> DashboardState:
        return self.controller.state

    @state.setter
    def state(self, value: DashboardState) -> None:
        self.controller.state = value

    def tick(self) -> tuple[bool, bool]:
        """Advance the clock by the wall time since the last tick: (state changed, bar moved)."""
        now = time.monotonic()
        dt, self._last_tick = now - self._last_tick, now
        if not self.controller.playing:
            return False, False
        return self.controller.advance(dt) > 0, True

    def header_mode(self) -> str:
        return "replay"

    def header(self) -> str:
        c = self.controller
        return f"{'▶' if c.playing else '⏸'} ×{c.speed}  {c.clock:.2f}/{c.duration:.2f} s"

    def bar(self) -> str:
        return control_bar(self.controller)

    def action_play(self) -> None:
        self.controller.toggle()
        self._last_tick = time.monotonic()
        self.app.request_render()

    def action_step(self, n: int) -> None:
        self.controller.step(n)
        self.app.request_render()

    def action_speed(self, d: int) -> None:
        s = self.controller.faster() if d > 0 else self.controller.slower()
        self.app.notify(f"replay ×{s}", timeout=1)
        self.app.request_render()

    def seek(self, where: str) -> bool:
        """Seek to seconds ("12.5", "12.5s"), a percentage ("50%"), "start" or "end"."""
        try:
            self.controller.seek_to(where)
        except ValueError:
            self.app.notify(f"not a time: {where!r} (try 12.5, 50% or end)", severity="error")
            return False
        self.app.request_render()
        return True

    def action_seek(self) -> None:
        from app.screens.prompt import PromptScreen

        def done(answer: str | None) -> None:
            if answer:
                self.seek(answer)

        self.app.push_screen(
            PromptScreen(f"seek to (0–{self.controller.duration:.2f} s, 50%, start, end)",
                         placeholder="seconds"), done)

    def action_seek_end(self) -> None:
        self.seek("end")

    def commands(self) -> list[tuple[str, str, Callable[[], object]]]:
        """The palette's replay commands: (title, help, what it does)."""
        return [
            ("Replay: play/pause", "Toggle playback", self.action_play),
            ("Replay: seek…", "Jump to a time", self.action_seek),
            ("Replay: faster", "Double the speed", lambda: self.action_speed(1)),
            ("Replay: slower", "Halve the speed", lambda: self.action_speed(-1)),
            ("Replay: go to end", "Show the final state", self.action_seek_end),
        ]

    def offers(self, action: str) -> bool | None:
        return action in self.ACTIONS
