"""Live is replay: a live console session and the replay of its recording end in identical
dashboard states (the whole DashboardState: log with the console's own lines, histories, the
stopped flag, every job and partition), also after seeking backwards and forwards again."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

pytest.importorskip("textual")

from app_pilot import wait_for  # noqa: E402
from test_app_fakes import FakeEngine  # noqa: E402

from app.console import SealtopApp  # noqa: E402
from app.replay import ReplayController  # noqa: E402
from app.session_io import load_session  # noqa: E402
from app.state import DashboardState, reduce  # noqa: E402
from engine.stream.reader import read_recording  # noqa: E402
from engine.stream.schema import SCHEMA_VERSION  # noqa: E402

FIXTURE = Path(__file__).parent / "data" / "session_fixture.jsonl"
SIZE = (160, 48)
WAIT = 15.0  # seconds for the live bridge to deliver


async def test_a_live_session_and_its_replay_end_in_identical_states(tmp_path):
    events = load_session(FIXTURE).events
    eng = FakeEngine(events=events)
    rec = tmp_path / "live.jsonl"
    app = SealtopApp("live", engine_factory=lambda: eng, autofeed=0, record=str(rec))
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.state.events >= len(events) and app.engine is not None,
                       WAIT)
        workers = eng.knobs["partition_workers"]
        await pilot.press("W")  # an operator action the engine confirms with a knob event
        await wait_for(pilot, lambda: app.state.knobs["partition_workers"] == workers + 1, WAIT)
        app.live.set_knob("partition_workers", 0)  # refused: a console line
        app.set_refresh(0.5)  # a console notice
        app.live.stop_engine(True)
        await wait_for(pilot, lambda: app.state.stopped, WAIT)
        await pilot.pause(0.2)
        live: DashboardState = copy.deepcopy(app.state)
    texts = [e.text for e in live.log]
    assert any("refused" in t for t in texts)
    assert "refresh interval 0.5 s" in texts and "engine started" in texts
    assert texts[-1] == "engine stopped" and live.stopped
    assert live.console_lines >= 4

    recorded = read_recording(rec)
    assert not recorded.warnings
    assert recorded.header["schema"] == SCHEMA_VERSION
    replayed = reduce(recorded.events)
    assert replayed == live  # the whole state, field by field
    # The console's lines are what makes them equal: without them the replay differs.
    assert reduce([e for e in recorded.events if e["kind"] != "console"]) != live

    rc = ReplayController(recorded.events)
    rc.to_end()
    assert rc.state == live
    rc.seek(rc.duration / 2)  # backwards: rebuilt from a checkpoint, console lines included
    half = reduce([e for e in recorded.events if e["t"] <= rc.duration / 2])
    assert rc.state == half and rc.state != live
    rc.step(-7)
    rc.to_end()  # and forwards again
    assert rc.state == live
    rc.seek(0.0)
    rc.step(len(recorded.events))
    assert rc.state == live


def test_a_bad_console_record_target_is_one_line_before_the_console_opens(tmp_path, capsys):
    from app.main import main

    assert main(["--record", str(tmp_path / "missing" / "s.jsonl")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "cannot record to" in err and "does not exist" in err
    assert main(["--record", str(tmp_path)]) == 2
    assert "is a directory" in capsys.readouterr().err


def test_a_crashed_recording_replays_and_says_so(tmp_path):
    text = FIXTURE.read_text()
    cut = tmp_path / "crashed.jsonl"
    cut.write_text(text[: len(text) * 2 // 3].rsplit("\n", 1)[0] + "\n" + '{"t": 9.9, "kin')
    session = load_session(cut)
    whole = load_session(FIXTURE)
    assert session.events == whole.events[: len(session.events)] and session.events
    assert session.warnings and "cut off" in session.warnings[0]
    app = SealtopApp("replay", session=session, autoplay=False)
    assert "cut off" in app.notice
    assert not load_session(FIXTURE).warnings
