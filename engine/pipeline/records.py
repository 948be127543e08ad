"""The Engine's records of jobs and partitions: what was submitted, where each partition is,
and what came of it.

A :class:`Part` is one partition on its way through the stages (queued → synthesizing →
waiting_gpu → gpu → deallocating → finalizing → done, or failed / cancelled); a
:class:`JobRecord` is a submitted :class:`Job` with its circuit, key and the outcome of each
partition. :class:`Records` holds both, the queue of partitions waiting for admission and the
set of unfinished jobs. Every field is read and written under the Engine's state lock (one
lock for records, keys and workers, so that a decision that reads several of them is one step).
"""

from __future__ import annotations

import itertools
import threading
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from engine.pipeline.messages import GpuDone, JobSource, PartKey, Proved
from engine.pipeline.partition import PartitionCircuit
from engine.pipeline.shm import SegmentSpec
from engine.stream import schema as events
from engine.telemetry.timers import PartitionTimers

ENDED = ("done", events.FAILED, events.CANCELLED)  # a partition's last stages


@dataclass(frozen=True)
class Job:
    """A sealing job: P partition proofs of one preset's circuit, of the preset's synthetic
    sector for ``seed`` or, with ``source``, of a C1 output's sector."""

    preset: str
    partitions: int = 1
    seed: int = 1
    source: JobSource | None = None


@dataclass(frozen=True)
class Setback:
    """Why a partition's GPU or finalize half came to nothing: ``retry`` (its worker died: run
    it again) or not (the task failed: the partition fails)."""

    reason: str
    retry: bool = False


@dataclass
class Part:
    """One partition in flight: its stage, timers, buffers, permit and the worker holding it.
    ``gpu_done`` / ``proved`` / ``abc_unmapped`` are set when the matching reply (or a setback)
    arrives; a retry gives the partition fresh events and a new attempt number."""

    job: int
    index: int
    preset: str
    seed: int
    nbytes: int
    timers: PartitionTimers = field(default_factory=PartitionTimers)
    attempt: int = 0
    stage: str = ""
    segs: dict[str, SegmentSpec] | None = None
    permit: bool = False
    reserved: bool = False
    worker: str | None = None
    gpu_done: threading.Event = field(default_factory=threading.Event)
    gpu_result: GpuDone | Setback | None = None
    proved: threading.Event = field(default_factory=threading.Event)
    proof_result: Proved | Setback | None = None
    abc_unmapped: threading.Event = field(default_factory=threading.Event)  # the prover let go
    cancelled: bool = False

    @property
    def key(self) -> PartKey:
        return PartKey(self.job, self.index, self.attempt)

    def next_attempt(self) -> None:
        """Forget the last attempt's outcome, worker and timers before queueing it again."""
        self.attempt += 1
        self.gpu_done = threading.Event()
        self.proved = threading.Event()
        self.abc_unmapped = threading.Event()
        self.gpu_result = self.proof_result = None
        self.worker = None
        self.timers = PartitionTimers()

    def wake(self) -> None:
        """Set every event a thread may wait on for this partition (cancel, prover death)."""
        self.gpu_done.set()
        self.proved.set()
        self.abc_unmapped.set()


@dataclass
class JobRecord:
    """A submitted job, its circuit and key, and the outcome of each of its partitions."""

    id: int
    job: Job
    circuit: PartitionCircuit
    key_path: str
    vk: Any
    t_submit: float
    proofs: dict[int, bytes] = field(default_factory=dict)
    verified: dict[int, bool] = field(default_factory=dict)
    failed: dict[int, str] = field(default_factory=dict)
    cancelled: dict[int, str] = field(default_factory=dict)  # partition -> why (a stop)
    finished: bool = False  # every partition has ended
    announced: bool = False  # and its proof_done is emitted (or it was cancelled: none)
    key_error: str | None = None  # set when a prover could not load the key: partitions fail

    def ended(self) -> int:
        """How many partitions have ended (proven, failed or cancelled)."""
        return len(self.proofs) + len(self.failed) + len(self.cancelled)


class Records:
    """Jobs by id, partitions by (job, index), the admission queue and the unfinished jobs."""

    def __init__(self) -> None:
        self.parts: dict[tuple[int, int], Part] = {}
        self.jobs: dict[int, JobRecord] = {}
        self.pending: deque[Part] = deque()  # waiting for admission, in order
        self.live_jobs: set[int] = set()  # jobs not finished
        self._ids = itertools.count(1)

    def next_id(self) -> int:
        return next(self._ids)

    def add_job(self, js: JobRecord) -> None:
        self.jobs[js.id] = js
        self.live_jobs.add(js.id)

    def live(self) -> list[JobRecord]:
        """The unfinished jobs, oldest first."""
        return [self.jobs[j] for j in sorted(self.live_jobs)]

    def lookup(self, key: PartKey) -> Part | None:
        """The partition of ``key`` if it is still on that attempt and not cancelled."""
        p = self.parts.get((key.job, key.index))
        if p is None or p.attempt != key.attempt or p.cancelled:
            return None
        return p

    def of_key(self, key: PartKey) -> Part | None:
        """The partition of ``key`` if it is still on that attempt (cancelled or not)."""
        p = self.parts.get((key.job, key.index))
        return p if p is not None and p.attempt == key.attempt else None

    def unended(self) -> list[Part]:
        return [p for p in self.parts.values() if p.stage not in ENDED]

    def on_prover(self, name: str) -> list[Part]:
        """Every partition in prover ``name``'s GPU or finalize half."""
        return [p for p in self.parts.values()
                if p.worker == name and p.stage in ("gpu", "deallocating", "finalizing")]

    def all_finished(self) -> bool:
        """Whether every job has finished and said so (proof_done emitted, or cancelled)."""
        return all(js.announced for js in self.jobs.values())
