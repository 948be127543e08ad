"""The console's one typed source (app.source.ConsoleSource): every mode is one, the App calls
its modes' keys through methods of its own (no attribute forwarding), and a key runs only in the
mode that has it. No terminal: the App is built, not run."""

from __future__ import annotations

import inspect
import random

import pytest

pytest.importorskip("textual")

from app.console import MODE_ACTIONS, SealtopApp  # noqa: E402
from app.live_source import LiveSource  # noqa: E402
from app.replay import ReplayActions  # noqa: E402
from app.screens.compare import CompareSource  # noqa: E402
from app.session_io import Session  # noqa: E402
from app.source import ConsoleSource  # noqa: E402
from app.state import reduce  # noqa: E402
from engine.stream import schema as E  # noqa: E402


def _session(n: int, path: str = "a.jsonl") -> Session:
    evs = [E.session_start(0.0, {}, {"cpus": 2}, [], "x")]
    evs += [E.error(0.1 * (i + 1), "w", f"e{i}") for i in range(n)]
    return Session(path, evs)


def _quiet(app: SealtopApp) -> list[str]:
    """Stand-ins for what needs a running App (a redraw, a toast); returns the toasts."""
    toasts: list[str] = []
    app.request_render = lambda: None  # type: ignore[method-assign]
    app.notify = lambda text, **kw: toasts.append(text)  # type: ignore[method-assign]
    return toasts


def test_the_app_forwards_no_attribute() -> None:
    assert "__getattr__" not in vars(SealtopApp)
    app = SealtopApp("compare", sessions=(_session(3), _session(4, "b.jsonl")))
    with pytest.raises(AttributeError):
        app.set_knob  # noqa: B018 - a live source's call, not the App's
    with pytest.raises(AttributeError):
        app.prompt_knob  # noqa: B018


def test_every_mode_key_is_an_app_method_as_its_mode_takes_it() -> None:
    modes = {a: LiveSource for a in LiveSource.ACTIONS} | {a: ReplayActions for a in ReplayActions.ACTIONS}
    assert set(modes) == MODE_ACTIONS
    for action, mode in modes.items():
        own = vars(SealtopApp).get(f"action_{action}")
        assert own is not None, action
        theirs = getattr(mode, f"action_{action}")
        required = [p.name for p in inspect.signature(theirs).parameters.values()
                    if p.default is inspect.Parameter.empty]
        assert list(inspect.signature(own).parameters) == required, action


def test_each_mode_is_a_console_source() -> None:
    replay = SealtopApp("replay", session=_session(5))
    compare = SealtopApp("compare", sessions=(_session(3), _session(4, "b.jsonl")))
    live = SealtopApp("live", engine_factory=None, unavailable="no engine here")
    for app, cls in ((replay, ReplayActions), (compare, CompareSource), (live, LiveSource)):
        assert isinstance(app.source, ConsoleSource) and isinstance(app.source, cls)
    assert live.live is live.source and live.replay is None
    assert replay.replay is replay.source and replay.live is None
    assert compare.live is None and compare.replay is None
    assert replay.controller is replay.source.controller and live.controller is None
    assert live.engine is None and compare.engine is None and replay.engine is None


def test_the_replay_keys_run_through_the_app() -> None:
    n = random.randint(10, 40)
    app = SealtopApp("replay", session=_session(n), autoplay=False)
    toasts = _quiet(app)
    assert app.controller is not None and app.controller.at_end
    assert app.replay_seek("start") and app.controller.pos <= 1
    k = random.randint(1, n)
    app.action_step(k)
    assert app.state.log == reduce(app.session.events[:app.controller.pos]).log
    assert app.controller.pos >= k
    app.action_speed(1)
    assert toasts == ["replay ×2"]
    app.action_seek_end()
    assert app.controller.at_end and app.state.log == reduce(app.session.events).log
    assert not app.replay_seek("soon")  # refused: a toast, nothing moved
    assert app.controller.at_end and toasts[-1].startswith("not a time")
    # live keys in a replay: not offered, and do nothing if called
    assert all(app.check_action(a, ()) is False for a in LiveSource.ACTIONS)
    assert all(app.check_action(a, ()) is True for a in ReplayActions.ACTIONS)
    app.action_knob("partition_workers", 1)
    app.action_pause()
    assert app.engine is None and app.autofeed == 0
    app.autofeed = 3  # a replay keeps no jobs in flight
    assert app.autofeed == 0


def test_a_mode_without_a_part_has_the_plain_answer() -> None:
    app = SealtopApp("compare", sessions=(_session(3), _session(4, "b.jsonl")))
    source = app.source
    assert source is not None
    assert source.tick() == (False, False) and source.TICK_S == 0
    assert source.bar() == "" and source.header() == "" and source.recording() is None
    assert not source.seek("end") and not app.replay_seek("end")
    assert source.thread_ids() == [] and app.bridge_tids() == []
    assert not source.say("info", "x") and not source.refresh()
    assert app.replay_bar() == "" and app.controller is None
    assert all(app.check_action(a, ()) is False for a in MODE_ACTIONS)
    assert source.first_screen() is not None  # compare opens on its own screen
    app.action_step(1)  # not this mode's key: nothing happens, nothing raises
    with pytest.raises(NotImplementedError):
        ConsoleSource().header_mode()


def test_the_live_source_says_what_the_app_shows() -> None:
    app = SealtopApp("live", engine_factory=None, unavailable="no engine here", readonly=True)
    assert app.source is not None and app.source.header_mode() == "unavailable"
    assert not app.can_tune and app.autofeed == 0
    assert all(app.check_action(a, ()) is False for a in MODE_ACTIONS)  # read-only: none
    tuning = SealtopApp("live", engine_factory=None, autofeed=2)
    assert tuning.autofeed == 2
    tuning.autofeed = 0
    assert tuning.live is not None and tuning.live.autofeed == 0
    # a live console's tuning keys are off until an engine runs (shown disabled), replay's hidden
    assert all(tuning.check_action(a, ()) is None for a in LiveSource.ACTIONS)
    assert all(tuning.check_action(a, ()) is False for a in ReplayActions.ACTIONS)
