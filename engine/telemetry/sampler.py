"""The periodic sampler: memory per process, shared-memory bytes, counters and GPUs, as events.

It runs in its own thread in the orchestrator and emits one ``sample`` event per interval, plus
one more on demand (``sample_now``) so that a run's final state is always sampled.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable

from engine.stream import schema
from engine.telemetry.memory import rss_anon
from engine.telemetry.nvml import read_gpu

_TICK_S = 1.0 / (os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100)


def cpu_seconds(pid: int) -> float | None:
    """utime + stime of a process (its threads included), from /proc/<pid>/stat; None if gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) * _TICK_S
    except (OSError, IndexError, ValueError):
        return None


class Sampler:
    def __init__(
        self,
        interval_s: float,
        now: Callable[[], float],
        emit: Callable[[dict], None],
        processes: Callable[[], list[tuple[int, str]]],
        shm_bytes: Callable[[], int],
        counters: Callable[[], dict[str, int]],
        gpu_indices: list[int],
    ):
        self.interval_s = interval_s
        self._now = now
        self._emit = emit
        self._processes = processes
        self._shm_bytes = shm_bytes
        self._counters = counters
        self._gpus = list(gpu_indices)
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._cpu_prev: dict[int, tuple[float, float]] = {}  # pid -> (cpu s, wall s)

    def sample_now(self) -> dict:
        """Take one reading, emit it as a sample event and return it."""
        with self._lock:
            procs = []
            wall = time.monotonic()
            prev, self._cpu_prev = self._cpu_prev, {}
            for pid, role in self._processes():
                cpu = cpu_seconds(pid)
                pct = None  # % of one core since the last sample; None on a process's first
                if cpu is not None:
                    self._cpu_prev[pid] = (cpu, wall)
                    if pid in prev and wall > prev[pid][1]:
                        pct = round(100.0 * (cpu - prev[pid][0]) / (wall - prev[pid][1]), 1)
                procs.append({"pid": pid, "role": role, "rss_anon": rss_anon(pid), "cpu_pct": pct})
            ev = schema.sample(
                self._now(),
                procs,
                self._shm_bytes(),
                self._counters(),
                [read_gpu(i) for i in self._gpus],
            )
            self._emit(ev)
            return ev

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.sample_now()

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="sealtop-sampler", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
