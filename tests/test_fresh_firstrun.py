"""A first run's progress, as an operator saw it go wrong: the bar said 5/5 while a sixth step
ran, named the step that had finished (ntt stayed up 72 s while g1 compiled), and every compile
line in the log was stamped 0.00 s. And the split that lets the first proof come early: the
first part in one child per lane, the rest in the background holding the warm-up's lock."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from app.firstrun import Progress, compile_first, compile_rest_in_background
from engine import warmup


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def test_the_first_part_counts_and_names_every_step(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    seen: list[Progress] = []
    params = tmp_path / "params"
    final = compile_first(lambda p: seen.append(Progress(**{**vars(p), "running": list(p.running)})),
                          tick_s=0.2, params=str(params))
    names = [s.name for s in warmup.steps("first")]
    assert final.finished and not final.failed, final.failed
    assert final.done == final.total == len(names)
    for p in seen:
        assert p.total == len(names)
        assert not (p.running and p.done == p.total), f"{p.done}/{p.total} while {p.running} ran"
        assert set(p.running) <= set(names)
        if p.running:  # the bar names what runs now, not the step that finished last
            assert p.text().endswith("compiling " + ", ".join(p.running))
    assert {n for p in seen for n in p.running} == set(names)  # each step was shown running
    assert warmup.is_warm("first") and not warmup.is_warm("rest") and not warmup.is_warm()
    # the first preset's key is left where the engine looks for it, and it loads
    from engine.pipeline import proving
    from engine.pipeline.circuits import circuit_cache_dir, resolve

    circuit = resolve.__wrapped__(warmup.WARM_PRESET, circuit_cache_dir(params))
    path = proving.key_path(params, circuit.name, circuit.r1cs)
    assert path.is_file() and proving.ensure_key(circuit, params)[0] == path


def test_the_rest_compiles_in_the_background_and_stops(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert not warmup.rest_compiling_elsewhere()
    warmup.mark_warm("first", 0.0)  # as the lanes leave it
    bg = compile_rest_in_background()
    assert bg is not None and bg.pid is not None
    try:
        assert _alive(bg.pid)
        assert warmup.rest_compiling_elsewhere()  # so an engine started now skips the rest
        lines: list[str] = []
        assert warmup.ensure_warm(lines.append) == 0.0 and lines == []  # nothing in-process
        assert compile_rest_in_background() is None  # one at a time
    finally:
        bg.stop()
    deadline = time.monotonic() + 10
    while _alive(bg.pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(bg.pid)
    assert not warmup.rest_compiling_elsewhere()
    assert not warmup.is_warm("rest")  # stopped before the end: not stamped


async def test_lines_before_the_session_carry_the_consoles_clock():
    pytest.importorskip("textual")
    from test_app_fakes import FakeEngine

    from app.console import SealtopApp
    from tests.app_pilot import wait_for

    eng = FakeEngine()
    gate = threading.Event()

    def slow_factory():
        gate.wait(30)  # a first run: the engine comes after the compile
        return eng

    app = SealtopApp("live", engine_factory=slow_factory, autofeed=0, refresh=0.1)
    try:
        async with app.run_test(size=(100, 30)) as pilot:
            app._local_log("info", "compiling g1")
            await pilot.pause(1.2)
            app._local_log("info", "  g1           1.2 s")
            first, second = (next(e for e in app.state.log if e.text == t)
                             for t in ("compiling g1", "  g1           1.2 s"))
            assert second.t - first.t >= 1.0 and second.t > 0
            gate.set()
            await wait_for(pilot, lambda: app.state.started, 20)
    finally:
        gate.set()
