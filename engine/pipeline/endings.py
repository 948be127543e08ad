"""How partitions and jobs end: a retry, a failure, a cancellation, and a job's closing.

Every part of the orchestrator ends partitions (admission when a job's input cannot be made,
the results thread when a worker dies or fails a task, a GPU slot or finalize when the prover's
answer is a setback, a stop that does not drain), and each ending frees the same things and
may close the job; so the endings are plain functions over the shared state
(engine.pipeline.core), one place for each rule:

* a retry frees the partition's buffers and permit and queues it again at the front, up to
  MAX_ATTEMPTS attempts;
* a failure frees them and records the reason; the job still ends, with its proof_done saying
  it did not verify;
* a cancellation (a stop without drain) ends every unfinished partition in ``cancelled``,
  never ``failed``, and a job with a cancelled partition gets no proof_done.
"""

from __future__ import annotations

from engine.pipeline.core import Core
from engine.pipeline.records import ENDED, Part, Setback
from engine.stream import schema as events

MAX_ATTEMPTS = 3  # a partition whose worker dies this many times fails


def settle(core: Core, p: Part, setback: Setback) -> None:
    """End a partition's attempt that a setback stopped: a retry where it allows one."""
    if setback.retry:
        retry(core, p, setback.reason)
    else:
        fail(core, p, setback.reason)


def retry(core: Core, p: Part, reason: str) -> None:
    """Free a partition's buffers and permit, and queue it again at the front; after
    MAX_ATTEMPTS attempts the partition fails instead."""
    if p.attempt + 1 >= MAX_ATTEMPTS:
        fail(core, p, f"gave up after {MAX_ATTEMPTS} attempts: {reason}")
        return
    core.release_buffers(p)
    core.release_permit(p)
    core.counters.add("retries")
    with core.lock:
        p.next_attempt()
        t = core.stage(p, "queued", "scheduler", reason=f"retry: {reason}")
        p.timers.mark("queued", t)
        core.records.pending.appendleft(p)
        core.changed.notify_all()


def fail(core: Core, p: Part, reason: str) -> None:
    if p.cancelled:
        return  # cancel_all reports it
    core.release_buffers(p)
    core.release_permit(p)
    with core.lock:
        if p.stage in ENDED or p.cancelled:
            return
        core.stage(p, events.FAILED, p.worker or "scheduler", reason=reason)
        core.counters.add("partitions_failed")
        core.records.jobs[p.job].failed[p.index] = reason
    finish_job(core, p.job)


def finish_job(core: Core, jid: int) -> None:
    """Close a job once every partition has ended: proof_done (verified or not) when none
    was cancelled; a job with a cancelled partition will not be proven and gets none."""
    with core.lock:
        js = core.records.jobs[jid]
        if js.finished or js.ended() < js.job.partitions:
            return
        js.finished = True
        core.records.live_jobs.discard(jid)
        core.changed.notify_all()
        if js.cancelled:
            core.counters.add("jobs_cancelled")
            js.announced = True
            return
        proof_hex = b"".join(js.proofs.get(i, b"") for i in range(js.job.partitions)).hex()
        ok = not js.failed and all(js.verified.values())
    core.counters.add("proofs_done")
    core.counters.add("proofs_verified" if ok else "proofs_failed")
    t_sub = js.t_submit
    core.emit(
        lambda t: events.proof_done(t, jid, proof_hex, ok, (t - t_sub) * 1000.0)
    )
    with core.changed:
        js.announced = True  # idle() only once proof_done is in the stream
        core.changed.notify_all()


def cancel_all(core: Core, reason: str) -> None:
    """Every partition not yet ended (queued ones included) will not be proven: stage
    ``cancelled`` with the reason, never counted as failed."""
    with core.lock:
        live = core.records.unended()
        for p in live:
            p.cancelled = True
        core.records.pending.clear()
        core.changed.notify_all()
    if not live:
        return
    core.channel.drain()
    for p in live:
        p.wake()
    for p in live:
        core.release_buffers(p)
        core.release_permit(p)
        with core.lock:
            core.stage(p, events.CANCELLED, p.worker or "scheduler", reason=reason)
            core.counters.add("partitions_cancelled")
            core.records.jobs[p.job].cancelled[p.index] = reason
        finish_job(core, p.job)
