"""What a first look at 80x24 meets: every panel maximized, the filter box and the help screen
stay inside the terminal, with their borders (a fresh operator's walk-through found the
maximized pipeline twice the screen's width, the filter box and log pushed below the footer,
and the help box cut at its right edge); Escape leaves the filter box (it kept the focus, so
every key after it typed into the filter)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("textual")

from app_pilot import outside, screen_lines, wait_for  # noqa: E402

from app.console import SealtopApp  # noqa: E402
from app.screens.help import HelpScreen  # noqa: E402
from app.session_io import load_session  # noqa: E402
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
            await pilot.pause(0.1)
            panel = app.screen.maximized
            assert panel is not None, key
            assert panel.region.width == SIZE[0], (key, panel.region)
            assert outside(app) == [], key
            assert box_closed(screen_lines(app), panel.region.y), (key, screen_lines(app)[0])
            await pilot.press("escape")
            await pilot.pause(0.05)

        await pilot.press("slash")
        await pilot.pause(0.1)
        box = app.screen.query_one("#filter")
        assert box.display and box.has_focus
        assert outside(app) == []
        log = app.screen.query_one("#log")
        assert log.region.height >= 3 and log.region.bottom <= SIZE[1] - 1
        # Escape leaves the filter: the box closes, the rows come back, keys act again
        table = app.screen.query_one(ProofsTable)
        rows = table.row_count
        await pilot.press(*"bad")
        await pilot.pause(0.1)
        assert table.row_count < rows
        await pilot.press("escape")
        await pilot.pause(0.1)
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
