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


def record_notices(app) -> list[str]:
    """Every notice's message from now on, kept (the app's own list drops expired ones)."""
    said: list[str] = []
    notify = app.notify

    def keep(message, *args, **kwargs):
        said.append(str(message))
        return notify(message, *args, **kwargs)

    app.notify = keep
    return said


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
    toasts = record_notices(app)
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
    said = record_notices(app)
    key = random.choice(TUNING_KEYS)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.engine is not None and app.state.started)
        await pilot.press(key)
        await wait_for(pilot, lambda: len(said) > 0)
        assert said[-1].startswith(f"read-only console: {key} changes nothing here")
        assert ("attach --control" in said[-1]) == attached
        assert ("without --readonly" in said[-1]) == (not attached)
        assert eng.knobs["partition_workers"] == 2 and not eng.paused and not eng.submitted
        await pilot.press("o")  # a key that is not tuning says nothing of the kind
        await pilot.pause(0.2)
        assert len([m for m in said if "read-only" in m]) == 1


async def test_a_console_that_tunes_says_no_read_only_notice():
    from app_pilot import wait_for
    from test_app_fakes import FakeEngine

    eng = FakeEngine()
    app = SealtopApp("live", engine_factory=lambda: eng, autofeed=0)
    said = record_notices(app)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.engine is not None and app.state.started)
        await pilot.press("W")
        await wait_for(pilot, lambda: eng.knobs["partition_workers"] == 3)
        assert said and not any("read-only" in m for m in said)  # it said "→ 3" instead


@pytest.mark.parametrize("where", ["dashboard", "prompt", "help", "detail", "filter"])
async def test_ctrl_c_quits_from_every_screen_as_an_interrupt(where):
    """ctrl+c quits (the normal quit, exit status 130 as an interrupt) wherever the operator
    is, instead of Textual's 'press q to quit' hint; the help lists it."""
    from app_pilot import wait_for

    from app.screens.help import HelpScreen, binding_rows
    from app.screens.prompt import PromptScreen

    app = SealtopApp("replay", session=load_session(FIXTURE), autoplay=False)
    said = record_notices(app)
    async with app.run_test(size=(80, 24)) as pilot:
        await redrawn(pilot, app)
        rows = binding_rows(app, app.screen)
        assert any(keys in ("ctrl+c", "^c") and "Quit" in desc and "130" in desc
                   for _, keys, desc, _ in rows), rows
        opened = {"prompt": "g", "help": "question_mark", "detail": "enter", "filter": "slash"}
        if where in opened:
            before = app.screen
            await pilot.press(opened[where])
            await wait_for(pilot, lambda: app.screen is not before or app.screen.focused is not
                           None and type(app.screen.focused).__name__ == "Input")
            if where == "prompt":
                assert isinstance(app.screen, PromptScreen)
            if where == "help":
                assert isinstance(app.screen, HelpScreen)
        await pilot.press("ctrl+c")
        await wait_for(pilot, lambda: app.return_code is not None)
        assert not any("quit" in m.lower() for m in said)
    assert app.return_code == 130


def _table_text(renderable, width: int) -> str:
    from rich.console import Console

    console = Console(width=width, record=True, file=open("/dev/null", "w"), color_system=None)
    console.print(renderable)
    return console.export_text()


@pytest.mark.parametrize("width", [80, 100, 160])
def test_compare_shows_counts_as_integers(width):
    """Proofs verified, failed and the partitions holding a, b, c are counts: shown as 7 and
    +1, never 7.0 and +1.0, at any width."""

    from app.screens.compare import compare_table
    from app.state import reduce
    from app.widgets.render import Palette

    a = reduce(load_session(FIXTURE).events)
    b = reduce(load_session(DATA / "session_fixture_b.jsonl").events)
    text = _table_text(compare_table(a, b, "a", "b", Palette(), width), width)
    counts = {"proofs verified": (a.proofs_verified, b.proofs_verified),
              "proofs failed ✗": (a.proofs_failed, b.proofs_failed),
              "max partitions holding a,b,c": (a.max_holding, b.max_holding)}
    for metric, (va, vb) in counts.items():
        row = next(ln for ln in text.splitlines() if ln.lstrip().startswith(metric))
        numbers = row.split(metric, 1)[1].split()
        assert numbers[:3] == [str(va), str(vb), f"{vb - va:+d}"], row


def test_history_names_its_graph_tops_and_counts_partitions_in_integers():
    """Each graph says its latest value and what its top is: GPU busy a fixed 0-100 % scale,
    the others their maximum over the kept points (named max, not 'top'); partitions in a
    stage are whole numbers."""
    from app.screens.history import history_view
    from app.state import reduce
    from app.widgets.render import Palette

    state = reduce(load_session(FIXTURE).events)
    text = _table_text(history_view(state.history, "", 80, Palette()), 80)
    lines = text.splitlines()
    assert " top " not in text
    gpu = next(ln for ln in lines if ln.startswith(" GPU busy"))
    assert "scale 0–100 %" in gpu and "latest " in gpu
    h = state.history[""]
    stage_lines = [ln for ln in lines if "(partitions)" in ln]
    assert stage_lines
    for ln in stage_lines:
        stage = ln.split("(partitions)")[0].strip().replace(" ", "_")
        values = h.series(stage)
        assert ln.rstrip().endswith(f"latest {round(values[-1])}  max {round(max(values))}"), ln


@pytest.mark.parametrize("mode", ["replay", "live"])
@pytest.mark.parametrize("where", ["dashboard", "detail", "history"])
async def test_every_footer_key_fits_80_columns(mode, where):
    """The footer shows each of its keys whole at 80 columns: the detail's long words cut its
    last one to '? He▏'."""
    from app_pilot import wait_for
    from test_app_fakes import FakeEngine

    if mode == "replay":
        app = SealtopApp("replay", session=load_session(FIXTURE), autoplay=False)
    else:
        eng = FakeEngine(events=load_session(FIXTURE).events)
        app = SealtopApp("live", engine_factory=lambda: eng, autofeed=0)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.state.jobs)
        await redrawn(pilot, app) if mode == "replay" else await pilot.pause(0.3)
        if where != "dashboard":
            before = app.screen
            await pilot.press("enter" if where == "detail" else "h")
            await wait_for(pilot, lambda: app.screen is not before)
            await pilot.pause(0.3)
        # a loaded machine may not have drawn the footer after the pause (CI once caught a blank
        # last line): wait for it, then check every key whole
        await wait_for(pilot, lambda: screen_lines(app)[23].strip(), timeout=10.0)
        footer = screen_lines(app)[23]
        assert "? Help" in footer and footer.rstrip().endswith("^p palette"), footer
        assert "q Quit" in footer
        if where == "detail":
            assert "esc Back" in footer and "Prev" in footer and "Next" in footer, footer
