"""What a new operator tripped on in the console's screens at 80x24: a cut-off recording's
warning, the footer's keys, the history's column names, counts shown as integers."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("textual")

from app_pilot import outside, redrawn, screen_lines  # noqa: E402

from app.console import SealtopApp  # noqa: E402
from app.session_io import load_session  # noqa: E402

DATA = Path(__file__).parent / "data"
FIXTURE = DATA / "session_fixture.jsonl"


async def test_a_cut_recordings_warning_keeps_the_replay_on_an_80x24_screen(tmp_path):
    """The warning of a recording whose last line is cut (a killed run's) is one header line:
    the log, the replay bar and the proofs panel all stay on the screen, and the full warning
    is shown as a toast."""
    text = FIXTURE.read_text()
    cut = len(text) - 1 - len(text.rstrip("\n").rsplit("\n", 1)[1]) // 2  # halfway into the last
    path = tmp_path / "a-cut-recording-of-a-run-killed-while-it-proved.jsonl"
    path.write_text(text[:cut])
    session = load_session(path)
    assert session.warnings and "cut off" in session.warnings[0]
    app = SealtopApp("replay", session=session, autoplay=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await redrawn(pilot, app)
        assert outside(app) == []
        screen = app.screen
        assert screen.query_one("#header").region.height == 3
        assert screen.query_one("#replaybar").region.y == 22  # above the footer
        assert screen.query_one("#log").region.height >= 3
        lines = screen_lines(app)
        assert lines[2].startswith(f" warning: {path.name}:")  # its name: the path is long
        assert lines[2].rstrip().endswith("…")
        assert "paused" in lines[22] and "5.70 / 5.70 s" in lines[22]  # the replay bar
        toasts = [n.message for n in app._notifications]
        assert session.warnings[0] in toasts, toasts


TUNING_KEYS = ["W", "w", "C", "c", "M", "m", "p", "n", "a", "ctrl+s"]


@pytest.mark.parametrize("attached", [False, True])
async def test_a_tuning_key_in_a_read_only_console_says_why_nothing_happened(attached):
    """W (and every tuning key) in a read-only console is hidden from the footer and does
    nothing to the engine; the operator is told why, and how to get a console that tunes."""
    import random

    from app_pilot import wait_for
    from test_app_fakes import FakeEngine

    eng = FakeEngine()
    app = SealtopApp("live", engine_factory=lambda: eng, autofeed=0, readonly=True)
    if attached:
        app.attached_to = "/run/user/0/sealtop/engine.sock"
    key = random.choice(TUNING_KEYS)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.engine is not None and app.state.started)
        await pilot.press(key)
        await wait_for(pilot, lambda: len(app._notifications) > 0)
        said = [n.message for n in app._notifications]
        assert said[-1].startswith(f"read-only console: {key} changes nothing here")
        assert ("attach --control" in said[-1]) == attached
        assert ("without --readonly" in said[-1]) == (not attached)
        assert eng.knobs["partition_workers"] == 2 and not eng.paused and not eng.submitted
        await pilot.press("o")  # a key that is not tuning says nothing of the kind
        await pilot.pause(0.2)
        assert len([n for n in app._notifications if "read-only" in n.message]) == 1


async def test_a_console_that_tunes_says_no_read_only_notice():
    from app_pilot import wait_for
    from test_app_fakes import FakeEngine

    eng = FakeEngine()
    app = SealtopApp("live", engine_factory=lambda: eng, autofeed=0)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.engine is not None and app.state.started)
        await pilot.press("W")
        await wait_for(pilot, lambda: eng.knobs["partition_workers"] == 3)
        assert not any("read-only" in n.message for n in app._notifications)
