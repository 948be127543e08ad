"""The console's modes without a terminal: what each offers the App and what its keys do,
driven through a stand-in for the App (it records what a mode asks of the UI)."""

from __future__ import annotations

import random

import pytest

from app.live_source import LiveSource
from app.replay import SPEEDS, ReplayActions, ReplayController
from app.state import reduce
from engine.stream import schema as E


class FakeApp:
    """What a mode calls on the App: notify, request_render, push_screen, _local_log."""

    def __init__(self) -> None:
        self.notices: list[tuple[str, str]] = []
        self.renders = 0
        self.pushed: list = []
        self.lines: list[tuple[str, str]] = []
        self.notice = ""

    def notify(self, text: str, severity: str = "information", timeout: float = 0) -> None:
        self.notices.append((severity, text))

    def request_render(self) -> None:
        self.renders += 1

    def push_screen(self, screen, callback=None) -> None:
        self.pushed.append((screen, callback))

    def _local_log(self, level: str, text: str) -> None:
        self.lines.append((level, text))


def _events(n: int) -> list[dict]:
    evs = [E.session_start(0.0, {}, {"cpus": 2}, [], "x")]
    evs += [E.error(0.1 * (i + 1), "w", f"e{i}") for i in range(n)]
    return evs


def test_replay_actions_drive_the_controller():
    app = FakeApp()
    n = random.randint(20, 60)
    events = _events(n)
    ra = ReplayActions(app, ReplayController(events), ["cut off at line 9"])
    assert ra.notice == "cut off at line 9" and ra.header_mode() == "replay"
    assert all(ra.offers(a) for a in ReplayActions.ACTIONS)
    assert not ra.offers("knob") and not ra.offers("pause")
    ra.action_speed(1)
    assert ra.controller.speed == SPEEDS[1] and app.notices[-1] == ("information", "replay ×2")
    k = random.randint(1, n)
    ra.action_step(k)
    assert ra.controller.pos == k and ra.state.log == reduce(events[:k]).log
    assert ra.seek("end") and ra.controller.at_end
    assert ra.state.log == reduce(events).log
    assert not ra.seek("soon") and app.notices[-1][0] == "error"  # refused, in one notice
    assert ra.controller.at_end  # a bad time moves nothing
    ra.action_play()  # at the end: back to the start and playing
    assert ra.controller.playing and ra.controller.clock == 0.0 and ra.controller.pos == 1
    assert "▶" in ra.header() and f"event 1/{n + 1}" in ra.bar()
    ra.controller.speed = 64
    ra._last_tick -= 1.0  # a second of wall time at ×64 covers the whole recording
    changed, moved = ra.tick()
    assert changed and moved and ra.controller.at_end and not ra.controller.playing
    assert ra.tick() == (False, False)  # paused at the end: nothing moves
    ra.action_seek()
    assert len(app.pushed) == 1  # the prompt
    titles = [t for t, _, _ in ra.commands()]
    assert "Replay: seek…" in titles and len(titles) == 5


class _Engine:
    def __init__(self) -> None:
        self.knobs: list[tuple[str, object]] = []
        self.paused = 0

    def set_knob(self, name, value):
        if value < 1:
            raise ValueError("must be at least 1")
        self.knobs.append((name, value))

    def pause(self):
        self.paused += 1


@pytest.mark.parametrize("readonly", [False, True])
def test_live_source_offers_tuning_only_where_it_works(readonly):
    app = FakeApp()
    live = LiveSource(app, None, config=None, config_path=None, readonly=readonly, record=None,
                      autofeed=0, watch=None, compile_first=False)
    assert live.header_mode() == "unavailable" and not live.can_tune
    for action in LiveSource.ACTIONS:
        assert live.offers(action) is (False if readonly else None)  # hidden, or off for now
    assert live.offers("seek") is False
    live.engine = _Engine()
    assert live.can_tune is (not readonly)
    for action in LiveSource.ACTIONS:
        assert live.offers(action) is (False if readonly else True)
    n = random.randint(2, 9)
    live.state.knobs["partition_workers"] = n
    live.action_knob("partition_workers", 1)
    live.action_pause()
    if readonly:
        assert live.engine.knobs == [] and live.engine.paused == 0
        assert all(sev == "warning" and "read-only" in t for sev, t in app.notices)
        assert live.commands() == []
    else:
        assert live.engine.knobs == [("partition_workers", n + 1)] and live.engine.paused == 1
        assert not live.set_knob("partition_workers", 0)  # the engine's refusal: a log line
        assert app.lines[-1][0] == "error" and "refused" in app.lines[-1][1]
        assert "Pause / resume engine" in [t for t, _, _ in live.commands()]
