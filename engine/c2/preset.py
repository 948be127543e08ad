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
from pathlib import Path
from typing import Any

import numpy as np

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


def synthetic_prover_id(seed: int) -> bytes:
    """A job seed's prover id (a field element's bytes, as Filecoin's are)."""
    return hashlib.sha256(b"sealtop-synthetic-prover:%d" % seed).digest()[:31] + b"\0"


def partition_circuit(preset: str, cache_dir: str | None) -> Any:
    """The PartitionCircuit of a C2 preset (engine/pipeline/circuits.py)."""
    from engine.c2.circuit import build_c2
    from engine.c2.public import Statement, public_inputs
    from engine.c2.synthetic import synthetic_c1
    from engine.pipeline.circuits import PartitionCircuit
    from engine.seal.registry import seal_proof
    from engine.synthesis import general_capacity

    proof = seal_proof(PRESETS[preset])
    c = build_c2(proof, Path(cache_dir) if cache_dir else None)

    @functools.lru_cache(maxsize=2)
    def sector(seed: int, partitions: int) -> tuple[Any, Statement]:
        prover = synthetic_prover_id(seed)
        c1 = synthetic_c1(proof, seed, prover_id=prover, sector_id=SECTOR_ID,
                          partitions=min(max(partitions, 1), proof.partitions))
        return c1, Statement(proof, prover, SECTOR_ID, c1.ticket, c1.seed, c1.comm_d, c1.comm_r)

    def _check(partition: int, partitions: int) -> int:
        if not 0 <= partition < proof.partitions:
            raise ValueError(f"{preset}: partition {partition} is outside {proof.name}'s "
                             f"0..{proof.partitions - 1}")
        return max(partitions, partition + 1)

    def witness(seed: int, partition: int, partitions: int, out: np.ndarray | None = None) -> np.ndarray:
        c1, statement = sector(seed, _check(partition, partitions))
        return c.witness(c1, partition, statement, out)

    def public(seed: int, partition: int, partitions: int) -> list[int]:
        _, statement = sector(seed, _check(partition, partitions))
        return public_inputs(statement, partition)

    return PartitionCircuit(preset, c.shape.r1cs, witness, public,
                            general_capacity=general_capacity(c.shape))
