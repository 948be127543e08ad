"""What travels between the farm's client and its hosts: a job spec out, a job result back.

A spec is a few dozen bytes (preset, partitions, seed, and the client's session and job id so
the host can tag its events); the host synthesizes every partition itself, so no buffer ever
crosses the network. A result carries the partition proofs (192 bytes each) and the host's
timings of the job. Both are plain dataclasses with a JSON byte form, so a spec can be logged,
replayed or sent by any transport.

Placement is Dask's, by resources: a host offers ``slots`` (the jobs it takes at once:
partition_workers + gpu_channel_capacity unless ``host_slots`` says otherwise) and
``<backend>_slots`` as many again, so a job can ask for any host (``slots: 1``) or for a host
of one backend (``cuda_slots: 1`` as well). Dask never sends a host more jobs than its slots,
which is the farm's backpressure.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Any

PROOF_BYTES = 192  # one partition's Groth16 proof, compressed
SLOTS = "slots"


@dataclass(frozen=True)
class JobSpec:
    """One sector proof to make somewhere on the farm."""

    session: str  # the client's session id: a host tags this job's events with it
    job: int  # the client's job id (the merged stream's)
    preset: str
    partitions: int
    seed: int
    needs: str = "any"  # any host, else a backend ("cuda", "cpu")
    # a C1 output's job: the file's bytes (zlib, base64) travel once with the job, not per
    # partition; the host writes them to its own disk (engine.cluster.hostengine)
    c1: str = ""
    prover_id: str = ""
    sector_id: int = 0

    def to_bytes(self) -> bytes:
        return json.dumps(dataclasses.asdict(self), sort_keys=True).encode()

    @classmethod
    def from_bytes(cls, raw: bytes) -> JobSpec:
        obj = json.loads(raw)
        if not isinstance(obj, dict):
            raise ValueError("a job spec must be a JSON object")
        try:
            spec = cls(**obj)
        except TypeError as exc:
            raise ValueError(f"malformed job spec: {exc}") from None
        if not isinstance(spec.partitions, int) or spec.partitions < 1:
            raise ValueError("a job spec needs at least one partition")
        return spec

    @property
    def key(self) -> str:
        """The Dask task key: one per client job, so Dask runs it to one result."""
        return f"sealtop-job-{self.session}-{self.job}"

    def resources(self) -> dict[str, float]:
        res = {SLOTS: 1.0}
        if self.needs not in ("", "any"):
            res[f"{self.needs}_slots"] = 1.0
        return res


@dataclass(frozen=True)
class JobResult:
    """What a host sends back for a job: the proofs and when things happened on that host."""

    session: str
    job: int
    host: str
    local_job: int  # the host engine's own job id
    outcome: str  # verified, failed (a partition failed or a proof failed verification)
    proof_hex: str  # the partition proofs, PROOF_BYTES each, concatenated
    total_ms: float  # the host's submission -> proof_done
    received_wall: float  # time.time() when the host's task began (the spec arrived)
    first_synthesis_wall: float | None  # time.time() of its first partition's synthesis
    done_wall: float  # time.time() when the host's task returned

    @property
    def verified(self) -> bool:
        return self.outcome == "verified"

    def proofs(self) -> list[bytes]:
        raw = bytes.fromhex(self.proof_hex)
        return [raw[i:i + PROOF_BYTES] for i in range(0, len(raw), PROOF_BYTES)]

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def host_resources(backend: str, slots: int) -> dict[str, float]:
    """The Dask resources a host offers: its slots, and as many of its backend's."""
    return {SLOTS: float(slots), f"{backend}_slots": float(slots)}


def host_slots(partition_workers: int, gpu_channel_capacity: int, configured: int = 0) -> int:
    """Jobs a host takes at once: ``configured`` when set, else partition_workers + capacity
    (the partitions it can hold before the GPU without waiting on admission)."""
    return configured if configured > 0 else partition_workers + gpu_channel_capacity
