"""Driving and reading the console in pilot tests (App.run_test): wait until a condition holds,
the screen's text line by line as the terminal shows it, and the widgets drawn off the screen."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


async def wait_for(pilot: Any, cond: Callable[[], object], timeout: float = 10.0) -> None:
    """Let the app run until cond() holds (the engine bridge is a thread)."""
    waited = 0.0
    while not cond():
        if waited > timeout:
            raise AssertionError("condition not reached in time")
        await pilot.pause(0.05)
        waited += 0.05


async def redrawn(pilot: Any, app: Any, pause: float = 0.2) -> None:
    """Wait until the console has redrawn what it was asked to (its views no longer marked
    stale), then pause for the layout pass that follows: a fixed pause alone can end before a
    loaded machine runs the first refresh. For replay and compare; a live console that is still
    preparing marks its views stale on every tick."""
    await wait_for(pilot, lambda: not app._dirty)
    await pilot.pause(pause)


def screen_lines(app: Any) -> list[str]:
    """The screen's text, one string per terminal line (read from the compositor)."""
    strips = app.screen._compositor.render_strips()
    return ["".join(seg.text for seg in strip) for strip in strips]


def outside(app: Any) -> list[str]:
    """The displayed widgets whose region is not inside the screen."""
    from textual.geometry import Region

    w, h = app.size
    screen = Region(0, 0, w, h)
    bad = []
    for widget in app.screen.walk_children():
        if not widget.display or not widget.is_mounted:
            continue
        r = widget.region
        if r.area and screen.intersection(r) != r:
            bad.append(f"{widget!r} at {r}")
    return bad
