"""The console's hosts view on a replayed farm session: one row per host, the farm's rate, the
chosen row; layout checked with Pilot, and a snapshot (pytest-textual-snapshot)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

pytest.importorskip("textual")

from app_pilot import redrawn, wait_for  # noqa: E402
from test_cluster_merge import farm_session  # noqa: E402

from app.console import SealtopApp  # noqa: E402
from app.screens.hosts import HostsScreen  # noqa: E402
from app.session_io import load_session  # noqa: E402
from engine.stream.recorder import SessionRecorder  # noqa: E402

SIZE = (160, 48)
SNAPSHOT_DIR = Path(__file__).parent / "snapshots"


@pytest.fixture
def snapshot(snapshot):
    from pytest_textual_snapshot import SVGImageExtension

    class Here(SVGImageExtension):
        @classmethod
        def dirname(cls, *, test_location) -> str:
            return str(SNAPSHOT_DIR / test_location.basename)

    base = snapshot.use_extension
    snapshot.use_extension = lambda extension_class=None: base(Here)
    return snapshot


def _farm_file(tmp_path: Path) -> Path:
    path = tmp_path / "farm.jsonl"
    rec = SessionRecorder(path)
    for ev in farm_session():
        rec.write(ev)
    rec.close()
    return path


def farm_replay(tmp_path: Path) -> SealtopApp:
    """The console replaying the recorded farm session, paused at its start."""
    return SealtopApp("replay", session=load_session(_farm_file(tmp_path)), autoplay=False)


async def open_hosts(pilot, app: SealtopApp, settle: float = 0.3) -> None:
    """Wait until the replay has drawn its first screen, open the hosts view, wait until its
    table shows something, then give it ``settle`` seconds for the layout pass: a fixed pause
    alone can end before a loaded machine has drawn either."""
    await redrawn(pilot, app, 0)
    app.push_screen(HostsScreen())
    await wait_for(pilot, lambda: isinstance(app.screen, HostsScreen) and app.screen.is_mounted
                   and _text(app.screen.query_one("#hosts-table")).strip() != "")
    await pilot.pause(settle)


def _text(widget) -> str:
    """What a Static shows, as plain text lines (Rich renderables rendered at its width)."""
    from rich.console import Console

    console = Console(width=widget.size.width or 160, record=True, color_system=None,
                      file=open(os.devnull, "w"))
    console.print(widget.content)
    return console.export_text()


async def test_hosts_view_rows_and_layout(tmp_path):
    app = farm_replay(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await redrawn(pilot, app, 0)  # the replay's first screen drawn
        names = [c.title for c in app.get_system_commands(app.screen)]
        assert "Hosts of the farm" in names  # the console's hook
        app.push_screen(HostsScreen())

        def drawn() -> bool:  # both hosts' rows, laid out the full width
            s = app.screen
            if not (isinstance(s, HostsScreen) and s.is_mounted):
                return False
            table = s.query_one("#hosts-table")
            body = _text(table)
            return ("hA" in body and "hB" in body and table.region.width == SIZE[0]
                    and s.query_one("#hosts-title").region.width == SIZE[0])

        await wait_for(pilot, drawn)
        screen = app.screen
        assert isinstance(screen, HostsScreen)
        title = screen.query_one("#hosts-title")
        table = screen.query_one("#hosts-table")
        # layout: the farm line on top, the table below it, both the full width, on screen
        assert title.region.y < table.region.y
        assert title.region.width == SIZE[0] and table.region.width == SIZE[0]
        keys = screen.query_one("#hosts-keys")
        assert table.region.bottom <= keys.region.y < SIZE[1]  # the key line under the table
        body = _text(table)
        lines = [ln for ln in body.splitlines() if "hA" in ln or "hB" in ln]
        assert len(lines) == 2  # one row per host
        a = next(ln for ln in lines if "hA" in ln)
        b = next(ln for ln in lines if "hB" in ln)
        assert "left" in a and "up" in b
        assert "1× NVIDIA H200" in b and "none (cpu)" in a
        assert "ECC error count rising" in b
        assert "64.00 GiB" in b and "unlimited" in a
        head = _text(title)
        assert "1 of 2 host(s) up" in head and "3 proof(s)" in head and "s/proof" in head
        # up/down choose a host: the mark moves
        assert screen.selected == "hA"
        await pilot.press("down")
        assert screen.selected == "hB"
        assert "▸ hB" in _text(table)
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, HostsScreen))
        assert not isinstance(app.screen, HostsScreen)


async def test_a_local_session_has_no_hosts():
    app = SealtopApp("replay", session=load_session(Path(__file__).parent / "data" /
                                                    "session_fixture.jsonl"), autoplay=False)
    async with app.run_test(size=SIZE) as pilot:
        await open_hosts(pilot, app, 0.2)
        assert "no farm hosts" in _text(app.screen.query_one("#hosts-table"))


def test_hosts_view_snapshot(snap_compare, tmp_path):
    app = farm_replay(tmp_path)

    async def run_before(pilot) -> None:
        await open_hosts(pilot, app)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


async def test_hosts_view_at_80_columns(tmp_path):
    """At 80x24 the table is the compact one: every column of a row still shows (the stages'
    counts in one), within the width, and the key line says where knobs go."""
    app = farm_replay(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await open_hosts(pilot, app)
        screen = app.screen
        table = screen.query_one("#hosts-table")
        assert table.region.width == 80 and table.region.bottom <= 24
        lines = _text(table).splitlines()
        assert max(len(ln.rstrip()) for ln in lines) <= 80
        a = next(ln for ln in lines if "hA" in ln)
        b = next(ln for ln in lines if "hB" in ln)
        assert "left" in a and " cpu " in a and "0/0/0/0/0/0/0" in a and "301 MiB" in a
        assert "up" in b and "1×H200" in b and "3.00 GiB 5%" in b and "ECC" in b
        assert "q/s/t/c/g/d/f" in lines[0] + lines[1]
        assert "p → hA" in _text(screen.query_one("#hosts-keys"))
        await pilot.press("down")
        assert "p → hB" in _text(screen.query_one("#hosts-keys"))
        await pilot.press("asterisk")  # no tuning in a replay: hidden, nothing changes
        assert "p → hB" in _text(screen.query_one("#hosts-keys"))


def test_every_stage_a_host_holds_has_its_column():
    """At each stage change of the farm session, each host's row shows, stage by stage, how
    many partitions are in it (synthesized, waiting for the key or for room, included), in the
    wide table and in the compact one's q/s/t/c/g/d/f."""
    from rich.console import Console

    from app.widgets.hosts import STAGE_COLUMNS, hosts_table, hosts_table_compact
    from app.widgets.render import Palette
    from engine.cluster.hosts import HostsState
    from engine.stream.schema import HOLDING

    assert {s for s, _ in STAGE_COLUMNS} >= HOLDING | {"queued", "finalizing"}
    state, where, seen = HostsState(), {}, set()
    for ev in farm_session():
        state.apply(ev)
        if ev["kind"] != "stage" or "host" not in ev:
            continue
        where[(ev["job"], ev["partition"])] = (ev["host"], ev["stage"])
        seen.add(ev["stage"])
        want = {h: [sum(1 for v in where.values() if v == (h, s)) for s, _ in STAGE_COLUMNS]
                for h in state.hosts}
        console = Console(width=200, record=True, color_system=None, file=open(os.devnull, "w"))
        console.print(hosts_table(state, Palette(), width=200))
        console.print(hosts_table_compact(state, Palette()))
        text = console.export_text().splitlines()
        for h, counts in want.items():
            wide, compact = [ln for ln in text if f" {h} " in ln][:2]
            cells = [c.strip() for c in wide.split("│")]
            start = cells.index(next(c for c in cells if c.endswith("%") or c == "-")) + 1
            assert cells[start:start + len(counts)] == [str(n) for n in counts], (ev, wide)
            assert "/".join(map(str, counts)) in compact
    assert "synthesized" in seen
