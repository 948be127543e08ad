"""Admission to synthesis: the partition permits, the memory budget, and pause.

A partition may start synthesis only when all three allow it:

* a permit is free: fewer than ``partition_workers`` permits are held. When a permit is released
  depends on permit_release: on delivery into the GPU channel ("delivered", the default), or as
  soon as synthesis ends ("synthesized", the cuzk bug, kept so an operator can see it);
* the memory budget: the bytes of partition buffers already reserved plus this partition's bytes
  stay within ``memory_budget`` (0 means no budget). Bytes are reserved at admission and given
  back when the partition's buffers are unlinked;
* the engine is not paused.

Changing partition_workers or the budget takes effect at the next acquisition; permits already
held are never revoked, so lowering the limit drains down to it without dropping work.
"""

from __future__ import annotations

import threading
from collections.abc import Callable


class AdmissionClosed(Exception):
    """Raised by acquire once the engine is stopping."""


class Admission:
    def __init__(self, partition_workers: int, memory_budget: int = 0):
        if partition_workers < 1:
            raise ValueError("partition_workers must be at least 1")
        self._limit = partition_workers
        self._budget = memory_budget
        self._held = 0
        self._reserved = 0
        self._paused = False
        self._closed = False
        self._cv = threading.Condition()
        self.max_held = 0
        self.max_reserved = 0

    # -- state, for telemetry ------------------------------------------------------------------
    @property
    def limit(self) -> int:
        return self._limit

    @property
    def budget(self) -> int:
        return self._budget

    @property
    def held(self) -> int:
        with self._cv:
            return self._held

    @property
    def reserved(self) -> int:
        with self._cv:
            return self._reserved

    @property
    def paused(self) -> bool:
        return self._paused

    def fits(self, nbytes: int) -> bool:
        """Whether a partition of nbytes could ever be admitted under the current budget."""
        return self._budget == 0 or nbytes <= self._budget

    # -- the gate ------------------------------------------------------------------------------
    def _open_for(self, nbytes: int) -> bool:
        if self._paused or self._held >= self._limit:
            return False
        return self._budget == 0 or self._reserved + nbytes <= self._budget

    def acquire(
        self,
        nbytes: int,
        on_admit: Callable[[], None] | None = None,
        timeout: float | None = None,
    ) -> bool:
        """Block until a permit and ``nbytes`` of budget are free and the engine is not paused,
        then take both. ``on_admit`` runs under the lock at that moment. False on timeout."""
        with self._cv:
            ok = self._cv.wait_for(lambda: self._closed or self._open_for(nbytes), timeout)
            if self._closed:
                raise AdmissionClosed
            if not ok:
                return False
            self._held += 1
            self._reserved += nbytes
            self.max_held = max(self.max_held, self._held)
            self.max_reserved = max(self.max_reserved, self._reserved)
            if on_admit is not None:
                on_admit()
            return True

    def release_permit(self, on_release: Callable[[], None] | None = None) -> None:
        with self._cv:
            if self._held <= 0:
                raise RuntimeError("permit released more often than acquired")
            self._held -= 1
            if on_release is not None:
                on_release()
            self._cv.notify_all()

    def release_bytes(self, nbytes: int) -> None:
        with self._cv:
            if nbytes > self._reserved:
                raise RuntimeError("budget bytes released more often than reserved")
            self._reserved -= nbytes
            self._cv.notify_all()

    # -- live changes --------------------------------------------------------------------------
    def resize(self, partition_workers: int) -> int:
        if partition_workers < 1:
            raise ValueError("partition_workers must be at least 1")
        with self._cv:
            old, self._limit = self._limit, partition_workers
            self._cv.notify_all()
            return old

    def set_budget(self, nbytes: int) -> int:
        if nbytes < 0:
            raise ValueError("memory budget cannot be negative")
        with self._cv:
            old, self._budget = self._budget, nbytes
            self._cv.notify_all()
            return old

    def pause(self) -> None:
        with self._cv:
            self._paused = True

    def resume(self) -> None:
        with self._cv:
            self._paused = False
            self._cv.notify_all()

    def close(self) -> None:
        with self._cv:
            self._closed = True
            self._cv.notify_all()
