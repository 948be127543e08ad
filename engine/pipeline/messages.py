"""The messages between the Engine and its worker processes, one frozen dataclass each.

Every task the orchestrator sends a worker and every reply a worker sends back is one of the
classes below; they travel pickled through multiprocessing queues, so they hold only small
values (large vectors stay in the shared-memory segments that ``segs`` names). A reply names
its worker and, for partition work, the partition's :class:`PartKey`; the orchestrator drops a
reply whose key is for an attempt it has since retried or cancelled.

Tasks (orchestrator → one worker's task queue):

* :class:`SynthTask` to a synthesis worker: write a, b, c and z into ``segs``;
* :class:`LoadKey` to a prover: make the proving key named by ``source`` ready before any
  partition needs it (today ``source`` is a key file's path);
* :class:`ProveTask` to a prover: the GPU half, then the B2/assembly half, of one partition;
* :class:`Stop`: the worker ends.

Replies (every worker → the one shared result queue):

* :class:`Ready` once a worker is up (a prover's backend loaded, synthesis kernels warm);
  :class:`WorkerFailed` when a prover cannot start at all;
* :class:`SynthDone`; :class:`KeyLoaded` / :class:`KeyFailed` (with the prover's pid, so a
  reply from a process that has since died is recognised);
* :class:`GpuDone` once H and the G1 MSMs are done, :class:`AbcUnmapped` once the prover has
  let go of a, b and c, then :class:`Proved`;
* :class:`TaskFailed` for any task that raised.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from engine.pipeline.shm import SegmentSpec


@dataclass(frozen=True)
class PartKey:
    """One attempt at one partition of one job: what partition work and its replies name."""

    job: int
    index: int
    attempt: int

    def tag(self) -> str:
        """A short name for segment names and logs (``j1p0a0``)."""
        return f"j{self.job}p{self.index}a{self.attempt}"


@dataclass(frozen=True)
class JobSource:
    """What a job proves when it is not a preset's synthetic witness: a C1 output file (Filecoin's
    SealCommitPhase1Output JSON, on this host) and the prover and sector ids the file does not
    hold (engine/c2/job.py reads it)."""

    c1: str
    prover_id: str  # 32 bytes, hex
    sector_id: int


# -- tasks ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SynthTask:
    """Synthesize one partition: its witness into ``segs["z"]``, then A·z, B·z, C·z into
    ``segs["a"]``, ``segs["b"]``, ``segs["c"]``; with ``abc_eval`` "gpu", only the witness,
    in compact form into ``segs["w"]`` (engine.groth16.compact)."""

    key: PartKey
    preset: str
    cache_dir: str
    seed: int
    partitions: int
    segs: dict[str, SegmentSpec]
    abc_eval: str = "cpu"
    source: JobSource | None = None  # the job's C1 output, where it proves one
    inputs: Any = None  # the partition's share of the job's input (PartitionCircuit.inputs)


@dataclass(frozen=True)
class LoadKey:
    """Make a proving key ready in the prover (memory-map it, upload its point tables).
    ``source`` says where the key comes from: today the path of its key file. ``compact``
    (abc_eval = "gpu"): (preset, circuit cache) whose compact matrices to make resident too,
    so no partition's GPU half pays for them."""

    source: str
    compact: tuple[str, str] | None = None


@dataclass(frozen=True)
class ProveTask:
    """Prove one partition with the key loaded from ``key_source``, reading its vectors from
    ``segs``; ``b_g2`` says where the B2 MSM runs."""

    key: PartKey
    preset: str
    key_source: str
    segs: dict[str, SegmentSpec]
    b_g2: str
    abc_eval: str = "cpu"  # "gpu": segs["w"] is the compact witness, a, b, c are evaluated here
    cache_dir: str = ""  # where the circuit is cached (the compact matrices are made from it)


@dataclass(frozen=True)
class Stop:
    """The worker ends (a prover's slot threads pass it on to their siblings)."""


Task = SynthTask | LoadKey | ProveTask | Stop


# -- replies ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Ready:
    """A worker has started; ``backend`` is a prover's backend name (None for synthesis)."""

    worker: str
    backend: str | None = None


@dataclass(frozen=True)
class WorkerFailed:
    """A prover could not start (its backend would not load): it is given up on."""

    worker: str
    message: str


@dataclass(frozen=True)
class SynthDone:
    """A partition's a, b, c and z are written; the witness and evaluation times in ms."""

    worker: str
    key: PartKey
    witness_ms: float
    eval_ms: float


@dataclass(frozen=True)
class KeyLoaded:
    """The key from ``source`` is ready in prover ``worker`` (process ``pid``), after ``ms``."""

    worker: str
    source: str
    ms: float
    pid: int
    vk: Any = None  # the verifying key, from a prover that generated the key itself (device source)


@dataclass(frozen=True)
class KeyProgress:
    """A progress line of prover ``worker`` generating the key of ``source`` on its device."""

    worker: str
    source: str
    line: str


@dataclass(frozen=True)
class KeyFailed:
    """The key from ``source`` could not be made ready in prover ``worker`` (process ``pid``)."""

    worker: str
    source: str
    message: str
    pid: int


@dataclass(frozen=True)
class GpuDone:
    """The GPU half of a partition is done and a, b, c are no longer needed. ``timings`` holds
    ms per kernel group, ``gpu_call`` and ``gpu_host``, and the prover's monotonic stamps
    ``recv_mono`` / ``sent_mono`` (seconds) around the call."""

    worker: str
    key: PartKey
    timings: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class AbcUnmapped:
    """The prover holds no mapping of the partition's a, b and c any more."""

    worker: str
    key: PartKey


@dataclass(frozen=True)
class Proved:
    """A partition's proof and its B2 MSM's time in ms (the finalize half's where that was not
    timed). (The orchestrator verifies it against the public inputs it derives from the job,
    never the prover's z.)"""

    worker: str
    key: PartKey
    proof: bytes
    b2_ms: float


@dataclass(frozen=True)
class TaskFailed:
    """A task of partition ``key`` raised; ``message`` is the exception in one line."""

    worker: str
    key: PartKey
    message: str


Reply = (Ready | WorkerFailed | SynthDone | KeyLoaded | KeyProgress | KeyFailed | GpuDone | AbcUnmapped | Proved
         | TaskFailed)
