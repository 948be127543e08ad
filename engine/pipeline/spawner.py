"""One long-lived thread that starts every worker process of an engine.

Workers ask the kernel for a parent-death signal (engine.pipeline.workers.die_with_parent), so a
killed orchestrator leaves no worker behind. Linux sends that signal when the *thread* that
forked the worker exits, not the process, and the engine decides to start workers from several
of its threads (start-up, the admission thread growing the pool, the results thread restarting a
dead prover); some of those threads may end before the workers they started (the console starts
its engine from a short-lived worker thread). So every ``Process.start()`` runs here instead, on
a thread that the engine stops only after every worker has been joined.
"""

from __future__ import annotations

import queue
import threading
from concurrent.futures import Future
from typing import Any


class Spawner:
    """Runs ``process.start()`` calls on its own thread, one at a time, and waits for each."""

    def __init__(self) -> None:
        self._q: queue.Queue[tuple[Any, Future] | None] = queue.Queue()
        self._thread = threading.Thread(target=self._run, name="sealtop-spawner", daemon=True)
        self._thread.start()
        self._closed = False

    def start(self, process: Any) -> None:
        """Start ``process`` from the spawner thread; re-raises what start() raised."""
        if self._closed:
            raise RuntimeError("the spawner is closed")
        if threading.current_thread() is self._thread:
            process.start()
            return
        done: Future = Future()
        self._q.put((process, done))
        done.result()

    def _run(self) -> None:
        while True:
            item = self._q.get()
            if item is None:
                return
            process, done = item
            try:
                process.start()
            except BaseException as exc:  # handed to the caller, which decides
                done.set_exception(exc)
            else:
                done.set_result(None)

    def close(self, timeout: float = 5.0) -> None:
        """End the thread: call only once every process it started has exited."""
        if self._closed:
            return
        self._closed = True
        self._q.put(None)
        self._thread.join(timeout)
