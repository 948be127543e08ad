"""How long a task/reply round trip between two processes takes, by switch interval.

The engine hands a partition to its prover process and gets gpu_done back through pipes; each
end wakes a thread that must then take its process's GIL. This times that round trip with one
busy pure-Python thread in each process (a prover slot launching kernels, the orchestrator's
session writer) and without, for a few switch intervals, and prints the median and p90 in ms.

    python scripts/handoff_latency.py [--rounds 200]
"""

from __future__ import annotations

import multiprocessing as mp
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.pipeline.messages import PartKey, ProveTask  # noqa: E402
from engine.pipeline.shm import SegmentSpec  # noqa: E402
from kernels.textfmt import OneLineParser  # noqa: E402


def _spin(stop: threading.Event) -> None:
    x = 0
    while not stop.is_set():
        for i in range(1000):
            x += i


def _echo(conn, interval: float | None, busy: bool) -> None:
    if interval:
        sys.setswitchinterval(interval)
    stop = threading.Event()
    if busy:
        threading.Thread(target=_spin, args=(stop,), daemon=True).start()
    while (msg := conn.recv()) is not None:
        conn.send(msg)
    stop.set()


def round_trips(interval: float | None, busy: bool, rounds: int) -> list[float]:
    """Round-trip times in ms, the first 10 dropped as warm-up."""
    ctx = mp.get_context("spawn")
    before = sys.getswitchinterval()
    if interval:
        sys.setswitchinterval(interval)
    ours, theirs = ctx.Pipe()
    proc = ctx.Process(target=_echo, args=(theirs, interval, busy))
    proc.start()
    stop = threading.Event()
    if busy:
        threading.Thread(target=_spin, args=(stop,), daemon=True).start()
    # the engine's own task, so the pickle that travels is the one a prover gets
    task = ProveTask(PartKey(1, 2, 0), "porep-32g", "/params/porep-32g.pk",
                     {k: SegmentSpec(f"sealtop-1-j1p2a0-{k}", (1 << 20, 4)) for k in "abcz"}, "gpu")
    times = []
    try:
        for _ in range(rounds + 10):
            t0 = time.perf_counter()
            ours.send(task)
            ours.recv()
            times.append((time.perf_counter() - t0) * 1000.0)
            time.sleep(0.002)
    finally:
        ours.send(None)
        proc.join()
        stop.set()
        sys.setswitchinterval(before)
    return times[10:]


def main() -> None:
    ap = OneLineParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=200)
    args = ap.parse_args()
    print(f"{'busy thread':>11} {'switch interval':>15} {'median ms':>10} {'p90 ms':>8}")
    for busy in (False, True):
        for interval in (None, 0.0005, 0.0002):
            t = sorted(round_trips(interval, busy, args.rounds))
            label = "default 5 ms" if interval is None else f"{interval * 1000:.1f} ms"
            print(f"{'yes' if busy else 'no':>11} {label:>15} {statistics.median(t):>10.2f} "
                  f"{t[int(0.9 * len(t))]:>8.2f}")


if __name__ == "__main__":
    main()
