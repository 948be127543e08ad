"""Keys that never surprise: focus after maximize/restore, j/k and g/G, the scrollable and
searchable event log, read-only hiding what it disables."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("textual")

from app_pilot import wait_for  # noqa: E402
from test_app_fakes import FakeEngine  # noqa: E402

from app.console import SealtopApp  # noqa: E402
from app.session_io import load_session  # noqa: E402
from app.widgets.eventlog import EventLog  # noqa: E402
from app.widgets.proofs import ProofsTable  # noqa: E402

FIXTURE = Path(__file__).parent / "data" / "session_fixture.jsonl"
SIZE = (120, 40)


def replay_app() -> SealtopApp:
    return SealtopApp("replay", session=load_session(FIXTURE), autoplay=False)


async def test_focus_returns_after_maximize_and_restore():
    app = replay_app()
    async with app.run_test(size=SIZE) as pilot:
        table = app.screen.query_one(ProofsTable)
        await wait_for(pilot, lambda: table.row_count >= 2)  # the first refresh's rows
        assert app.focused is table
        for key in "12345":
            await pilot.press(key, "escape")
            await pilot.pause(0.05)
            assert app.screen.maximized is None and app.focused is table, key
            before = table.cursor_row
            await pilot.press("down")
            assert table.cursor_row == before + 1, key
            await pilot.press("up")


async def test_j_k_move_the_cursor_and_g_seeks_in_replay():
    app = replay_app()
    async with app.run_test(size=SIZE) as pilot:
        table = app.screen.query_one(ProofsTable)
        await wait_for(pilot, lambda: table.row_count >= 3)  # the first refresh's rows
        await pilot.press("j", "j")
        assert table.cursor_row == 2
        await pilot.press("k")
        assert table.cursor_row == 1
        await pilot.press("G")  # replay: seek to the end, not the last row
        await pilot.pause(0.05)
        assert app.controller.at_end and table.cursor_row == 1


async def test_g_and_G_jump_in_live_mode():
    events = load_session(FIXTURE).events
    app = SealtopApp("live", engine_factory=lambda: FakeEngine(events=events), autofeed=0)
    async with app.run_test(size=SIZE) as pilot:
        for _ in range(100):
            await pilot.pause(0.05)
            if app.state.events >= len(events):
                break
        app.request_render()
        table = app.screen.query_one(ProofsTable)
        await wait_for(pilot, lambda: table.row_count > 3)
        assert table.row_count > 3
        await pilot.press("G")
        assert table.cursor_row == table.row_count - 1
        await pilot.press("g")
        assert table.cursor_row == 0


async def test_event_log_scrolls_back_and_searches():
    app = replay_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause(0.2)
        for i in range(300):
            app._local_log("info", f"note {i}")
        app.request_render()
        log = app.screen.query_one(EventLog)
        # the lines may reach the log over several refreshes, and the follow scroll lands a refresh
        # after them (later under load): wait for the last line, then for the scroll to reach it
        await wait_for(pilot, lambda: bool(log._entries) and log._entries[-1].text == "note 299"
                       and log.scroll_y == log.max_scroll_y > 0)
        assert log.follow and log.scroll_y == log.max_scroll_y > 0
        log.focus()
        await pilot.press("pageup", "k")
        await pilot.pause(0.05)
        assert not log.follow and log.scroll_y == log.max_scroll_y - 11
        app._local_log("info", "newest")  # a scrolled-back log stays where the operator put it
        app.request_render()
        await pilot.pause(0.2)
        assert not log.follow and log.scroll_y < log.max_scroll_y
        await pilot.press("end")
        assert log.follow
        # maximized, the log takes the whole screen
        await pilot.press("5")
        await wait_for(pilot, lambda: log.region.height == SIZE[1] - 1)  # the layout after it
        assert app.screen.maximized is log and log.region.height == SIZE[1] - 1
        await pilot.press("escape")
        # search: only matching lines are shown
        await pilot.press("slash")
        await pilot.pause(0.1)
        await pilot.press(*"note 29", "enter")
        await pilot.pause(0.2)
        assert log.search_text == "note 29"
        assert [e.text for e in log._entries] == ["note 29"] + [f"note {i}" for i in range(290, 300)]


async def test_readonly_footer_hides_tuning_keys():
    app = SealtopApp("live", engine_factory=lambda: FakeEngine(), readonly=True)
    async with app.run_test(size=SIZE) as pilot:
        for _ in range(100):
            await pilot.pause(0.05)
            if app.engine is not None and app.state.started:
                break
        keys = set(app.screen.active_bindings)
        assert not keys & {"W", "p", "n", "ctrl+s"}
        assert {"q", "slash", "o"} <= keys


@pytest.mark.parametrize("argv", [["--bogus"], ["--refresh", "x"], ["compare"],
                                  ["--theme", "high-contrast"]])
def test_console_usage_errors_are_one_sealtop_line(argv, capsys):
    from app.main import build_app

    with pytest.raises(SystemExit) as exc:
        build_app(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("sealtop: ") and "error:" not in err


def test_plain_sealtop_reads_the_config_ctrl_s_saved(tmp_path, monkeypatch):
    from app.main import DEFAULT_CONFIG, build_app

    monkeypatch.chdir(tmp_path)
    assert build_app([]).config_path is None
    (tmp_path / DEFAULT_CONFIG).write_text("[engine]\npartition_workers = 3\n")
    app = build_app([])
    assert app.config_path == DEFAULT_CONFIG
    assert app.config.partition_workers == 3


async def test_M_sets_a_budget_from_unlimited():
    eng = FakeEngine()
    eng.knobs["memory_budget"] = None
    app = SealtopApp("live", engine_factory=lambda: eng, autofeed=0)
    async with app.run_test(size=SIZE) as pilot:
        for _ in range(100):
            await pilot.pause(0.05)
            if app.engine is not None and app.state.started:
                break
        assert app.state.memory_budget is None
        await pilot.press("M")
        for _ in range(40):
            await pilot.pause(0.05)
            if eng.knobs["memory_budget"]:
                break
        assert eng.knobs["memory_budget"] == (app.state.mem_total // 2**30 + 2) * 2**30
