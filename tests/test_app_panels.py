"""The memory panel's words and order, without a terminal: the budget bar with its % and a
clear "unlimited", and process rows that keep their places whatever their RSS does; the event
log at its newest line when a replay opens at its end."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

pytest.importorskip("textual")  # the widgets import Textual (absent on the GPU machine)

from app.state import DashboardState, fmt_bytes
from app.widgets.memory import budget_line, proc_order
from app.widgets.render import Palette

MiB = 2**20
FIXTURE = Path(__file__).parent / "data" / "session_fixture.jsonl"


def _state(held: int, budget: int | None) -> DashboardState:
    s = DashboardState()
    s.stage_bytes = lambda: {"synthesizing": held // 2, "gpu": held - held // 2}  # type: ignore[method-assign]
    s.knobs["memory_budget"] = budget or 0
    return s


def test_budget_line_draws_what_the_budget_counts_with_its_percent():
    budget = random.randint(1, 64) * 1024 * MiB
    held = random.randint(0, 2 * budget)
    state = _state(held, budget)
    assert state.memory_budget == budget
    width = random.randint(30, 60)
    head, bar = budget_line(state, Palette(), width)
    assert head.plain == f"held {fmt_bytes(held)} / {fmt_bytes(budget)} {100 * held / budget:.0f} %"
    full = round(min(1.0, held / budget) * width)
    assert bar.plain == "█" * full + "░" * (width - full)


def test_budget_line_says_unlimited_and_draws_no_bar():
    held = random.randint(0, 8 * 1024) * MiB
    head, bar = budget_line(_state(held, None), Palette(), 40)
    assert head.plain == f"held {fmt_bytes(held)}  budget unlimited"
    assert "█" not in bar.plain and "░" not in bar.plain and "no budget" in bar.plain


def test_process_rows_keep_their_order_when_rss_changes():
    procs = [{"role": r, "pid": p, "rss_anon": 0}
             for r, p in [("synth-0", 41), ("synth-1", 42), ("console", 7), ("gpu0", 50)]]
    expected = sorted(procs, key=lambda p: (p["role"], p["pid"]))
    for _ in range(20):
        for p in procs:
            p["rss_anon"] = random.choice((100 * MiB, 200 * MiB))  # often equal, often swapped
        random.shuffle(procs)
        assert sorted(procs, key=proc_order) == expected


async def test_event_log_opens_at_its_newest_line():
    """A replay opened at its end (sealtop replay --paused) at 80x24: the two-line log shows
    the session's last lines, not its first."""
    from app.console import SealtopApp
    from app.session_io import load_session
    from app.widgets.eventlog import EventLog

    app = SealtopApp("replay", session=load_session(FIXTURE), autoplay=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause(0.3)
        log = app.screen.query_one(EventLog)
        assert len(app.state.log) > log.size.height > 0
        assert log.follow and log.scroll_y == log.max_scroll_y > 0
        last = log.render_line(log.size.height - 1).text
        assert app.state.log[-1].text[:40] in last
