"""Console benchmark (not a test): input-to-render latency and the console's CPU use.

    python -m app.bench_console [--seconds 30] [--mode engine|replay] [--refresh 1] [--no-keys]
        [--size 160x48]

- engine: the embedded engine (CPU backend, `tiny` preset) kept at full load: the console keeps
  2 × partition_workers jobs in flight for the whole run.
- replay: the fixture session replayed in a loop at ×64 (about 3,800 events/s into the reducer).

Latency: every 0.5 s a key that changes what is drawn (`o`, sort by the next column) is sent
through the driver, as a terminal's key would be; the time from sending it until the frame that
shows the change (the first frame after the proofs table was redrawn in its new order) is handed
to the output is measured. The app runs headless, so the terminal's own time to paint is not
included.

CPU: the CPU time of the console's own threads (the Textual event loop and the engine bridge),
read from /proc/self/task/<tid>/stat, divided by wall time. The engine's orchestrator threads run
in the same process but are not the console, so they are excluded.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import threading
import time
from pathlib import Path

from textual import events as textual_events

FIXTURE = Path(__file__).resolve().parents[1] / "tests" / "data" / "session_fixture.jsonl"


def thread_cpu_s(tid: int) -> float:
    """utime + stime of one thread of this process, in seconds."""
    try:
        fields = Path(f"/proc/self/task/{tid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks


async def _run(args: argparse.Namespace) -> dict:
    from app.console import SealtopApp

    if args.mode == "replay":
        from app.session_io import load_session

        app = SealtopApp("replay", session=load_session(args.session or FIXTURE),
                         refresh=args.refresh, autoplay=True)
    else:
        from app.live import load_config, make_factory
        from app.main import use_tiny_preset

        config = load_config(args.config)
        if not args.config:
            use_tiny_preset(config)
            config.backend = "cpu" if config.backend == "auto" else config.backend
        app = SealtopApp("live", engine_factory=make_factory(config), config=config,
                         refresh=args.refresh, autofeed=2 * config.partition_workers)
    latencies: list[float] = []
    async with app.run_test(size=args.size) as pilot:
        if args.mode == "engine":
            t0 = time.monotonic()
            while app.state.proofs_done < 1 and time.monotonic() - t0 < 600:
                await pilot.pause(0.2)  # first start: keys and JIT, not measured
        else:
            assert app.controller is not None  # a replay console
            app.controller.speed = 64
        from app.widgets.proofs import ProofsTable

        marks: dict[str, float] = {}
        table = app.screen.query_one(ProofsTable)
        show = table.show
        sorted_by: list[tuple[str, bool]] = []  # the table's sort when the key was sent

        def timed_show(state, pal) -> None:
            # The first redraw of the table after the key's action changed its sort.
            show(state, pal)
            if ("t0" in marks and "rendered" not in marks
                    and (table.sort_key, table.sort_reverse) != sorted_by[-1]):
                marks["rendered"] = time.perf_counter()

        display = app._display

        def timed_display(screen, renderable) -> None:
            if renderable is not None and "rendered" in marks and "shown" not in marks:
                marks["shown"] = time.perf_counter()
            display(screen, renderable)

        table.show = timed_show  # type: ignore[method-assign]
        app._display = timed_display  # type: ignore[method-assign]
        main_tid = threading.get_native_id()
        tids = [main_tid] + app.bridge_tids()  # the live stream's tap threads
        cpu0 = sum(thread_cpu_s(t) for t in tids)
        wall0 = time.monotonic()
        events0 = app.state.events
        wraps = 0
        while time.monotonic() - wall0 < args.seconds:
            if app.controller is not None and app.controller.at_end:
                wraps += app.controller.pos
                app.controller.seek(0.0)
                app.controller.playing = True
            if args.no_keys:
                await asyncio.sleep(0.5)
                continue
            marks.clear()
            sorted_by.append((table.sort_key, table.sort_reverse))
            marks["t0"] = time.perf_counter()
            assert app._driver is not None  # running under run_test
            app._driver.send_message(textual_events.Key("o", "o"))
            while "shown" not in marks and time.perf_counter() - marks["t0"] < 5:
                await asyncio.sleep(0.001)
            if "shown" in marks:
                latencies.append((marks["shown"] - marks["t0"]) * 1000.0)
            await asyncio.sleep(0.5)
        wall = time.monotonic() - wall0
        cpu = sum(thread_cpu_s(t) for t in tids) - cpu0
        if app.controller is not None:
            events = wraps + app.controller.pos
        else:
            events = app.state.events - events0
        proofs = app.state.proofs_done
    latencies.sort()
    if not latencies:
        latencies = [float("nan")]
    p95 = latencies[max(0, int(round(0.95 * len(latencies))) - 1)]
    return {
        "mode": args.mode,
        "refresh_s": args.refresh,
        "seconds": round(wall, 1),
        "events_per_s": round(events / wall, 1),
        "proofs_done": proofs,
        "keypresses": len(latencies),
        "latency_ms_p50": round(statistics.median(latencies), 1),
        "latency_ms_p95": round(p95, 1),
        "latency_ms_max": round(latencies[-1], 1),
        "console_cpu_pct_of_one_core": round(100.0 * cpu / wall, 1),
        "threads_measured": "event loop + engine bridge" if len(tids) > 1 else "event loop",
    }


def main() -> None:
    p = argparse.ArgumentParser(prog="python -m app.bench_console", description=__doc__.split("\n")[0])
    p.add_argument("--mode", choices=("engine", "replay"), default="engine")
    p.add_argument("--seconds", type=float, default=30.0)
    p.add_argument("--refresh", type=float, default=1.0, help="refresh interval (console default 1)")
    p.add_argument("--config", help="engine config (engine mode)")
    p.add_argument("--session", help="session file (replay mode; default: the test fixture)")
    p.add_argument("--no-keys", action="store_true", help="measure CPU only, pressing nothing")
    p.add_argument("--size", default="160x48", help="terminal size WxH (default 160x48)")
    args = p.parse_args()
    try:
        w, h = (int(x) for x in args.size.lower().split("x"))
        if w < 20 or h < 10:
            raise ValueError
    except ValueError:
        raise SystemExit(f"sealtop: --size {args.size!r}: give WxH, at least 20x10 (e.g. 80x24)") from None
    args.size = (w, h)
    result = {"size": f"{w}x{h}", **asyncio.run(_run(args))}
    width = max(len(k) for k in result)
    for k, v in result.items():
        print(f"{k:<{width}}  {v}")


if __name__ == "__main__":
    main()
