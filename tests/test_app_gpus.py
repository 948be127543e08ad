"""The console shows every GPU of a host: 2, 4 and 8 GPUs at 80×24 and 200×60.

The sessions here are SYNTHETIC: the one-GPU fixture session with its session_start listing N
GPUs and every sample carrying N readings (fresh random values each run). No multi-GPU machine
was lent, so none of this is a capture of a real run (docs/MULTIGPU.md). What is asserted is what
an operator sees, read from the compositor: no widget outside the screen, and in the GPU panel
each GPU either as its block, as a condensed line, or counted in the "+k more GPUs" line (then
maximizing the panel shows every one), each with its own last reading.
"""

from __future__ import annotations

import copy
import random
import re
from pathlib import Path

import pytest

pytest.importorskip("textual")

from app_pilot import outside, screen_lines, wait_for  # noqa: E402

from app.console import SealtopApp  # noqa: E402
from app.session_io import Session, load_session  # noqa: E402
from app.widgets.gpu import GpuPanel  # noqa: E402

FIXTURE = Path(__file__).parent / "data" / "session_fixture.jsonl"
SIZES = [(80, 24), (200, 60)]
NAME = "NVIDIA H200 (synthetic)"


def synthetic(n: int, rng: random.Random) -> Session:
    """The fixture session as if recorded on a host of ``n`` GPUs (not a capture)."""
    events = copy.deepcopy(load_session(FIXTURE).events)
    start = events[0]
    total = start["gpus"][0]["memory_total"]
    start["gpus"] = [{"index": i, "name": NAME, "memory_total": total} for i in range(n)]
    start["config"]["devices"] = list(range(n))
    for e in events:
        if e["kind"] == "sample" and e.get("gpus"):
            base = e["gpus"][0]
            e["gpus"] = [{**base, "index": i, "util": round(rng.uniform(0, 100), 1),
                          "mem_used": rng.randrange(total // 10, total),
                          "power_w": round(rng.uniform(80, 700), 1),
                          "temp_c": round(rng.uniform(30, 85), 1)} for i in range(n)]
    return Session(f"synthetic-{n}-gpus.jsonl", events)


def panel_text(app: SealtopApp, panel: GpuPanel) -> list[str]:
    """The lines of the screen inside the GPU panel's region."""
    r = panel.region
    return [line[r.x:r.x + r.width] for line in screen_lines(app)[r.y:r.y + r.height]]


def shown_gpus(lines: list[str]) -> tuple[set[int], int]:
    """(GPU indices the panel names, the count of its "+k more GPUs" line, 0 if none)."""
    text = "\n".join(lines)
    named = {int(m) for m in re.findall(r"\bgpu(\d+)\b", text)}
    more = re.search(r"\+(\d+) more GPUs", text)
    return named, int(more.group(1)) if more else 0


@pytest.mark.parametrize("n", [2, 4, 8])
@pytest.mark.parametrize("size", SIZES)
async def test_every_gpu_is_shown_or_counted(n, size):
    rng = random.Random()
    session = synthetic(n, rng)
    app = SealtopApp("replay", session=session, autoplay=False)
    async with app.run_test(size=size) as pilot:
        await pilot.pause(0.2)
        assert app.replay_seek("end")
        app.request_render()
        panel = app.screen.query_one(GpuPanel)

        def counted() -> bool:  # drawn at the seek's end: each GPU shown or counted
            named, more = shown_gpus(panel_text(app, panel))
            return len(named) + more == n

        # the redraw lands a refresh or two later, later still on a loaded machine: wait for
        # it rather than read the screen after a fixed pause
        await wait_for(pilot, counted)
        assert outside(app) == [], f"{n} GPUs at {size}"
        assert len(app.state.gpus) == n
        assert panel.region.area > 0, "the GPU panel is not on screen"
        lines = panel_text(app, panel)
        named, more = shown_gpus(lines)
        assert named <= set(range(n)), named
        assert named == set(range(len(named))), named  # the first ones, in order
        assert len(named) + more == n, (lines, named, more)  # each one shown or counted
        assert len(named) >= min(n, max(1, panel.content_size.height - 1)), lines
        # each GPU shown carries its own last reading (a block's or a condensed line's form)
        last = [e for e in session.events if e["kind"] == "sample" and e.get("gpus")][-1]["gpus"]
        text = "\n".join(lines)
        blocks = panel.content_size.height >= 5 * n
        for g in last:
            if g["index"] in named:
                want = f"{g['util']:5.1f} %" if blocks else f"gpu{g['index']} {g['util']:3.0f} %"
                assert want in text, (want, lines)
        if blocks:
            assert text.count(NAME[:18]) == n
        if more:
            await pilot.press("2")  # maximize the GPU panel
            await wait_for(pilot, lambda: shown_gpus(panel_text(app, panel))[1] == 0)
            assert outside(app) == []
            named, more = shown_gpus(panel_text(app, panel))
            assert named == set(range(n)) and more == 0, (named, more)

