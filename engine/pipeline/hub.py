"""The Engine's event hub: every subscriber's queue, and the one lock events are emitted under.

Each event is built at the moment it is published, under that lock, so that the order of the
stream and the order of the events' ``t`` agree for every subscriber (the console's fold and a
session file rely on it).
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import Any

from engine.telemetry.timers import SessionClock


class EventHub:
    """Fans each event out to every ``subscribe()`` queue, stamped with the session clock."""

    def __init__(self, clock: SessionClock) -> None:
        self.clock = clock
        self._lock = threading.Lock()
        self._subscribers: list[queue.Queue[dict[str, Any]]] = []

    def subscribe(self) -> queue.Queue[dict[str, Any]]:
        """A new thread-safe queue that receives every event from now on."""
        q: queue.Queue[dict[str, Any]] = queue.Queue()
        with self._lock:
            self._subscribers.append(q)
        return q

    def emit(self, make: Callable[[float], dict[str, Any]]) -> float:
        """Build an event at the current time and publish it; returns its t."""
        with self._lock:
            t = self.clock.now()
            ev = make(t)
            for q in self._subscribers:
                q.put(ev)
            return t

    def publish(self, ev: dict[str, Any]) -> None:
        """A ready-made event (a sampler's), stamped with the time it is published at."""
        self.emit(lambda t: {**ev, "t": t})
