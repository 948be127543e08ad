"""Snapshot tests (pytest-textual-snapshot) of the console, made from the fixed session files in
tests/data/. Snapshots are SVGs under tests/snapshots/; after an intended change to the look,
review and refresh them with:  pytest tests/test_app_snapshots.py --snapshot-update
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("pytest_textual_snapshot")

from app_pilot import redrawn, wait_for  # noqa: E402
from pytest_textual_snapshot import SVGImageExtension  # noqa: E402
from test_app_fakes import FakeEngine  # noqa: E402

from app.console import SealtopApp  # noqa: E402
from app.main import build_app  # noqa: E402
from app.session_io import load_session  # noqa: E402

DATA = Path(__file__).parent / "data"
FIXTURE = DATA / "session_fixture.jsonl"
FIXTURE_B = DATA / "session_fixture_b.jsonl"
SIZE = (160, 48)
SNAPSHOT_DIR = Path(__file__).parent / "snapshots"


class _SnapshotsHere(SVGImageExtension):
    """Store snapshots in tests/snapshots/<module>/ rather than syrupy's __snapshots__."""

    @classmethod
    def dirname(cls, *, test_location) -> str:
        return str(SNAPSHOT_DIR / test_location.basename)


@pytest.fixture
def snapshot(snapshot):
    # snap_compare asks for the SVG extension; hand it ours, which differs only in dirname.
    base = snapshot.use_extension
    snapshot.use_extension = lambda extension_class=None: base(_SnapshotsHere)
    return snapshot


def _replay_at(snap_compare, size: tuple[int, int], t: str = "2.5", **app_kw) -> bool:
    """Snapshot of the fixture's replay paused at ``t`` seconds (partitions in flight)."""
    app = SealtopApp("replay", session=load_session(FIXTURE), autoplay=False, **app_kw)

    async def run_before(pilot) -> None:
        assert app.replay_seek(t)
        await redrawn(pilot, app)

    return snap_compare(app, terminal_size=size, run_before=run_before)


def test_dashboard_snapshot(snap_compare):
    """The live dashboard after the engine (a stand-in publishing the fixture) finished it."""
    events = load_session(FIXTURE).events
    eng = FakeEngine(events=events)
    app = SealtopApp("live", engine_factory=lambda: eng, autofeed=0)

    async def run_before(pilot) -> None:
        await wait_for(pilot, lambda: app.state.events >= len(events) and app.engine is not None)
        app.request_render()
        await pilot.pause(0.2)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_replay_snapshot(snap_compare):
    """Replay paused at 2.5 s: partitions in flight, the REPLAY badge and the control bar."""
    assert _replay_at(snap_compare, SIZE)


def test_replay_mono_theme_snapshot(snap_compare):
    """The high-contrast/no-colour theme: stages told apart by glyph."""
    assert _replay_at(snap_compare, SIZE, theme="sealtop-mono")


def test_detail_snapshot(snap_compare):
    """The proof detail of job 4, whose proof failed verification (✗)."""
    app = SealtopApp("replay", session=load_session(FIXTURE), autoplay=False)

    async def run_before(pilot) -> None:
        await pilot.pause(0.1)
        app.open_detail(4)
        await redrawn(pilot, app, 0.3)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_compare_snapshot(snap_compare):
    """Two runs of the same jobs with different knobs, side by side."""
    app = build_app(["compare", str(FIXTURE), str(FIXTURE_B)])

    async def run_before(pilot) -> None:
        await redrawn(pilot, app)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


@pytest.mark.parametrize("size", [(80, 24), (120, 40), (200, 60)], ids=lambda s: f"{s[0]}x{s[1]}")
def test_replay_sizes_snapshot(snap_compare, size):
    """The dashboard as the layout adapts it: stacked and condensed at 80×24, full at 200×60."""
    assert _replay_at(snap_compare, size)


def test_help_replay_80x24_snapshot(snap_compare):
    """Help at 80×24 in replay: only the keys replay has (no tuning, no panels 6–9)."""
    app = SealtopApp("replay", session=load_session(FIXTURE), autoplay=False)

    async def run_before(pilot) -> None:
        await pilot.press("question_mark")
        await pilot.pause(0.2)

    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)


def test_readonly_footer_snapshot(snap_compare):
    """A read-only live console at 80×24: its footer offers no tuning key."""
    events = load_session(FIXTURE).events
    eng = FakeEngine(events=events)
    app = SealtopApp("live", engine_factory=lambda: eng, autofeed=0, readonly=True)

    async def run_before(pilot) -> None:
        await wait_for(pilot, lambda: app.state.events >= len(events) and app.engine is not None)
        app.request_render()
        await pilot.pause(0.2)

    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)
