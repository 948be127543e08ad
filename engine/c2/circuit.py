"""Filecoin's C2 circuit of one registered seal proof: built once and cached, filled per
partition from a C1 output, and checked against public values the verifier derives.

A partition's witness is the values its circuit's Sources name in that partition's vanilla
proofs (engine/c2/assign.py), then the templates' witness programs. Its public inputs come from
(prover_id, sector_id, ticket, seed, comm_d, comm_r) alone (engine/c2/public.py); the prover's
own copy of them (the input Sources read from its vanilla proofs) is compared with those before
any proving, so a C1 output for another sector, ticket or seed stops in one line instead of
producing a proof that cannot verify.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np

from engine.c2.assign import Partition, SourcePlan, assign, assign_mont, compile_plan
from engine.c2.cs import PRIVATE, Source
from engine.c2.public import Statement, public_inputs
from engine.c2.stacked import synthesize
from engine.circuit.builder import CircuitShape
from engine.circuit.cache import cached_build
from engine.circuit.witness import fill_inputs, witness_numba
from engine.seal.circuit_count import StackedShape
from engine.seal.registry import SealProof
from engine.seal.vanilla import C1Output

FAMILY = "filecoin-c2"


class StatementMismatch(ValueError):
    """The C1 output is not for the statement the verifier derives (another sector id, prover,
    ticket, seed or commitment): no proof of it could verify."""


@dataclass(frozen=True)
class C2Circuit:
    """The compiled partition circuit of a sector shape and the Sources that fill it."""

    sector: StackedShape
    shape: CircuitShape

    @property
    def sources(self) -> list[Source]:
        return self.shape.meta["sources"]

    @property
    def input_sources(self) -> list[Source]:
        return self.shape.meta["input_sources"]

    @cached_property
    def plans(self) -> tuple[SourcePlan, SourcePlan]:
        """The aux and input Sources compiled once against the sector shape (engine/c2/assign.py)."""
        return compile_plan(self.sources, self.sector), compile_plan(self.input_sources, self.sector)

    def witness(self, c1: C1Output, k: int, statement: Statement,
                out: np.ndarray | None = None) -> np.ndarray:
        """Partition ``k``'s full witness z (Fr storage), written into ``out`` when given.
        StatementMismatch when the C1 output's own public values differ from ``statement``'s."""
        return self.witness_of(Partition.of_c1(c1, k), statement, out)

    def witness_of(self, part: Partition, statement: Statement,
                   out: np.ndarray | None = None, sliced: bool = True,
                   known: np.ndarray | None = None) -> np.ndarray:
        """As witness, from one partition of a C1 output already read (what a synthesis worker
        is handed, rather than the whole C1 output). ``sliced`` and ``known`` as for
        engine.circuit.witness.witness_numba (``sliced=False``: every instance through the
        interpreter, for comparison)."""
        k = part.k
        expected = public_inputs(statement, k)
        aux_plan, input_plan = self.plans
        claimed = assign(input_plan, part)
        if claimed != expected:
            first = next(i for i, (a, b) in enumerate(zip(claimed, expected)) if a != b)
            raise StatementMismatch(
                f"partition {k}: the C1 output's public input {first} ({self.input_sources[first]}) "
                f"is not the one derived from the statement: wrong prover id, sector id, ticket, "
                f"seed, comm_d or comm_r, or the C1 output of another sector")
        values = assign_mont(aux_plan, part)
        z = fill_inputs(self.shape, expected, {PRIVATE: values}, out)
        return witness_numba(self.shape, z, sliced=sliced, known=known)


_SHAPE_MODULES = ("boolean.py", "cs.py", "neptune_params.py", "num.py", "poseidon.py", "por.py", "sha256.py",
                  "stacked.py")


def _gadget_digest() -> str:
    """Digest of the modules that decide the circuit's rows, so that editing a gadget never
    serves a stale cache entry (the builder's own digest covers engine/circuit only)."""
    import hashlib

    h = hashlib.sha256()
    for name in _SHAPE_MODULES:
        h.update(name.encode() + b"\0" + (Path(__file__).parent / name).read_bytes())
    # the shape's counts and tree levels come from the seal room's circuit model
    count = Path(__file__).parents[1] / "seal" / "circuit_count.py"
    h.update(b"circuit_count.py\0" + count.read_bytes())
    return h.hexdigest()


def build_c2(proof: SealProof | StackedShape, cache_dir: Path | str | None = None,
             progress: Callable[[str], None] | None = None, matrices: bool = True) -> C2Circuit:
    """The C2 circuit of ``proof``'s partition shape, from ``cache_dir`` when built before.
    Without ``matrices``: the witness program alone, built every time and never cached (see
    CircuitBuilder.compile)."""
    shape = StackedShape.of(proof)

    def build() -> CircuitShape:
        b = synthesize(shape, matrices=matrices)
        b.shape.meta.update(sources=b.sources, input_sources=b.input_sources)
        return b.shape

    if not matrices:
        return C2Circuit(shape, build())

    params = {"nodes": shape.nodes, "layers": shape.layers, "challenges": shape.challenges,
              "tree_arities": list(shape.tree_arities), "degrees": [shape.base_degree, shape.exp_degree],
              "gadgets": _gadget_digest()}
    built = cached_build(FAMILY, params, build, cache_dir, progress)
    if cache_dir is not None and not built.from_cache:
        _keep_compact(built, progress)
    return C2Circuit(shape, built)


def _keep_compact(built: CircuitShape, progress: Callable[[str], None] | None) -> None:
    """Leave the compact form's coefficient indices in a new cache entry beside the matrices.
    A GPU prover (abc_eval = "gpu") needs them before its first partition, and making them is
    one serial pass over every coefficient (722 M at 32 GiB): done here, with the circuit, it is
    off the first job of every install that builds the circuit once."""
    from engine.groth16.compact import CompactError, compact_r1cs

    t = time.perf_counter()
    try:
        compact_r1cs(built.r1cs)
    except CompactError:  # a circuit the compact form cannot hold: the prover says so itself
        return
    if progress is not None:
        progress(f"the compact form's coefficient indices kept ({time.perf_counter() - t:.1f} s)")
