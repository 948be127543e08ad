"""First-run progress: a compile in a child process reports steps and elapsed time while the
parent stays free, at least every second during one long step."""

from __future__ import annotations

import threading
import time

import pytest

from app.firstrun import Progress, compile_in_child

# A real cold compile of one numba kernel (cache off, so it is cold every run), between two
# progress lines as engine/warmup.py prints them.
COLD_KERNEL = """
print("first run: compiling one kernel", flush=True)
import numba, numpy as np
@numba.njit(cache=False)
def mix(a):
    s = 0
    for i in range(a.shape[0]):
        s = (s * 31 + a[i]) % 1000003
    return s
mix(np.arange(10, dtype=np.int64))
print("  kernel compiled", flush=True)
"""


def test_a_cold_compile_in_a_child_reports_at_least_every_second():
    seen: list[tuple[float, Progress]] = []
    main_thread_ran = threading.Event()

    def report(p: Progress) -> None:
        seen.append((time.monotonic(), Progress(**vars(p))))

    t0 = time.monotonic()
    timer = threading.Timer(0.3, main_thread_ran.set)  # the parent can run code meanwhile
    timer.start()
    final = compile_in_child(report, code=COLD_KERNEL, total=1, tick_s=0.25)
    assert final.finished and not final.failed and final.done == 1
    assert main_thread_ran.is_set()
    times = [t0] + [t for t, _ in seen]
    assert max(b - a for a, b in zip(times, times[1:])) <= 1.5  # a shared, loaded machine
    ticks = [p for _, p in seen if not p.finished]
    assert len(ticks) >= 2 and ticks[-1].elapsed > ticks[0].elapsed  # the clock moves
    assert any(p.line == "first run: compiling one kernel" and p.done == 0 for p in ticks)
    assert "1/1 steps" in final.text()


def test_a_failing_child_is_reported_not_raised():
    got: list[Progress] = []
    p = compile_in_child(got.append, code="print('boom', flush=True); raise SystemExit(3)")
    assert not p.finished and p.failed == "boom" and got[-1].failed == "boom"


def test_progress_line_has_a_bar_steps_and_elapsed():
    text = Progress(done=2, total=5, line="  ntt   3.1 s", elapsed=41.6).text(width=10)
    assert text == "first run: compiling ████░░░░░░ 2/5 steps · 42 s · ntt   3.1 s"
    # while a step runs the line names it, not the one that finished before it
    p = Progress(total=5)
    for line in ("compiling ntt", "  ntt          3.1 s", "compiling g1"):
        p.take(line)
    assert p.done == 1 and p.text(width=10).endswith("1/5 steps · 0 s · compiling g1")


async def test_header_clock_runs_from_the_app_start():
    pytest.importorskip("textual")
    from test_app_fakes import FakeEngine

    from app.console import SealtopApp
    from app.widgets.header import HeaderBar

    eng = FakeEngine()
    gate = threading.Event()

    def slow_factory():
        gate.wait(30)  # the engine takes its time to build, as a first run does (until set)
        return eng

    app = SealtopApp("live", engine_factory=slow_factory, autofeed=0, refresh=0.1)
    async with app.run_test(size=(80, 24)) as pilot:
        import re

        from app_pilot import wait_for

        header = app.screen.query_one(HeaderBar)

        def first_line() -> str:
            return header.render_state(app.state, app.palette(), 80).plain.split("\n")[0]

        def up_s() -> int:
            up = re.search(r"up (\d+) s", first_line())
            return int(up.group(1)) if up else -1

        # the header's clock is set at each refresh tick: wait for one a second or more in
        # (a fixed 1.3 s pause read a stale header when a loaded machine held the tick back)
        await wait_for(pilot, lambda: up_s() >= 1, timeout=20)
        line = first_line()
        up = re.search(r"up (\d+) s", line)
        assert app.engine is None  # still building: the clock ran without it
        assert up and int(up.group(1)) >= 1, line  # not stuck at 0 while the engine builds
        gate.set()
