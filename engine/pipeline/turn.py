"""The turn at the GPU that a prover's threads share with gpu_calls = "serial".

One holder at a time, granted in the order it was asked for, except that a holder asking with
``first=True`` goes ahead of every plain one still waiting. A plain lock would do for the slots
alone (each holds it for a whole call, then spends ~70 ms on its next witness), but with the
finalize thread's B2 in the turn too a lock that wakes whichever thread the OS picks could let
the two slots pass the turn back and forth while a finished partition's B2 waits; B2 goes first
because a proof is done only when it is, and it takes ~5 % of a call.
"""

from __future__ import annotations

import heapq
import itertools
import threading
from collections.abc import Iterator
from contextlib import contextmanager


class Turn:
    """A fair lock with one priority class above the rest."""

    def __init__(self) -> None:
        self._cv = threading.Condition()
        self._held = False
        self._waiting: list[tuple[int, int]] = []  # (0 first / 1 plain, ticket): a heap
        self._tickets = itertools.count()

    def locked(self) -> bool:
        with self._cv:
            return self._held

    def waiting(self) -> int:
        """How many threads are waiting for the turn."""
        with self._cv:
            return len(self._waiting)

    @contextmanager
    def hold(self, first: bool = False) -> Iterator[None]:
        """Wait for the turn (ahead of plain askers when ``first``), hold it inside the block."""
        me = (0 if first else 1, next(self._tickets))
        with self._cv:
            heapq.heappush(self._waiting, me)
            self._cv.wait_for(lambda: not self._held and self._waiting[0] == me)
            heapq.heappop(self._waiting)
            self._held = True
        try:
            yield
        finally:
            with self._cv:
                self._held = False
                self._cv.notify_all()
