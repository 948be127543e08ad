"""A stand-in for the embedded Engine with the design.md API, for console tests that must not
depend on the real engine's speed: it publishes a recorded session and answers knob changes
with knob events, as the real engine does. Tests that need the real engine live in
test_app_live.py and skip where it is absent.
"""

from __future__ import annotations

import queue
import threading
from typing import Any

from engine.stream import schema as E


class FakeEngine:
    """Engine(config) / start / submit / subscribe / set_knob / pause / resume / stop."""

    def __init__(self, config: Any = None, events: list[dict] | None = None) -> None:
        self.config = config
        self.script = list(events or [])
        self.queues: list[queue.Queue] = []
        self.knobs: dict[str, Any] = {"partition_workers": 2, "gpu_channel_capacity": 1,
                                      "memory_budget": 8 * 2**30}
        for ev in self.script[:1]:
            if ev.get("kind") == "session_start":
                cfg = ev["config"]
                self.knobs.update({k: cfg[k] for k in self.knobs if k in cfg})
        for ev in self.script:
            if ev.get("kind") == "knob" and ev["name"] in self.knobs:
                self.knobs[ev["name"]] = ev["new"]
        self.paused = False
        self.submitted: list[Any] = []
        self.started = threading.Event()
        self.stopped = False
        self.t = 0.0

    def _publish(self, ev: dict | None) -> None:
        if ev is not None:
            self.t = max(self.t, float(ev["t"]))
        for q in self.queues:
            q.put(ev)

    def subscribe(self) -> queue.Queue:
        q: queue.Queue = queue.Queue()
        self.queues.append(q)
        return q

    def start(self) -> None:
        if not self.script:
            self.script = [E.session_start(0.0, {"backend": "cpu", **self.knobs}, {"cpus": 2},
                                           [], "2026-11-30T09:00:00Z")]
        for ev in self.script:
            self._publish(ev)
        self.started.set()

    def submit(self, job: Any) -> int:
        self.submitted.append(job)
        jid = 1000 + len(self.submitted)
        self._publish(E.job_submitted(self.t, jid, "tiny", 1, 64))
        return jid

    def set_knob(self, name: str, value: Any) -> None:
        from engine.config import check_knob

        value = check_knob(name, value)  # ValueError, as the engine would
        old = self.knobs.get(name)
        self.knobs[name] = value
        self._publish(E.knob(self.t, name, old, value, "operator"))

    def pause(self) -> None:
        self.paused = True
        self._publish(E.knob(self.t, "paused", False, True, "operator"))

    def resume(self) -> None:
        self.paused = False
        self._publish(E.knob(self.t, "paused", True, False, "operator"))

    def stop(self, drain: bool = True) -> None:
        self.stopped = True
        self._publish(None)


def test_fake_engine_publishes_and_confirms_knobs():
    eng = FakeEngine()
    q = eng.subscribe()
    eng.start()
    assert q.get_nowait()["kind"] == "session_start"
    eng.set_knob("partition_workers", 4)
    ev = q.get_nowait()
    assert (ev["kind"], ev["name"], ev["old"], ev["new"]) == ("knob", "partition_workers", 2, 4)
    eng.stop()
    assert q.get_nowait() is None
