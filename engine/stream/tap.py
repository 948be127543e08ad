"""One tap from an engine subscription to every sink.

The engine publishes into a thread-safe queue (Engine.subscribe()). The tap's drain thread takes
events from it in order and hands each to every sink's own queue; each sink runs in its own
thread and takes its events in batches. So:

- the engine never waits on a sink (its subscription queue is unbounded);
- a slow sink never holds up another: an *essential* sink (the recorder) has an unbounded queue
  and never loses an event; a non-essential one (a console bridge, an exporter) has a bounded
  queue and drops what does not fit, counting the drops;
- a sink that raises is stopped and its error kept (:attr:`SinkStats.error`); the others go on.
  ``on_error`` hears about it once, from the sink's thread.

Lines from outside the engine (the console's own log lines) enter the same stream with
:meth:`Tap.publish`; the drain thread stamps them with the time of the latest engine event, so
the stream's order and its t order agree.

:meth:`Tap.close` drains everything the source still holds, delivers it, and joins every thread;
after it, each sink has seen every event (or its error, or its drop count, says why not).
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from engine.stream.schema import Event
from kernels.textfmt import exc_line

Batch = list[Event]
IDLE_S = 0.25  # a sink's idle callback runs when its queue was empty this long
BATCH_MAX = 2000


@dataclass
class SinkStats:
    name: str
    essential: bool
    delivered: int = 0
    dropped: int = 0
    error: str | None = None


@dataclass
class _Sink:
    stats: SinkStats
    take: Callable[[Batch], None]
    idle: Callable[[], None] | None
    close: Callable[[], None] | None
    q: queue.Queue[Any] = field(default_factory=queue.Queue)
    thread: threading.Thread | None = None


_END = object()


class Tap:
    """Drains ``source`` into the sinks added before :meth:`start`."""

    def __init__(
        self,
        source: queue.Queue[Any],
        on_error: Callable[[SinkStats, BaseException], None] | None = None,
        name: str = "sealtop-tap",
    ) -> None:
        self.source = source
        self.on_error = on_error
        self.name = name
        self._sinks: list[_Sink] = []
        self._drain: threading.Thread | None = None
        self._closing = threading.Event()
        self._closed = False
        self.last_t = 0.0

    # ---- wiring --------------------------------------------------------------------------

    def add(
        self,
        name: str,
        take: Callable[[Batch], None],
        *,
        essential: bool = False,
        capacity: int = 10_000,
        idle: Callable[[], None] | None = None,
        close: Callable[[], None] | None = None,
    ) -> SinkStats:
        """A sink: ``take`` gets batches of events in stream order; ``idle`` runs when no event
        came for a moment; ``close`` runs after the last batch. Returns its live stats."""
        if self._drain is not None:
            raise RuntimeError("add sinks before the tap starts")
        stats = SinkStats(name, essential)
        q: queue.Queue[Any] = queue.Queue() if essential else queue.Queue(maxsize=capacity)
        self._sinks.append(_Sink(stats, take, idle, close, q))
        return stats

    @property
    def sinks(self) -> list[SinkStats]:
        return [s.stats for s in self._sinks]

    def native_ids(self) -> list[int]:
        """The kernel thread ids of the drain thread and every sink's thread (for measuring
        what the tap costs in CPU time)."""
        threads = [self._drain, *(s.thread for s in self._sinks)]
        return [t.native_id for t in threads if t is not None and t.native_id is not None]

    def start(self) -> Tap:
        for s in self._sinks:
            s.thread = threading.Thread(target=self._run_sink, args=(s,),
                                        name=f"{self.name}-{s.stats.name}", daemon=True)
            s.thread.start()
        self._drain = threading.Thread(target=self._run_drain, name=self.name, daemon=True)
        self._drain.start()
        return self

    def publish(self, make: Callable[[float], Event]) -> None:
        """Put a line from outside the engine into the stream; ``make(t)`` builds it when the
        drain thread reaches it, t being the latest event time."""
        self.source.put(make)

    # ---- threads -------------------------------------------------------------------------

    def _deliver(self, item: object) -> None:
        if callable(item):
            ev = item(self.last_t)
        elif isinstance(item, dict):
            ev = item
        else:  # a None some producers put to mark their end: not an event
            return
        t = ev.get("t")
        if isinstance(t, (int, float)) and t > self.last_t:
            self.last_t = float(t)
        for s in self._sinks:
            if s.stats.error is not None:
                continue
            if s.stats.essential:
                s.q.put(ev)
                continue
            try:
                s.q.put_nowait(ev)
            except queue.Full:
                s.stats.dropped += 1

    def _run_drain(self) -> None:
        while True:
            try:
                item = self.source.get(timeout=0.1)
            except queue.Empty:
                if self._closing.is_set():
                    break
                continue
            self._deliver(item)
        # Essential sinks first: their queues are unbounded, so their end mark never waits on a
        # slow non-essential sink catching up.
        for s in sorted(self._sinks, key=lambda s: not s.stats.essential):
            s.q.put(_END)

    def _run_sink(self, s: _Sink) -> None:
        while True:
            try:
                item = s.q.get(timeout=IDLE_S)
            except queue.Empty:
                if s.idle is not None and s.stats.error is None:
                    self._call(s, s.idle)
                continue
            batch: Batch = []
            end = item is _END
            if not end:
                batch.append(item)
                while len(batch) < BATCH_MAX:
                    try:
                        nxt = s.q.get_nowait()
                    except queue.Empty:
                        break
                    if nxt is _END:
                        end = True
                        break
                    batch.append(nxt)
            if batch and s.stats.error is None:
                if self._call(s, lambda: s.take(batch)):
                    s.stats.delivered += len(batch)
                else:
                    s.stats.dropped += len(batch)
            elif batch:
                s.stats.dropped += len(batch)
            if end:
                break
        if s.close is not None and s.stats.error is None:
            self._call(s, s.close)

    def _call(self, s: _Sink, fn: Callable[[], None]) -> bool:
        try:
            fn()
            return True
        except Exception as exc:  # noqa: BLE001 - a failing sink is reported, never fatal
            s.stats.error = exc_line(exc)
            if self.on_error is not None:
                try:
                    self.on_error(s.stats, exc)
                except Exception:  # noqa: BLE001
                    pass
            return False

    # ---- the end -------------------------------------------------------------------------

    def close(self, timeout: float | None = None) -> list[SinkStats]:
        """Deliver everything the source holds, end every sink and join the threads."""
        if self._closed:
            return self.sinks
        self._closed = True
        if self._drain is None:
            self.start()
        self._closing.set()
        assert self._drain is not None
        # The drain thread empties the source before it ends; a bounded sink's queue may be
        # full, so its end mark waits (in the drain thread) until the sink has caught up.
        self._drain.join(timeout)
        for s in self._sinks:
            if s.thread is not None:
                s.thread.join(timeout)
        return self.sinks
