"""A partition circuit: what every process of the pipeline needs of a preset's circuit, the
R1CS, the prover's witness and the verifier's public inputs (engine/pipeline/circuits.py
resolves preset names to these; engine/c2/preset.py makes Filecoin's)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from engine.groth16.r1cs import R1CS


class Witness(Protocol):
    """witness(seed, partition, partitions, out=None, source=None, inputs=None, known=None) -> z,
    written into ``out`` when given; ``source`` (engine.pipeline.messages.JobSource) is a job's
    C1 output, which only the C2 presets read; ``inputs`` is what the circuit's ``inputs`` made
    of the job for this partition (None: the witness reads or makes the job's input itself);
    ``known`` (uint8[num_vars], kept with ``out``) is where a circuit may leave bits apart from
    z for the compact form (engine.circuit.witness.witness_numba), or ignore."""

    def __call__(self, seed: int, partition: int, partitions: int, out: np.ndarray | None = None,
                 source: Any = None, inputs: Any = None, known: np.ndarray | None = None) -> np.ndarray: ...


class Inputs(Protocol):
    """inputs(seed, partition, partitions, source=None) -> one partition's share of its job's
    input (a C1 output's vanilla proofs for that partition, with the statement), small and
    picklable. The engine makes it where it dispatches the partition, so that a job's whole
    input (a 32 GiB sector's C1 output: 2.5 s to read or to make) is read or made once per job,
    not once per synthesis worker."""

    def __call__(self, seed: int, partition: int, partitions: int, source: Any = None) -> Any: ...


class Public(Protocol):
    """public_inputs(seed, partition, partitions, source=None) -> the verifier's inputs."""

    def __call__(self, seed: int, partition: int, partitions: int,
                 source: Any = None) -> list[int]: ...


@dataclass(frozen=True)
class PartitionCircuit:
    """A preset's partition circuit. ``witness(seed, partition, partitions, out)`` returns z
    (Fr storage), written into ``out`` when given (a shared-memory view);
    ``public_inputs(seed, partition, partitions)`` is what a verifier checks the partition's
    proof against, derived from the job without any witness."""

    name: str
    r1cs: R1CS
    witness: Witness
    public_inputs: Public
    # the most witness values that can be neither 0 nor 1 (engine.synthesis.general_capacity);
    # None: any of them
    general_capacity: int | None = None
    # the partition's share of the job's input, made by the dispatcher (None: the witness makes it)
    inputs: Inputs | None = None
    # the most partitions a job of it has (a Filecoin sector's count); None: any number
    max_partitions: int | None = None

    def check_partitions(self, n: int) -> None:
        """ValueError (one line) unless a job of ``n`` partitions can be proved on this circuit."""
        if n < 1:
            raise ValueError("a job needs at least one partition")
        if self.max_partitions is not None and n > self.max_partitions:
            raise ValueError(f"{self.name} proves at most {self.max_partitions} partition"
                             f"{'s' if self.max_partitions > 1 else ''} a job, not {n}")

    @property
    def constraints(self) -> int:
        return self.r1cs.num_constraints

    def partition_bytes(self, abc_eval: str = "cpu") -> int:
        """Bytes one partition holds: with abc_eval "cpu", its shared memory (a, b, c, one Fr
        per constraint, and z); with "gpu", the compact witness's segment plus the z its
        synthesis worker computes it from (held while it synthesizes, counted for the whole
        partition so the budget stays an upper bound)."""
        if abc_eval == "gpu":
            from engine.synthesis import compact_layout

            return compact_layout(self).nbytes + 32 * self.r1cs.num_vars
        return (3 * self.r1cs.num_constraints + self.r1cs.num_vars) * 32


