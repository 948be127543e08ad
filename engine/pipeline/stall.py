"""Stall detection: a worker that holds a partition but makes no progress.

A heartbeat thread inside the worker would not do: numba code holds the GIL for seconds, so a
busy worker's heartbeat can be as silent as a hung one's. The kernel's own accounting is the
independent witness: a worker that holds work but whose CPU time (utime + stime in
/proc/PID/stat) has not moved for ``after_s`` seconds is stalled, and so is one in state T
(stopped by SIGSTOP or a debugger) at once. The orchestrator calls :meth:`StallWatch.observe`
about once a second for each worker that holds work; each stall is reported once per set of
partitions held.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass


def read_stat(pid: int) -> tuple[str, int] | None:
    """(state letter, utime + stime in clock ticks) of a process; None if it is gone."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            raw = f.read()
    except OSError:
        return None
    fields = raw[raw.rfind(")") + 2:].split()  # the command name may hold spaces or ')'
    try:
        return fields[0], int(fields[11]) + int(fields[12])
    except (IndexError, ValueError):
        return None


@dataclass
class _Seen:
    ticks: int
    since: float  # when ticks last changed (or the watch began)
    held: Hashable
    reported: bool = False


class StallWatch:
    """Per-process CPU-time watch; ``after_s`` = 0 turns it off."""

    def __init__(self, after_s: float):
        self.after_s = after_s
        self._seen: dict[int, _Seen] = {}

    def observe(self, pid: int, held: Hashable, now: float) -> str | None:
        """Look at ``pid``, which holds ``held`` (any hashable naming its partitions); the
        reason, the first time a stall of this holding is seen, else None."""
        if not self.after_s:
            return None
        st = read_stat(pid)
        if st is None:
            self._seen.pop(pid, None)
            return None
        state, ticks = st
        seen = self._seen.get(pid)
        if seen is None or seen.held != held:
            seen = self._seen[pid] = _Seen(ticks, now, held)
        elif ticks != seen.ticks:
            seen.ticks, seen.since = ticks, now
        if seen.reported:
            return None
        if state in ("T", "t"):
            why = "is stopped (state T)"
        elif now - seen.since >= self.after_s:
            why = f"has used no CPU time for {now - seen.since:.0f} s"
        else:
            return None
        seen.reported = True
        return why

    def idle(self, pid: int) -> None:
        """``pid`` holds nothing now: forget it."""
        self._seen.pop(pid, None)
