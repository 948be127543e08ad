"""Filecoin's C2 circuit as engine presets: the circuit of a registered seal proof, its partitions
filled from a synthetic committed-capacity sector per job seed (engine/c2/synthetic.py), so the
pipeline and its benchmarks prove Filecoin's own statement at any size, 32 GiB included.

``porep-32g`` is the 32 GiB V1_1 circuit (10 partitions of 130,278,869 constraints), the GPU
benchmark's preset. The verifier's side of every proof is the sector's public values (prover id,
sector id, ticket, seed, comm_d, comm_r), never the witness.
"""

from __future__ import annotations

import functools
import hashlib
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from engine.c2.assign import Partition
    from engine.c2.public import Statement

PRESETS: dict[str, str] = {
    "c2-2KiB": "StackedDrg2KiBV1_1",
    "c2-8MiB": "StackedDrg8MiBV1_1",
    "c2-512MiB": "StackedDrg512MiBV1_1",
    "c2-32GiB": "StackedDrg32GiBV1_1",
    "c2-64GiB": "StackedDrg64GiBV1_1",
    "porep-32g": "StackedDrg32GiBV1_1",
}
"""Preset name → registered seal proof."""

SECTOR_ID = 1


@dataclass(frozen=True)
class PartitionInput:
    """One partition's share of a job's C1 output (its vanilla proofs and the sector's
    commitments) and the statement it is proved against: what a synthesis worker is sent."""

    part: Partition
    statement: Statement


def synthetic_prover_id(seed: int) -> bytes:
    """A job seed's prover id (a field element's bytes, as Filecoin's are)."""
    return hashlib.sha256(b"sealtop-synthetic-prover:%d" % seed).digest()[:31] + b"\0"


def partition_circuit(preset: str, cache_dir: str | None) -> Any:
    """The PartitionCircuit of a C2 preset (engine/pipeline/circuits.py)."""
    from engine.c2.assign import Partition
    from engine.c2.circuit import build_c2
    from engine.c2.public import Statement, public_inputs
    from engine.c2.synthetic import synthetic_sector
    from engine.pipeline.partition import PartitionCircuit
    from engine.seal.registry import seal_proof
    from engine.synthesis import general_capacity

    proof = seal_proof(PRESETS[preset])
    c = build_c2(proof, Path(cache_dir) if cache_dir else None)

    # the dispatcher and its look-ahead thread may ask for the same sector at once: one lock a
    # sector, so a second caller waits for the first rather than making it again, and a sector
    # being made holds up no caller of another (a made one is an lru hit)
    guard, making = threading.Lock(), dict[tuple[int, int], threading.Lock]()

    @functools.lru_cache(maxsize=3)  # the job being dispatched, the next one, one more
    def _sector(seed: int, partitions: int) -> tuple[Any, Statement]:
        prover = synthetic_prover_id(seed)
        sec = synthetic_sector(proof, seed, prover_id=prover, sector_id=SECTOR_ID,
                               partitions=min(max(partitions, 1), proof.partitions))
        return sec, Statement(proof, prover, SECTOR_ID, sec.ticket, sec.seed, sec.comm_d, sec.comm_r)

    def sector(seed: int, partitions: int) -> tuple[Any, Statement]:
        with guard:
            lock = making.setdefault((seed, partitions), threading.Lock())
        with lock:
            return _sector(seed, partitions)

    @functools.lru_cache(maxsize=256)  # small: a job's verification never makes its sector again
    def statement(seed: int, partitions: int) -> Statement:
        return sector(seed, partitions)[1]

    def _check(partition: int, partitions: int) -> int:
        if not 0 <= partition < proof.partitions:
            raise ValueError(f"{preset}: partition {partition} is outside {proof.name}'s "
                             f"0..{proof.partitions - 1}")
        return max(partitions, partition + 1)

    def of_source(source: Any) -> tuple[Any, Statement]:
        from engine.c2.c1file import C1JobError, load_c1

        c1 = load_c1(source.c1)
        real = seal_proof(c1.registered_proof)
        if (real.nodes, real.layers, real.challenges, real.tree_arities) != \
                (proof.nodes, proof.layers, proof.challenges, proof.tree_arities):
            raise C1JobError(f"{source.c1} is a {real.name} C1 output, not one {preset} proves")
        return c1, Statement(real, bytes.fromhex(source.prover_id), source.sector_id, c1.ticket,
                             c1.seed, c1.comm_d, c1.comm_r)

    def make_inputs(seed: int, partition: int, partitions: int, source: Any = None) -> PartitionInput:
        if source is not None:
            c1, st = of_source(source)
            return PartitionInput(Partition.of_c1(c1, partition), st)
        sec, st = sector(seed, _check(partition, partitions))  # its other partitions are made when asked for
        return PartitionInput(Partition(proof, partition, sec.replica_id, sec.comm_d, sec.comm_r, sec.comm_r_last,
                                        sec.comm_c, sec.vanilla(partition)), st)

    def witness(seed: int, partition: int, partitions: int, out: np.ndarray | None = None,
                source: Any = None, inputs: Any = None, known: np.ndarray | None = None) -> np.ndarray:
        got = inputs if inputs is not None else make_inputs(seed, partition, partitions, source)
        return c.witness_of(got.part, got.statement, out, known=known)

    def public(seed: int, partition: int, partitions: int, source: Any = None) -> list[int]:
        if source is not None:
            st = of_source(source)[1]
        else:
            st = statement(seed, _check(partition, partitions))
        return public_inputs(st, partition)

    return PartitionCircuit(preset, c.shape.r1cs, witness, public,
                            general_capacity=general_capacity(c.shape), inputs=make_inputs,
                            max_partitions=proof.partitions)
