"""Pilot tests of the console (App.run_test), on the fixture session and a stand-in engine.

Tests against the real embedded engine are in test_app_live.py.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest.importorskip("textual")  # the device machine has no Textual: skip, so -m gpu collects there

from app_pilot import redrawn, wait_for
from test_app_fakes import FakeEngine

from app.console import SealtopApp
from app.main import build_app, is_console, main
from app.screens.dashboard import DashboardScreen
from app.screens.detail import DetailScreen
from app.screens.help import HelpScreen, binding_rows
from app.screens.prompt import PromptScreen
from app.session_io import load_session
from app.state import reduce
from app.widgets.proofs import ProofsTable

DATA = Path(__file__).parent / "data"
FIXTURE = DATA / "session_fixture.jsonl"
FIXTURE_B = DATA / "session_fixture_b.jsonl"
SIZE = (160, 48)


def replay_app(autoplay: bool = False) -> SealtopApp:
    return SealtopApp("replay", session=load_session(FIXTURE), autoplay=autoplay)


def live_app(engine: FakeEngine, **kw) -> SealtopApp:
    return SealtopApp("live", engine_factory=lambda: engine, autofeed=0, **kw)


def text_of(widget, width: int = 160) -> str:
    """The plain text a Static shows (its Rich content rendered at a width)."""
    from rich.console import Console

    console = Console(width=width, record=True, file=open("/dev/null", "w"), color_system=None)
    console.print(widget.content)
    return console.export_text()


def shown(app: SealtopApp, selector: str, width: int = 160) -> str:
    """What the widget ``selector`` of the current screen shows; "" while that screen is not
    composed yet (so a wait_for can poll it)."""
    from textual.css.query import NoMatches

    try:
        return text_of(app.screen.query_one(selector), width)
    except NoMatches:
        return ""


def table_text(app: SealtopApp) -> str:
    t = app.screen.query_one(ProofsTable)
    return "\n".join(" ".join(str(c) for c in t.get_row_at(i)) for i in range(t.row_count))


# ---- entry point ------------------------------------------------------------------------------


def test_routing_between_console_and_cli():
    assert is_console([])
    assert is_console(["--config", "x.toml"])
    assert is_console(["--readonly"])
    assert is_console(["replay", "f.jsonl"])
    assert not is_console(["replay", "f.jsonl", "--summary"])
    assert is_console(["compare", "a", "b"])
    for verb in ("run", "setup", "prove", "verify", "export", "bench"):
        assert not is_console([verb, "--help"])


def test_unreadable_session_is_one_line_not_a_traceback(tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text("this is not a session\n")
    assert main(["replay", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("sealtop: ") and err.count("\n") == 1 and "Traceback" not in err
    assert main(["compare", str(FIXTURE), str(tmp_path / "missing.jsonl")]) == 2
    err = capsys.readouterr().err
    assert "missing.jsonl" in err and err.count("\n") == 1


def test_bad_config_is_one_line(tmp_path, capsys):
    cfg = tmp_path / "c.toml"
    cfg.write_text("[engine]\npartition_workers = 0\n")
    assert main(["--config", str(cfg)]) == 2
    err = capsys.readouterr().err
    assert "partition_workers" in err and err.count("\n") == 1


def test_missing_textual_says_so_in_one_line(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "textual", None)  # import textual -> ImportError
    assert main([]) == 1
    err = capsys.readouterr().err
    assert "Textual" in err and err.count("\n") == 1


def test_build_app_modes():
    assert build_app(["replay", str(FIXTURE)]).mode == "replay"
    assert build_app(["compare", str(FIXTURE), str(FIXTURE_B)]).mode == "compare"
    assert build_app(["--readonly"]).readonly


# ---- replay -----------------------------------------------------------------------------------


async def test_replay_to_the_end_matches_the_reduced_stream():
    session = load_session(FIXTURE)
    app = SealtopApp("replay", session=session, autoplay=True)
    async with app.run_test(size=SIZE) as pilot:
        app.controller.speed = 64
        await wait_for(pilot, lambda: app.controller.at_end)
        assert app.state.final_counters() == reduce(session.events).final_counters()
        await wait_for(pilot, lambda: table_text(app).count("✓") == 7)
        assert table_text(app).count("✗") == 1


async def test_replay_controls_step_speed_seek():
    app = replay_app()
    async with app.run_test(size=SIZE) as pilot:
        c = app.controller
        assert c.at_end and not c.playing
        n = c.pos
        await pilot.press("left_square_bracket", "left_square_bracket")
        assert c.pos == n - 2
        await pilot.press("right_square_bracket")
        assert c.pos == n - 1
        await pilot.press("greater_than_sign", "greater_than_sign", "greater_than_sign")
        assert c.speed == 8
        await pilot.press("less_than_sign")
        assert c.speed == 4
        await pilot.press("g")
        await wait_for(pilot, lambda: isinstance(app.screen, PromptScreen))
        await pilot.press(*"2.5", "enter")
        await wait_for(pilot, lambda: c.clock == pytest.approx(2.5))
        assert c.clock == pytest.approx(2.5)
        assert app.state.t <= 2.5 and app.state.proofs_done < 8
        await pilot.press("space")
        assert c.playing
        await pilot.press("space")
        assert not c.playing
        await pilot.press("G")
        assert c.at_end
        # tuning is disabled in replay, and says so
        before = dict(app.state.knobs)
        await pilot.press("W")
        assert app.state.knobs == before


# ---- dashboard conventions ---------------------------------------------------------------------


async def test_help_lists_the_keys_of_this_mode():
    """Help lists every binding the mode offers, with its help text, and none it lacks."""
    app = replay_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen))
        assert isinstance(app.screen, HelpScreen)
        lines = text_of(app.screen.query_one("#help-table"), width=200).splitlines()
        listed = 0
        for owner, node in ((SealtopApp, app), (DashboardScreen, app.screen.over)):
            for b in owner.BINDINGS:
                keys = ", ".join(app.get_key_display(type(b)(k.strip(), b.action))
                                 for k in b.key.split(","))
                text = b.tooltip or b.description
                row = any(f" {keys} " in ln and text in ln for ln in lines)
                offered = node.check_action(b.action.split("(")[0], ()) is not False
                assert row == offered, b
                listed += row
        assert any("^p" in ln and "Command palette" in ln for ln in lines)
        assert not any("Maximize panel 6" in ln for ln in lines)
        assert not any("Workers +1" in ln for ln in lines)  # no tuning in replay
        assert any("Seek to a time" in ln for ln in lines)
        assert listed >= 15
        await pilot.press("escape")
        assert isinstance(app.screen, DashboardScreen)
        await pilot.press("f1")
        assert isinstance(app.screen, HelpScreen)


async def test_filter_and_sort_the_proofs_table():
    app = replay_app()
    async with app.run_test(size=SIZE) as pilot:
        table = app.screen.query_one(ProofsTable)
        # each table change below lands with a refresh, which a loaded machine runs later than
        # a fixed pause: wait for it
        await wait_for(pilot, lambda: table.row_count == 8)
        assert table.row_count == 8
        await pilot.press("slash", *"bad", "enter")
        await wait_for(pilot, lambda: table.row_count == 1)
        assert table.row_count == 1 and "✗" in table_text(app)
        await pilot.press("escape")
        await wait_for(pilot, lambda: table.row_count == 8)
        assert table.row_count == 8
        await pilot.press("o")  # job -> ok
        await pilot.press("o")  # ok -> stage
        assert table.sort_key == "stage"
        await pilot.press("o")  # stage -> parts
        assert table.sort_key == "parts"
        table.sort_by("total")
        app.request_render()

        def shown_totals() -> list[float]:
            return [app.state.jobs[int(table.get_row_at(i)[0].plain)].total_ms for i in range(8)]

        await wait_for(pilot, lambda: shown_totals() == sorted(shown_totals(), reverse=True))
        totals = shown_totals()
        assert totals == sorted(totals, reverse=True)
        await pilot.press("O")
        await wait_for(pilot, lambda: shown_totals() == sorted(shown_totals()))
        totals = shown_totals()
        assert totals == sorted(totals)


async def test_maximize_panels_and_restore():
    app = replay_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("2")
        assert app.screen.maximized is app.screen.query_one("#gpu")
        await pilot.press("2")
        assert app.screen.maximized is None
        await pilot.press("5")
        assert app.screen.maximized is app.screen.query_one("#log")
        await pilot.press("escape")
        assert app.screen.maximized is None
        await pilot.press("9")  # no such panel: a notice, not a crash
        assert app.screen.maximized is None


async def test_live_theme_switch_and_refresh_rate():
    app = replay_app()
    async with app.run_test(size=SIZE) as pilot:
        assert app.theme == "sealtop-dark"
        await pilot.press("t")
        assert app.theme == "sealtop-light"
        await pilot.press("t")
        assert app.theme == "sealtop-mono"
        await wait_for(pilot, lambda: "▒" in shown(app, "#pipeline"))  # redrawn in it
        # the no-colour theme draws stages by glyph
        assert "▒" in text_of(app.screen.query_one("#pipeline"))
        r0 = app.refresh_s
        await pilot.press("r")
        assert app.refresh_s != r0


async def test_detail_screen_for_a_failed_proof():
    app = replay_app()
    async with app.run_test(size=SIZE) as pilot:
        table = app.screen.query_one(ProofsTable)
        await wait_for(pilot, lambda: table.row_count == 8)  # the first refresh's rows
        row = [table.get_row_at(i)[0].plain for i in range(table.row_count)].index("4")
        table.move_cursor(row=row)
        await pilot.press("enter")
        await wait_for(pilot, lambda: "FAILED" in shown(app, "#detail-kernels"))
        assert isinstance(app.screen, DetailScreen) and app.screen.job == 4
        body = text_of(app.screen.query_one("#detail-kernels"))
        assert "FAILED ✗" in body
        timers = text_of(app.screen.query_one("#detail-timers"))
        assert "wrap−call" in timers and "p3" in timers
        await pilot.press("right")
        assert app.screen.job == 5
        await pilot.press("escape")
        assert isinstance(app.screen, DashboardScreen)


async def test_compare_screen_shows_both_and_the_difference():
    app = build_app(["compare", str(FIXTURE), str(FIXTURE_B)])
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: "throughput" in shown(app, "#compare-table", 200))
        text = text_of(app.screen.query_one("#compare-table"), width=200)
        assert "session_fixture.jsonl" in text and "session_fixture_b.jsonl" in text
        assert "throughput" in text and "peak memory" in text and "channel_wait" in text
        await pilot.press("s")
        assert app.screen.name_a == "session_fixture_b.jsonl"


async def test_console_opens_without_an_engine():
    app = SealtopApp("live", engine_factory=None, unavailable="embedded engine unavailable (test)")
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: "UNAVAILABLE" in shown(app, "#header", 400))
        header = text_of(app.screen.query_one("#header"), width=400)
        assert "UNAVAILABLE" in header and "engine unavailable" in header
        await pilot.press("W")  # tuning refused with a notice, no crash
        assert isinstance(app.screen, DashboardScreen)


async def test_engine_that_fails_to_start_is_shown_not_raised():
    def boom():
        raise RuntimeError("no key cache")

    app = SealtopApp("live", engine_factory=boom, autofeed=0)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app._engine_failed)
        await wait_for(pilot, lambda: "no key cache" in shown(app, "#header", 400))
        header = text_of(app.screen.query_one("#header"), width=400)
        assert "no key cache" in header


# ---- live tuning against the stand-in engine ---------------------------------------------------


async def test_live_events_render_and_tuning_keys_reach_the_engine():
    events = load_session(FIXTURE).events
    eng = FakeEngine(events=events)
    app = live_app(eng)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.state.events >= len(events) and app.engine is not None)
        assert app.state.final_counters() == reduce(events).final_counters()
        workers = eng.knobs["partition_workers"]
        await pilot.press("W")
        await wait_for(pilot, lambda: app.state.knobs["partition_workers"] == workers + 1)
        assert eng.knobs["partition_workers"] == workers + 1
        await pilot.press("w", "w")
        await wait_for(pilot, lambda: app.state.knobs["partition_workers"] == workers - 1)
        await pilot.press("C")
        await wait_for(pilot, lambda: eng.knobs["gpu_channel_capacity"] == 2)
        await pilot.press("M")
        await wait_for(pilot, lambda: eng.knobs["memory_budget"] == 9 * 2**30)
        await pilot.press("p")
        await wait_for(pilot, lambda: app.state.paused)
        assert eng.paused
        await pilot.press("p")
        await wait_for(pilot, lambda: not app.state.paused)
        await pilot.press("n")
        await wait_for(pilot, lambda: len(eng.submitted) == 1)
        log = [e.text for e in app.state.log]
        assert any("partition_workers" in t and "→" in t for t in log)  # confirmed in the log
        assert any("resumed" in t for t in log)
    assert eng.stopped or app.engine is None


async def test_engine_refusal_is_logged():
    eng = FakeEngine()
    app = live_app(eng)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.engine is not None and app.state.started)
        app.live.set_knob("partition_workers", 0)
        await wait_for(pilot, lambda: any("refused" in e.text for e in app.state.log))
        assert any("refused" in e.text for e in app.state.log)


async def test_readonly_disables_tuning():
    eng = FakeEngine()
    app = live_app(eng, readonly=True)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.engine is not None and app.state.started)
        await pilot.press("W", "p", "n", "ctrl+s")  # each key is handled before press returns
        header = app.screen.query_one("#header")
        await wait_for(pilot, lambda: "READONLY" in text_of(header, width=400))
        assert eng.knobs["partition_workers"] == 2 and not eng.paused and not eng.submitted
        assert "READONLY" in text_of(app.screen.query_one("#header"), width=400)
        # the footer and help offer none of what read-only disables
        shown = {b.binding.action for b in app.screen.active_bindings.values()}
        assert not shown & {"app.knob('partition_workers', 1)", "app.pause", "app.submit",
                            "app.save_config"}
        assert not any("Workers" in r[2] or "Pause" in r[2] for r in binding_rows(app, app.screen))


async def test_save_config_keeps_comments(tmp_path):
    cfg = tmp_path / "sealtop.toml"
    cfg.write_text(
        "# my prover box\n[engine]\n# two syntheses fit in RAM\npartition_workers = 2  # was 4\n"
        'gpu_channel_capacity = 1\nmemory_budget = "8GiB"  # keep headroom\n\n[jobs]\npreset = "tiny"\n'
    )
    eng = FakeEngine()
    app = live_app(eng, config_path=str(cfg))
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.engine is not None and app.state.started)
        await pilot.press("W")
        await wait_for(pilot, lambda: app.state.knobs["partition_workers"] == 3)
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: any("saved knobs to" in e.text for e in app.state.log))
    text = cfg.read_text()
    assert "partition_workers = 3  # was 4" in text
    assert "# my prover box" in text and "# two syntheses fit in RAM" in text
    assert 'memory_budget = "8GiB"  # keep headroom' in text
    import tomllib

    assert tomllib.loads(text)["engine"]["partition_workers"] == 3


# ---- command palette ---------------------------------------------------------------------------


async def test_palette_offers_tuning_live_and_replay_controls_in_replay():
    from textual.command import CommandPalette

    eng = FakeEngine()
    app = live_app(eng)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.engine is not None and app.state.started)
        titles = [c.title for c in app.get_system_commands(app.screen)]
        for want in ("Set partition_workers…", "Set gpu_channel_capacity…", "Set memory_budget…",
                     "Pause / resume engine", "Submit a job", "Save knobs to config"):
            assert want in titles
        assert not any(t.startswith("Replay") for t in titles)
        # a palette command runs the same code as the key
        cmd = next(c for c in app.get_system_commands(app.screen) if c.title == "Pause / resume engine")
        cmd.callback()
        await wait_for(pilot, lambda: app.state.paused)
        await pilot.press("ctrl+p")
        await wait_for(pilot, lambda: isinstance(app.screen, CommandPalette))
        assert isinstance(app.screen, CommandPalette)

    app = replay_app()
    async with app.run_test(size=SIZE):
        titles = [c.title for c in app.get_system_commands(app.screen)]
        assert "Replay: seek…" in titles and "Set partition_workers…" not in titles

    app = live_app(FakeEngine(), readonly=True)
    async with app.run_test(size=SIZE):
        titles = [c.title for c in app.get_system_commands(app.screen)]
        assert "Save knobs to config" not in titles


async def test_set_knob_through_the_prompt():
    eng = FakeEngine()
    app = live_app(eng)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.engine is not None and app.state.started)
        app.live.prompt_knob("memory_budget")
        await wait_for(pilot, lambda: isinstance(app.screen, PromptScreen))
        await pilot.press(*"12GiB", "enter")
        await wait_for(pilot, lambda: eng.knobs["memory_budget"] == 12 * 2**30)
        await wait_for(pilot, lambda: not isinstance(app.screen, PromptScreen))
        app.live.prompt_knob("gpu_channel_capacity")
        await wait_for(pilot, lambda: isinstance(app.screen, PromptScreen))
        await pilot.press(*"four", "enter")  # not a number: refused with a message
        await wait_for(pilot, lambda: any("needs a whole number" in n.message
                                          for n in app._notifications))
        assert eng.knobs["gpu_channel_capacity"] == 1


async def test_proofs_table_repaints_only_what_changed():
    """The table does nothing on a tick where no proof changed, and one line for one proof."""
    app = replay_app()
    async with app.run_test(size=SIZE) as pilot:
        assert app.replay_seek("2.5")
        await redrawn(pilot, app)  # the table shows the seek's state before the spy goes in
        table = app.screen.query_one(ProofsTable)
        calls: list[tuple] = []
        real = table.refresh

        def spy(*regions, **kw):
            calls.append(regions)
            return real(*regions, **kw)

        table.refresh = spy  # type: ignore[method-assign]
        table.show(app.state, app._pal)
        assert calls == []  # nothing changed: nothing to repaint
        state = app.state
        job = next(j for j in state.jobs.values() if j.verified is None and j.parts)
        before = [r.job for r in table._rows]
        job.version += 1  # as the reducer does on any change to a proof
        table.show(state, app._pal)
        assert [r.job for r in table._rows] == before
        assert len(calls) == 1 and len(calls[0]) == 1 and calls[0][0].height == 1


async def test_proofs_table_cursor_scroll_and_mouse():
    """Many proofs: the cursor scrolls into view; a header click sorts; a click on the cursor
    row opens the proof's detail."""
    import copy

    app = replay_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: bool(app.screen.query(ProofsTable)))
        table = app.screen.query_one(ProofsTable)
        await wait_for(pilot, lambda: table.row_count == 8)  # the first refresh's rows
        state = app.state
        for i in range(9, 60):
            j = copy.deepcopy(state.jobs[3])
            j.job = i
            state.jobs[i] = j
        app.request_render()
        await wait_for(pilot, lambda: table.row_count == 59)
        assert table.row_count == 59
        await pilot.press("end")
        await wait_for(pilot, lambda: table.cursor_row == 58 and table.scroll_y > 0)
        assert table.cursor_row == 58 and table.selected_job() == 1 and table.scroll_y > 0
        await pilot.press("home")
        await wait_for(pilot, lambda: table.cursor_row == 0 and table.scroll_y == 0)
        assert table.cursor_row == 0 and table.scroll_y == 0
        x = next(a for a, _, k in table.column_edges() if k == "total") + 2  # inside the border
        await pilot.click(ProofsTable, offset=(x, 1))  # the `total` header
        await wait_for(pilot, lambda: table.sort_key == "total")
        assert table.sort_key == "total" and table.sort_reverse
        await pilot.click(ProofsTable, offset=(4, 2))  # the first row, where the cursor is
        await wait_for(pilot, lambda: isinstance(app.screen, DetailScreen))
        assert isinstance(app.screen, DetailScreen)
        assert app.screen.job == int(table.get_row_at(0)[0].plain)
