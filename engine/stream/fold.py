"""The one fold of the event stream into partition and job records.

Both the console's dashboard state (app/state.py) and the headless summaries
(engine/stream/summary.py) read these records, so the two can never disagree on what a
partition went through, which stage it is in, how long its kernels took or how a job ended.

The fold is incremental: :meth:`Fold.apply` takes one event and returns what changed (a
:class:`StageChange` for a stage event, the record touched for the others), so the dashboard can
write its log line for it and the summaries can walk concurrency exactly.

Sessions recorded before schema 4 have no ``synthesized`` stage (their partitions read
``synthesizing`` until channel entry, however long they waited for a key) and no per-partition
``bytes`` in ``job_submitted``. The fold derives both where the stream says enough: once a
partition's timings arrive, its ``synthesized`` entry is its synthesis start plus the worker's
witness and eval timers; and a job's partitions weigh what the first of them reported as
``bytes_held`` (they are the same circuit). Before that, the old estimate stands.

Outcomes of a job: ``verified`` (its proof_done said so), ``failed`` (a partition failed and was
not retried, or the proof failed verification: see :attr:`JobRecord.reason`), ``cancelled``
(stopped before it was proven; never counted as failed) or ``running``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from engine.stream.schema import (
    ALL_STAGES,
    CANCELLED,
    FAILED,
    HOLDING,
    KERNEL_GROUPS,
    TERMINAL,
    Event,
)

# Bytes of the a, b and c evaluation vectors per constraint (three Fr elements of 32 bytes): a
# partition's footprint in a session that gives neither the job's partition bytes (schema 4's
# job_submitted) nor, yet, any partition's bytes_held. It leaves out z.
ABC_BYTES_PER_CONSTRAINT = 3 * 32

OUTCOMES = ("verified", "failed", "cancelled", "running")
FAILED_VERIFICATION = "failed verification"

Key = tuple[int, int]  # (job, partition)


def kernel_sum(ms: dict[str, float]) -> float | None:
    """Milliseconds of a partition's kernel groups (missing groups count 0); None when no group
    was measured at all."""
    vals = [ms[k] for k in KERNEL_GROUPS if k in ms]
    return sum(vals) if vals else None


@dataclass
class PartitionRecord:
    """Everything the events say about one partition of one job."""

    job: int
    index: int
    constraints: int = 0
    stage: str = "queued"  # the stage it is in now
    worker: str = ""
    # stage -> first entry, this attempt (before schema 4, `synthesized` derived: module docstring)
    entered: dict[str, float] = field(default_factory=dict)
    ms: dict[str, float] = field(default_factory=dict)  # TIMER_KEYS -> milliseconds
    bytes_held: int | None = None
    reason: str | None = None  # why it failed or was cancelled
    attempts: int = 0  # times it (re)entered synthesis; > 1 means a retry
    stages: list[tuple[float, str, str]] = field(default_factory=list)  # every (t, stage, worker)

    @property
    def partition(self) -> int:
        return self.index

    @property
    def kernel_ms(self) -> float | None:
        return kernel_sum(self.ms)

    @property
    def final_stage(self) -> str | None:
        """The stage of the last stage event; None when there was none."""
        return self.stages[-1][1] if self.stages else None

    def first(self, stage: str) -> float | None:
        return next((t for t, s, _ in self.stages if s == stage), None)

    def last(self, stage: str) -> float | None:
        return next((t for t, s, _ in reversed(self.stages) if s == stage), None)

    def interval(self, stage: str) -> tuple[float, float] | None:
        """[start, end) of the last time the partition entered ``stage`` (None while in it)."""
        for i in range(len(self.stages) - 1, -1, -1):
            t, s, _ = self.stages[i]
            if s == stage:
                return (t, self.stages[i + 1][0]) if i + 1 < len(self.stages) else None
        return None

    @property
    def total_ms(self) -> float | None:
        t0, t1 = self.first("queued"), self.last("done")
        return None if t0 is None or t1 is None else (t1 - t0) * 1000.0


@dataclass
class JobRecord:
    """One job (a sector proof of P partitions) as the events describe it."""

    job: int
    preset: str
    partitions: int
    constraints: int  # per partition
    submitted: float
    partition_bytes: int | None = None  # what one partition holds, as the budget counts it
    parts: dict[int, PartitionRecord] = field(default_factory=dict)
    done_t: float | None = None
    verified: bool | None = None  # None until proof_done
    total_ms: float | None = None
    proof_bytes: int = 0
    failed: bool = False  # some partition is in `failed` (a retry clears it)
    version: int = 0  # bumped on every change, so views redraw only the proofs that changed

    @property
    def cancelled(self) -> bool:
        return any(p.stage == CANCELLED for p in self.parts.values())

    @property
    def outcome(self) -> str:
        """verified, failed, cancelled or running (see the module docstring)."""
        if self.failed:
            return "failed"
        if self.verified is True:
            return "verified"
        if self.cancelled:
            return "cancelled"
        if self.verified is False:
            return "failed"
        return "running"

    @property
    def reason(self) -> str | None:
        """Why a failed job failed: its first failed partition's reason, or failed
        verification; None for other outcomes."""
        if self.failed:
            p = next(p for p in sorted(self.parts.values(), key=lambda q: q.index)
                     if p.stage == FAILED)
            return f"p{p.index} {p.reason or 'failed'}"
        return FAILED_VERIFICATION if self.outcome == "failed" else None

    def footprint(self, p: PartitionRecord) -> int:
        """Bytes partition ``p``'s buffers take while it holds them: what its timings reported,
        else what the engine counts for one of this job's partitions, else the a, b, c
        estimate."""
        if p.bytes_held is not None:
            return p.bytes_held
        if self.partition_bytes is not None:
            return self.partition_bytes
        return p.constraints * ABC_BYTES_PER_CONSTRAINT

    @property
    def status(self) -> str:
        """One word for the proofs table: done (verified), failed (a partition failed), bad
        (the proof failed verification), cancelled, or while running what the job is doing:
        the *most* advanced stage among its partitions in flight (past the queue, not ended),
        so a job whose first partitions are on the GPU reads gpu, not the queued stage of its
        last ones (the table's parts column says how many are done). queued while none is in
        flight: none has started, or those that did are done and the rest wait for admission.
        finalizing while every partition is done but no proof_done has said the proof is
        verified (done means verified)."""
        outcome = self.outcome
        if outcome == "verified":
            return "done"
        if outcome == "failed":
            return "failed" if self.failed else "bad"
        if outcome == "cancelled":
            return "cancelled"
        stages = [p.stage for p in self.parts.values()]
        flying = [s for s in stages if s in ALL_STAGES and s != "queued" and s not in TERMINAL]
        if flying:
            return max(flying, key=ALL_STAGES.index)
        if stages and all(s == "done" for s in stages):
            return "finalizing"
        return "queued"

    @property
    def done_partitions(self) -> int:
        return sum(1 for p in self.parts.values() if p.stage == "done")

    def mean_ms(self, key: str) -> float | None:
        """Mean over partitions of one timer (ms); None when no partition measured it.

        Tables show per-partition means because partitions overlap: a sum would exceed the
        proof's wall time and mislead.
        """
        vals = [p.ms[key] for p in self.parts.values() if key in p.ms]
        return sum(vals) / len(vals) if vals else None

    def mean_derived(self, name: str) -> float | None:
        """Mean of a derived per-partition value: synth (witness+eval) or kernel (sum)."""
        vals: list[float] = []
        for p in self.parts.values():
            if name == "synth":
                got = [p.ms[k] for k in ("witness", "eval") if k in p.ms]
                if got:
                    vals.append(sum(got))
            elif name == "kernel":
                k = p.kernel_ms
                if k is not None:
                    vals.append(k)
        return sum(vals) / len(vals) if vals else None


@dataclass
class StageChange:
    """What one stage event did: the partition moved from ``old`` to ``new``; ``retried`` when it
    re-entered synthesis after an earlier attempt."""

    job: JobRecord
    part: PartitionRecord
    old: str
    new: str
    retried: bool


@dataclass
class Fold:
    """Jobs and partitions folded from the stream, with the counts kept as it goes."""

    jobs: dict[int, JobRecord] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=lambda: {s: 0 for s in ALL_STAGES})
    active: set[int] = field(default_factory=set)  # jobs with a partition not yet terminal
    partitions_done: int = 0
    partitions_failed: int = 0  # partitions in `failed` now (a retry takes one back)
    partitions_cancelled: int = 0
    proofs_done: int = 0  # proof_done events
    proofs_verified: int = 0  # proof_done events that said verified
    proofs_bad: int = 0  # proofs that failed verification (no partition failed)
    done_times: list[float] = field(default_factory=list)  # t of every proof_done, in order
    max_holding: int = 0  # exact maximum of partitions holding buffers

    # ---- counts --------------------------------------------------------------------------

    def holding(self) -> int:
        """Partitions holding a, b, c buffers now (start of synthesis until release)."""
        return sum(self.counts[s] for s in HOLDING)

    def outcome_counts(self) -> dict[str, int]:
        out = {o: 0 for o in OUTCOMES}
        for j in self.jobs.values():
            out[j.outcome] += 1
        return out

    @property
    def proofs_failed(self) -> int:
        """Jobs that ended failed: a partition failed, or the proof failed verification."""
        return sum(1 for j in self.jobs.values() if j.outcome == "failed")

    @property
    def proofs_cancelled(self) -> int:
        return sum(1 for j in self.jobs.values() if j.outcome == "cancelled")

    def records(self) -> dict[Key, PartitionRecord]:
        """Every partition the stream said something about beyond its submission."""
        return {
            (j.job, p.index): p
            for j in self.jobs.values()
            for p in j.parts.values()
            if p.stages or p.ms
        }

    # ---- the fold ------------------------------------------------------------------------

    def apply(self, ev: Event) -> StageChange | JobRecord | PartitionRecord | None:
        """Fold one event. Events of other kinds return None. Raises KeyError, TypeError or
        ValueError on an event that does not fit (a stage of an unknown job, say): the
        dashboard logs those, the summaries skip them."""
        kind = ev.get("kind")
        if kind == "stage":
            return self._stage(ev)
        if kind == "job_submitted":
            return self._job_submitted(ev)
        if kind == "partition_timings":
            return self._timings(ev)
        if kind == "proof_done":
            return self._proof_done(ev)
        return None

    def _job(self, ev: Event, what: str) -> JobRecord:
        job = self.jobs.get(int(ev["job"]))
        if job is None:
            raise ValueError(f"{what} for unknown job {ev['job']}")
        return job

    def _job_submitted(self, ev: Event) -> JobRecord:
        t = float(ev["t"])
        jid = int(ev["job"])
        n = int(ev["partitions"])
        constraints = int(ev.get("constraints", 0))
        nbytes = int(ev["bytes"]) if ev.get("bytes") is not None else None
        js = JobRecord(jid, str(ev.get("preset", "")), n, constraints, submitted=t,
                       partition_bytes=nbytes)
        old = self.jobs.get(jid)
        if old is not None:  # a resubmitted id replaces the old job; keep counts consistent
            for p in old.parts.values():
                self._leave(p.stage)
        for i in range(n):
            js.parts[i] = PartitionRecord(jid, i, constraints, entered={"queued": t})
        self.counts["queued"] += n
        self.jobs[jid] = js
        if n:
            self.active.add(jid)
        else:
            self.active.discard(jid)
        return js

    def _leave(self, stage: str) -> None:
        self.counts[stage] -= 1
        if stage == FAILED:
            self.partitions_failed -= 1
        elif stage == CANCELLED:
            self.partitions_cancelled -= 1
        elif stage == "done":
            self.partitions_done -= 1

    def _stage(self, ev: Event) -> StageChange:
        job = self._job(ev, "stage")
        t = float(ev["t"])
        idx = int(ev["partition"])
        new = str(ev["stage"])
        if new not in ALL_STAGES:
            raise ValueError(f"unknown stage {new!r}")
        p = job.parts.get(idx)
        if p is None:
            p = job.parts[idx] = PartitionRecord(job.job, idx, job.constraints)
            self.counts["queued"] += 1
        old = p.stage
        worker = str(ev.get("worker", ""))
        retried = False
        if new == "synthesizing":
            p.attempts += 1
            if p.attempts > 1:  # a retry: this attempt's stage history starts over
                retried = True
                p.entered = {k: v for k, v in p.entered.items() if k == "queued"}
                p.reason = None
        if old != new:
            self._leave(old)
            self.counts[new] += 1
            if new == "done":
                self.partitions_done += 1
            elif new == FAILED:
                self.partitions_failed += 1
            elif new == CANCELLED:
                self.partitions_cancelled += 1
        if new in (FAILED, CANCELLED):
            p.reason = ev.get("reason")
        p.stage = new
        p.worker = worker
        p.entered.setdefault(new, t)
        p.stages.append((t, new, worker))
        job.failed = any(q.stage == FAILED for q in job.parts.values())
        job.version += 1
        if all(q.stage in TERMINAL for q in job.parts.values()):
            self.active.discard(job.job)
        else:
            self.active.add(job.job)
        self.max_holding = max(self.max_holding, self.holding())
        return StageChange(job, p, old, new, retried)

    def _timings(self, ev: Event) -> PartitionRecord:
        job = self._job(ev, "timings")
        idx = int(ev["partition"])
        p = job.parts.get(idx)
        if p is None:
            raise ValueError(f"timings for unknown partition {job.job}/{idx}")
        p.ms.update({k: float(v) for k, v in (ev.get("ms") or {}).items() if v is not None})
        if ev.get("bytes_held") is not None:
            p.bytes_held = int(ev["bytes_held"])
            if job.partition_bytes is None:  # a session before schema 4: the job's partitions
                job.partition_bytes = p.bytes_held  # are one circuit, so they weigh the same
        _derive_synthesized(p)
        job.version += 1
        return p

    def _proof_done(self, ev: Event) -> JobRecord:
        job = self._job(ev, "proof")
        t = float(ev["t"])
        job.done_t = t
        job.version += 1
        job.verified = bool(ev["verified"])
        job.total_ms = float(ev["total_ms"]) if ev.get("total_ms") is not None else None
        job.proof_bytes = len(str(ev.get("proof") or "")) // 2
        self.proofs_done += 1
        self.proofs_verified += int(job.verified)
        self.done_times.append(t)
        if not job.verified and not job.failed and not job.cancelled:
            self.proofs_bad += 1
        return job


def _derive_synthesized(p: PartitionRecord) -> None:
    """In a session before the `synthesized` stage existed: when the partition's synthesis
    ended by the worker's own timers (its start plus witness and eval), if that is before the
    stage it entered next. The reply arrives a little after the worker stops its timers, so the
    derived entry is at most that little early."""
    start = p.entered.get("synthesizing")
    if "synthesized" in p.entered or start is None or "witness" not in p.ms:
        return
    later = [t for s, t in p.entered.items() if s not in ("queued", "synthesizing") and t >= start]
    end = start + (p.ms["witness"] + p.ms.get("eval", 0.0)) / 1000.0
    if later and end < min(later):
        p.entered["synthesized"] = end


class Applies(Protocol):
    """A fold's state: it takes one event at a time."""

    def apply(self, ev: Event) -> Any: ...


S = TypeVar("S", bound=Applies)


def apply_all(state: S, events: Iterable[Event]) -> S:
    """Every event of a stream applied to ``state`` in order, skipping an event that does not
    fit (a missing field, a wrong type: what a damaged or foreign recording holds)."""
    for ev in events:
        try:
            state.apply(ev)
        except (KeyError, TypeError, ValueError):
            continue
    return state


def fold(events: Iterable[Event], into: Fold | None = None) -> Fold:
    """Fold a whole stream, skipping events that do not fit (see :meth:`Fold.apply`)."""
    return apply_all(into if into is not None else Fold(), events)
