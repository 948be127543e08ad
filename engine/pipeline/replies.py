"""Replies from the worker processes: a queue per worker, merged into one queue here.

Why: a multiprocessing.Queue that several processes write serializes them with one write lock
(a semaphore shared by the processes). A worker killed (SIGKILL, the OOM killer) while its
feeder thread holds that lock never gives it back, and every other worker's replies then wait for
it for good. Seen in a CI rehearsal (2026-12-04): a prover SIGKILLed as a partition finished left
the restarted prover's KeyLoaded and a synthesis worker's replies blocked in their feeder threads
on that lock, and the engine waited for the key forever. With a queue per worker a dead worker
can only block its own; one thread per worker moves its replies into a local queue, which the
orchestrator's results thread reads as it read the shared one.
"""

from __future__ import annotations

import queue
import threading
from dataclasses import dataclass
from typing import Any

POLL_S = 0.1  # how often a forwarding thread looks whether its worker has ended


@dataclass
class _Route:
    """One worker's reply queue and the thread that forwards it."""

    replies: Any
    ended: threading.Event
    thread: threading.Thread


def _forward(replies: Any, merged: queue.Queue[Any], ended: threading.Event) -> None:
    """Move every reply of one worker into ``merged``; once ``ended`` is set, stop at the first
    moment the worker's queue is empty (what it sent before it died is still delivered)."""
    while True:
        try:
            msg = replies.get(timeout=POLL_S)
        except queue.Empty:
            if ended.is_set():
                return
            continue
        except (EOFError, OSError, ValueError):  # the queue was closed under us
            return
        merged.put(msg)


class Replies:
    """Where the engine's workers answer: ``route()`` gives each new worker process a queue of
    its own, ``get`` reads every worker's replies in the order they arrive here, ``end`` lets a
    dead worker's queue go, ``close`` all of them."""

    def __init__(self, ctx: Any) -> None:
        self._ctx = ctx
        self._merged: queue.Queue[Any] = queue.Queue()
        self._lock = threading.Lock()
        self._routes: dict[int, _Route] = {}

    def route(self) -> Any:
        """A new reply queue for one worker process (hand it to the process at its start)."""
        replies = self._ctx.Queue()
        ended = threading.Event()
        thread = threading.Thread(target=_forward, args=(replies, self._merged, ended),
                                  name="sealtop-replies", daemon=True)
        with self._lock:
            self._routes[id(replies)] = _Route(replies, ended, thread)
        thread.start()
        return replies

    def end(self, replies: Any) -> None:
        """The worker behind ``replies`` is gone: forward what it left, then stop reading."""
        with self._lock:
            route = self._routes.pop(id(replies), None)
        if route is not None:
            route.ended.set()

    def get(self, timeout: float) -> Any:
        """The next reply of any worker (queue.Empty after ``timeout`` seconds)."""
        return self._merged.get(timeout=timeout)

    def close(self) -> None:
        """Stop forwarding every worker's replies (after the workers have stopped)."""
        with self._lock:
            routes = list(self._routes.values())
            self._routes.clear()
        for r in routes:
            r.ended.set()
        for r in routes:
            r.thread.join(timeout=2 * POLL_S + 1.0)
            r.replies.close()
