"""The per-host history: an hour of points in a ring buffer, folded from events, drawn by `h`."""

from __future__ import annotations

from pathlib import Path

import pytest

from app import history as H
from app.session_io import load_session
from app.state import DashboardState, apply, reduce

FIXTURE = Path(__file__).parent / "data" / "session_fixture.jsonl"


def _sample(t: float, host: str | None = None, util: float = 50.0, rss: int = 100) -> dict:
    ev = {"t": t, "kind": "sample", "processes": [{"pid": 1, "role": "engine", "rss_anon": rss}],
          "shm_bytes": 10, "counters": {}, "gpus": [{"index": 0, "util": util}]}
    if host is not None:
        ev["host"] = host
    return ev


def test_history_keeps_more_than_an_hour_per_host_and_drops_the_oldest():
    state = DashboardState()
    for i in range(4000):  # 4000 s of samples, one a second, on two hosts
        apply(state, _sample(float(i), util=float(i % 100)))
        apply(state, _sample(float(i), host="farm-2", util=10.0, rss=7))
    local, farm = state.history[H.LOCAL], state.history["farm-2"]
    assert len(local.points) == H.POINTS and H.POINTS * H.STEP_S >= 3600
    assert local.span_s() >= 3600
    assert local.points[0].t == (4000 // H.STEP_S - H.POINTS) * H.STEP_S  # the oldest went
    assert local.points[-1].mem_bytes == 110 and farm.points[-1].mem_bytes == 17
    assert farm.series("gpu_busy")[-1] == 10.0
    assert local.series("gpu_busy")[-1] == 99.0  # the last sample of its step wins


def test_history_counts_stages_and_throughput_from_the_fixture():
    state = reduce(load_session(FIXTURE).events)
    h = state.history[H.LOCAL]
    assert h.points and max(h.series("throughput")) > 0
    assert max(h.series("gpu")) >= 1  # partitions were on the GPU at some sample
    assert h.counts["done"] == sum(1 for j in state.jobs.values() for p in j.parts.values()
                                   if p.stage == "done")


async def test_history_screen_draws_graphs():
    pytest.importorskip("textual")
    from app.console import SealtopApp
    from app.screens.history import HistoryScreen

    app = SealtopApp("replay", session=load_session(FIXTURE), autoplay=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause(0.2)
        await pilot.press("h")
        from app_pilot import screen_lines, wait_for

        # the graphs come with the screen's first redraw: wait for it, not a fixed 0.3 s
        await wait_for(pilot, lambda: isinstance(app.screen, HistoryScreen)
                       and "GPU busy" in "\n".join(screen_lines(app)))
        assert isinstance(app.screen, HistoryScreen)
        text = "\n".join(screen_lines(app))
        assert "throughput (proofs/min, 60 s window)" in text and "GPU busy" in text
        assert "local host" in text
        await pilot.press("escape")
        assert not isinstance(app.screen, HistoryScreen)


async def test_e_exports_the_proofs_table_to_a_new_csv(tmp_path, monkeypatch):
    pytest.importorskip("textual")
    import csv

    from app.console import SealtopApp

    monkeypatch.chdir(tmp_path)
    app = SealtopApp("replay", session=load_session(FIXTURE), autoplay=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause(0.2)
        await pilot.press("e")
        await pilot.pause(0.1)
        await pilot.press("e")  # a second export never overwrites the first
        await pilot.pause(0.1)
    files = sorted(tmp_path.glob("sealtop-proofs-*.csv"))
    assert len(files) == 2
    rows = list(csv.DictReader(files[0].open()))
    assert [int(r["job"]) for r in rows] == sorted((int(r["job"]) for r in rows), reverse=True)
    assert len(rows) == 8 and rows[-1]["outcome"] == "verified" and float(rows[-1]["total_s"]) > 0
    assert any(r["outcome"] == "failed" for r in rows)
    assert any(f"exported 8 proofs to {files[0]}" in e.text for e in app.state.log)


def test_eta_of_the_work_left_from_the_measured_rate():
    state = reduce(load_session(FIXTURE).events[:60])
    left, rate = len(state.active), state.throughput()
    assert left and rate > 0
    assert state.eta_s() == pytest.approx(left * 60.0 / rate)
    assert reduce(load_session(FIXTURE).events).eta_s() is None  # nothing left at the end
