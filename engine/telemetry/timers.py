"""The session clock and the per-partition layered timers.

Every ``t`` in the event stream and every timer reading come from one monotonic clock, offset to
the session's start, so a stage event's ``t`` plus a duration lands exactly on the later event
measured from the same reading.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field


class SessionClock:
    """Seconds since the session started, monotonic."""

    def __init__(self) -> None:
        self.origin = time.monotonic()

    def now(self) -> float:
        return time.monotonic() - self.origin


@dataclass
class PartitionTimers:
    """Start times (session seconds) and durations (ms) of one partition's layers."""

    marks: dict[str, float] = field(default_factory=dict)
    ms: dict[str, float] = field(default_factory=dict)

    def mark(self, name: str, t: float) -> None:
        self.marks[name] = t

    def span(self, key: str, start: str, end_t: float) -> None:
        """Record ms for ``key`` from mark ``start`` to end_t (skipped if start is unmarked)."""
        if start in self.marks:
            self.ms[key] = (end_t - self.marks[start]) * 1000.0

    def set(self, key: str, ms: float | None) -> None:
        if ms is not None:
            self.ms[key] = float(ms)
