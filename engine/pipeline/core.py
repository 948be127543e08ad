"""What the orchestrator's threads share, and the few steps every one of them takes on it.

The Engine's parts (admission, the results thread, the GPU slots, dealloc and finalize, the
endings of partitions and jobs) each take this one object rather than the Engine: they need
the same state, and one object that holds it, under one lock, keeps a decision that reads
several parts of it one step. One state lock (``lock``) guards the records, the key registry
and the workers, and one condition on it (``changed``) wakes every thread that waits for that
state to change: each change notifies it, so no loop polls.

Beside the state it holds the steps that every part needs and that touch several pieces of it
at once: a partition's stage event, the release of its buffers and of its synthesis permit.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from engine.config import EngineConfig
from engine.pipeline.channel import BoundedChannel
from engine.pipeline.circuits import circuit_cache_dir
from engine.pipeline.hub import EventHub
from engine.pipeline.keys import KeyRegistry
from engine.pipeline.records import Part, Records
from engine.pipeline.scheduler import Admission
from engine.pipeline.shm import SegmentRegistry
from engine.pipeline.supervisor import Supervisor, Worker
from engine.stream import schema as events
from engine.telemetry.counters import Counters


class Core:
    """The state of one Engine's orchestrator, shared by its threads."""

    def __init__(
        self,
        config: EngineConfig,
        hub: EventHub,
        counters: Counters,
        segments: SegmentRegistry,
        workers: Supervisor,
        admission: Admission,
        channel: BoundedChannel,
        devices: list[int | None],
        on_device: bool,
        progress: Callable[[str], None] | None,
    ) -> None:
        """``devices`` are the provers' devices (``[None]``: one CPU prover); ``on_device``
        whether keys go up to a device. The config is the Engine's own copy, whose live knobs
        change while the threads read it."""
        self.config = config
        self.hub = hub
        self.clock = hub.clock
        self.counters = counters
        self.segments = segments
        self.workers = workers
        self.admission = admission
        self.channel = channel
        self.devices = devices
        self.on_device = on_device
        self.progress = progress
        self.lock = threading.RLock()  # guards records, keys and workers
        self.changed = threading.Condition(self.lock)  # notified on every change of them
        self.records = Records()
        self.keys = KeyRegistry()
        self.stopping = False  # stop() has begun: no new job, no stall reports
        self.closed = False  # stop() has ended the stages: every loop returns

    # -- events --------------------------------------------------------------------------------
    def emit(self, make: Callable[[float], dict[str, Any]]) -> float:
        """Build an event at the current time and publish it (engine.pipeline.hub); its t."""
        return self.hub.emit(make)

    def stage(self, p: Part, stage: str, worker: str, reason: str | None = None) -> float:
        """Move ``p`` to ``stage`` and emit the stage event; returns its t."""
        p.stage = stage
        return self.emit(lambda t: events.stage(t, p.job, p.index, stage, worker, reason))

    def error(self, where: str, message: str) -> None:
        self.emit(lambda t: events.error(t, where, message))

    def say(self, line: str) -> None:
        """A line for the operator about a long preparation (the Engine's ``progress``)."""
        if self.progress is not None:
            self.progress(line)

    # -- small shared steps --------------------------------------------------------------------
    def circuit_cache(self) -> str:
        """Where compiled circuits are kept, shared by the orchestrator and the workers."""
        return circuit_cache_dir(self.config.param_cache_path())

    def idle(self) -> bool:
        """Whether every submitted job has finished (its proof_done emitted)."""
        with self.lock:
            return self.records.all_finished()

    def spawn_synth(self) -> Worker:
        """Start one more synthesis worker (under ``lock``)."""
        w = self.workers.spawn_synth()
        self.changed.notify_all()
        return w

    def release_buffers(self, p: Part) -> int:
        """Unlink a partition's segments and return its budget bytes; idempotent."""
        freed = 0
        with self.lock:  # the dealloc thread and a retry may race for the same partition
            segs, p.segs = p.segs, None
            reserved, p.reserved = p.reserved, False
        if segs is not None:
            freed = self.segments.release_many(list(segs.values()))
            self.counters.add("holding_abc", -1)
            self.counters.add("abc_freed")
        if reserved:
            self.admission.release_bytes(p.nbytes)
        return freed

    def release_permit(self, p: Part, on_release: Callable[[], None] | None = None) -> None:
        """Give back the partition's synthesis permit (if it holds one); ``on_release`` runs
        under the admission lock, so the stage change and the free permit are one step."""
        with self.lock:
            held, p.permit = p.permit, False
        if held:
            self.admission.release_permit(on_release)
        elif on_release is not None:
            on_release()
