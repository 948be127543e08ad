"""The engine's counters: monotonic event counts and a few gauges, under one lock.

The buffer lifecycle counters make the cuzk lessons visible:
``synth_started`` (buffers created), ``holding_abc`` (gauge: partitions holding a/b/c now),
``abc_freed`` (buffer sets unlinked) and ``dealloc_done`` (partitions whose deallocation stage
finished). ``synth_started == holding_abc + abc_freed`` at every sample.
"""

from __future__ import annotations

import threading

COUNTER_NAMES = (
    "partitions_submitted",
    "synth_started",
    "holding_abc",
    "abc_freed",
    "dealloc_done",
    "partitions_done",
    "partitions_failed",
    "retries",
    "worker_deaths",
    "proofs_done",
    "proofs_verified",
    "proofs_failed",
    "partitions_cancelled",  # will not be proven because of a stop (never counted as failed)
    "jobs_cancelled",  # jobs with a cancelled partition: no proof_done
    "stalls",  # partitions reported stalled (their worker made no progress)
    "stale_segments_swept",  # left in /dev/shm by dead orchestrators, swept at start
    "stale_semaphores_swept",
)


class Counters:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._values = {name: 0 for name in COUNTER_NAMES}
        self.max_holding_abc = 0

    def add(self, name: str, delta: int = 1) -> int:
        with self._lock:
            if name not in self._values:
                raise KeyError(f"unknown counter {name!r}")
            self._values[name] += delta
            if name == "holding_abc":
                self.max_holding_abc = max(self.max_holding_abc, self._values[name])
            return self._values[name]

    def get(self, name: str) -> int:
        with self._lock:
            return self._values[name]

    def snapshot(self) -> dict[str, int]:
        with self._lock:
            return dict(self._values)
