"""The console's live source: the tap on an engine's stream, with the recorder and the bridge as
its sinks, and the console's own lines published into it.

Plain Python (no Textual import): the App gives it a function that posts a batch of events to
the UI thread and one that shows a notice, and asks it to say a line or to end. Everything the
dashboard folds passes through here, in the same order the recorder writes it, which is what
makes a live session and its replay end in identical states.
"""

from __future__ import annotations

import os
import queue
import threading
from typing import Callable

from engine.stream.recorder import RecordingError, SessionRecorder
from engine.stream.schema import Event, console
from engine.stream.tap import SinkStats, Tap

WORKER_NICE = 10  # the engine's worker processes' niceness while the console embeds them


class LiveStream:
    """One engine subscription carried to the recorder (when recording) and the dashboard."""

    def __init__(
        self,
        source: queue.Queue,
        record: str | None,
        post_events: Callable[[list[Event]], None],
        notice: Callable[[str, str], None],
        sinks: list[tuple[str, Callable[[list[Event]], None]]] | None = None,
    ) -> None:
        """``notice(level, text)`` hears what the stream itself has to say (a recording that
        cannot start or fails); it may be called from the tap's threads. ``sinks`` are more
        essential sinks (the exporter, the attach socket: engine/watchers.py)."""
        self._notice = notice
        self._lock = threading.Lock()
        self.tap: Tap | None = Tap(source, on_error=self._sink_failed, name="sealtop-console-tap")
        self.recorder: SessionRecorder | None = None
        if record:
            try:
                self.recorder = SessionRecorder(record)
            except RecordingError as exc:
                notice("error", str(exc))
            else:
                rec = self.recorder
                self.tap.add("recorder", lambda b: [rec.write(e) for e in b], essential=True,
                             idle=rec.tick, close=rec.close)
        # The bridge never blocks (posting a message only queues it) and must see every event,
        # or the dashboard would differ from the recording.
        self._yielded: set[int] = set()
        self.tap.add("console", lambda b: (self._yield_cpu(b), post_events(b)), essential=True)
        for name, take in sinks or []:
            self.tap.add(name, take, essential=True)
        self.tap.start()

    def _yield_cpu(self, batch: list[Event]) -> None:
        """Lower the CPU priority of the engine's worker processes (nice +WORKER_NICE) as the
        samples name them, so that the console's one thread is given a core first.

        The embedded engine's workers keep both cores of a small machine busy; at the same
        priority the console's thread waited about three times its own CPU time in the run
        queue (/proc/self/task/TID/schedstat), which was most of a key's latency. A lower
        priority costs the workers nothing when the machine has cores to spare; the headless
        verbs, where no operator waits, leave their priority alone."""
        me = os.getpid()
        for ev in batch:
            if ev.get("kind") != "sample":
                continue
            for p in ev.get("processes") or []:
                pid = p.get("pid")
                if isinstance(pid, int) and pid != me and pid not in self._yielded:
                    self._yielded.add(pid)
                    try:
                        os.setpriority(os.PRIO_PROCESS, pid,
                                       max(os.getpriority(os.PRIO_PROCESS, pid), WORKER_NICE))
                    except OSError:  # gone already, or not ours to change
                        pass

    def thread_ids(self) -> list[int]:
        """Kernel ids of the threads that carry the stream (empty once it has ended)."""
        with self._lock:
            tap = self.tap
        return tap.native_ids() if tap is not None else []

    @property
    def recording(self) -> bool:
        return self.recorder is not None and self.recorder.error is None

    def _sink_failed(self, sink: SinkStats, exc: BaseException) -> None:
        if sink.name == "recorder":
            self._notice("error", f"{sink.error}; the console goes on without it")
        else:
            self._notice("warn", f"{sink.name} stopped: {sink.error}")

    def say(self, level: str, text: str, engine_state: str | None = None) -> bool:
        """Publish a console line into the stream; False once the stream has ended."""
        with self._lock:
            tap = self.tap
        if tap is None:
            return False
        tap.publish(lambda t: console(t, level, text, engine_state))
        return True

    def end(self, text: str, timeout: float = 30.0) -> bool:
        """End the stream with the line that says the engine stopped: the tap delivers all
        before it, the recorder is synced and closed. False if it had ended already."""
        with self._lock:
            tap, self.tap = self.tap, None
        if tap is None:
            return False
        tap.publish(lambda t: console(t, "warn", text, engine_state="stopped"))
        try:
            tap.close(timeout=timeout)
        except Exception:  # noqa: BLE001 - ending must not fail
            pass
        return True


__all__ = ["LiveStream"]
