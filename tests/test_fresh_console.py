"""What a first look at 80x24 meets: every panel maximized, the filter box and the help screen
stay inside the terminal, with their borders (a fresh operator's walk-through found the
maximized pipeline twice the screen's width, the filter box and log pushed below the footer,
and the help box cut at its right edge); Escape leaves the filter box (it kept the focus, so
every key after it typed into the filter); help lists the proofs table's and the log's keys."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("textual")

from app_pilot import outside, screen_lines, wait_for  # noqa: E402
from textual.binding import Binding  # noqa: E402

from app.console import SealtopApp  # noqa: E402
from app.screens.help import HelpScreen, binding_rows  # noqa: E402
from app.session_io import load_session  # noqa: E402
from app.widgets.eventlog import EventLog  # noqa: E402
from app.widgets.proofs import ProofsTable  # noqa: E402

FIXTURE = Path(__file__).parent / "data" / "session_fixture.jsonl"
SIZE = (80, 24)


def replay_app() -> SealtopApp:
    return SealtopApp("replay", session=load_session(FIXTURE), autoplay=False)


def box_closed(lines: list[str], top: int) -> bool:
    """The border drawn on line `top` has both corners inside the screen."""
    line = lines[top].rstrip()
    return line[:1] in "╭┏" and line[-1:] in "╮┓" and len(line) <= SIZE[0]


async def test_maximized_panels_filter_and_help_fit_80x24():
    app = replay_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.screen.query("#proofs") and "proofs" in screen_lines(app)[10])
        for key in "12345":
            await pilot.press(key)
            await wait_for(pilot, lambda: app.screen.maximized is not None
                           and app.screen.maximized.region.width == SIZE[0])
            await pilot.pause(0.1)  # the layout pass that draws it
            panel = app.screen.maximized
            assert panel is not None, key
            assert panel.region.width == SIZE[0], (key, panel.region)
            assert outside(app) == [], key
            assert box_closed(screen_lines(app), panel.region.y), (key, screen_lines(app)[0])
            await pilot.press("escape")
            await wait_for(pilot, lambda: app.screen.maximized is None)

        await pilot.press("slash")
        box = app.screen.query_one("#filter")
        await wait_for(pilot, lambda: box.display and box.has_focus)
        await pilot.pause(0.1)  # the layout pass after the box opened
        assert box.display and box.has_focus
        assert outside(app) == []
        log = app.screen.query_one("#log")
        assert log.region.height >= 3 and log.region.bottom <= SIZE[1] - 1
        # Escape leaves the filter: the box closes, the rows come back, keys act again
        table = app.screen.query_one(ProofsTable)
        rows = table.row_count
        await pilot.press(*"bad")
        await wait_for(pilot, lambda: table.row_count < rows)
        assert table.row_count < rows
        await pilot.press("escape")
        await wait_for(pilot, lambda: not box.display and table.row_count == rows)
        assert not box.display and app.focused is table and table.filter_text == ""
        assert table.row_count == rows
        sort_key = table.sort_key
        await pilot.press("o")
        assert table.sort_key != sort_key and box.value == ""

        await pilot.press("question_mark")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen))
        await pilot.pause(0.1)
        help_box = app.screen.query_one("#help-box")
        assert help_box.region.right <= SIZE[0], help_box.region
        assert box_closed(screen_lines(app), help_box.region.y)
        # the keys of the proofs table and of the event log are listed too (j/k, page keys,
        # the log's search), and not replay's g/G, which seek there
        dashboard = app.screen.over
        rows = binding_rows(app, dashboard)
        for widget in (dashboard.query_one(ProofsTable), dashboard.query_one(EventLog)):
            section = type(widget).HELP_SECTION
            for b in type(widget).BINDINGS:
                if b.action == "choose":
                    continue  # Enter: the dashboard's own row says it (proof detail)
                offered = widget.check_action(b.action.split("(")[0], ()) is not False
                keys = {app.get_key_display(Binding(k.strip(), b.action)) for k in b.key.split(",")}
                listed = any(r[0] == section and r[2] == b.description and keys <= set(r[1].split(", "))
                             for r in rows)
                assert listed == offered, (section, b)
        lines = rendered(app.screen.query_one("#help-table").content)
        assert any("proofs table" in ln and "↓, j" in ln and "Cursor down" in ln for ln in lines)
        assert any("event log" in ln and "Search the log" in ln for ln in lines)


def rendered(content) -> list[str]:
    """A Rich renderable's plain lines at 200 columns."""
    from rich.console import Console

    console = Console(width=200, record=True, file=open("/dev/null", "w"), color_system=None)
    console.print(content)
    return console.export_text().splitlines()


@pytest.mark.parametrize("size", [(80, 24), (160, 48)])
async def test_compare_fits_its_width(size):
    """At 80 columns the bars' 30 columns cut the values ("72…") and left out B − A and Δ %;
    under 110 columns the table drops the bars and keeps every value whole."""
    from app.main import build_app

    data = Path(__file__).parent / "data"
    app = build_app(["compare", str(data / "session_fixture.jsonl"), str(data / "session_fixture_b.jsonl")])
    async with app.run_test(size=size) as pilot:
        await wait_for(pilot, lambda: any("channel_wait" in ln for ln in screen_lines(app)))
        panel = app.screen.query_one("#compare-table")
        lines = screen_lines(app)[panel.region.y:panel.region.bottom]
        if size == SIZE:
            assert box_closed(lines, 0), lines[0]
        head = next(ln for ln in lines if "metric" in ln)
        assert "B − A" in head and "Δ %" in head
        assert ("A ▏ B" in head) == (size[0] >= 110)
        body = [ln for ln in lines[1:-1] if ln.strip("│ ")]
        assert len(body) >= 10 and not any("…" in ln for ln in body), body
