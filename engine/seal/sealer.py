"""Sealing a sector on the CPU: precommit phase 1 (labels), precommit phase 2 (tree_c,
tree_r_last, comm_r) and commit phase 1 (each partition's challenges and their vanilla proofs),
ending in the C1 output filecoin-ffi's ``seal_commit_phase1`` returns.

As filecoin-proofs' ``seal_commit_phase1`` does, the vanilla proofs are verified before they are
returned (engine/seal/vanilla_verify.py, from public values alone), so a sealer bug is an error
here, not a C1 file that phase 2 or the chain rejects. Progress goes through ``step`` (one call
per step of STEPS) and ``note``; each phase's wall time is in the result.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from engine.seal.c1json import proof_shape
from engine.seal.registry import SealProof
from engine.seal.vanilla import C1Output, SealedSector, VanillaProof, prove_challenge

STEPS = (
    "precommit 1: the SDR graph's parents",
    "precommit 1: data (Fr32) and tree_d",
    "precommit 1: labels",
    "precommit 2: tree_c",
    "precommit 2: encoding and tree_r_last",
    "commit 1: challenges and vanilla proofs",
    "commit 1: verifying the vanilla proofs",
    "writing the C1 JSON",
)
"""The steps a seal reports (the CLI adds the last, the write)."""


class SealError(RuntimeError):
    """The sealer made a vanilla proof that does not verify (a bug, never bad input)."""


@dataclass
class SealResult:
    c1: C1Output
    comm_d: bytes
    comm_c: bytes
    comm_r_last: bytes
    comm_r: bytes
    replica_id: bytes
    timings: dict[str, float] = field(default_factory=dict)
    """Wall seconds per phase: precommit1, precommit2, commit1 (proofs), commit1_check."""


def _quiet(_: str) -> None:
    return None


def _every(unit: str, note: Callable[[str], None],
           period_s: float = 5.0) -> Callable[..., None]:
    """A (done, total[, prefix]) progress callback that notes at most once per ``period_s``
    (and at the end), so a piped log gets a line every few seconds, not one per chunk."""
    last = [time.monotonic()]

    def report(done: int, total: int, prefix: str = "") -> None:
        now = time.monotonic()
        if done >= total or now - last[0] >= period_s:
            last[0] = now
            note(f"{prefix}{done}/{total} {unit} ({100 * done // max(total, 1)}%)")

    return report


def seal_sector(proof: SealProof, data: bytes | None, prover_id: bytes, sector_id: int,
                ticket: bytes, seed: bytes, step: Callable[[str], None] = _quiet,
                note: Callable[[str], None] = _quiet) -> SealResult:
    """Seal ``data`` (unpadded bytes, zero-filled to the sector's capacity; None for an all-zero
    sector) as ``proof`` and prove commit phase 1 for ``seed``."""
    from engine.seal import labels, trees
    from engine.seal.commitments import comm_r as hash_comm_r
    from engine.seal.fr32 import fr32_pad_array, unpadded_size
    from engine.seal.graph import sdr_parents
    from engine.seal.hashing import mont_to_nodes
    from engine.seal.vanilla_verify import verify_c1

    for name, value in (("prover_id", prover_id), ("ticket", ticket), ("seed", seed)):
        if len(value) != 32:
            raise ValueError(f"{name} must be 32 bytes, not {len(value)}")
    capacity = unpadded_size(proof.sector_size)
    raw = np.zeros(capacity, np.uint8)
    if data:
        if len(data) > capacity:
            raise ValueError(f"{len(data)} bytes of data do not fit a {proof.sector_size}-byte sector "
                             f"({capacity} unpadded bytes)")
        raw[:len(data)] = np.frombuffer(data, np.uint8)
    timings: dict[str, float] = {}

    t0 = time.perf_counter()
    step(STEPS[0])
    parents = sdr_parents(proof)
    step(STEPS[1])
    nodes = fr32_pad_array(raw)
    del raw
    tree_d = trees.tree_d(nodes, _every("hashes", note))
    comm_d = tree_d.root
    replica_id = labels.replica_id(prover_id, sector_id, ticket, comm_d, proof.porep_id)
    step(STEPS[2])
    layer_note = _every("nodes", note)
    layers = labels.label_layers(proof, replica_id, parents,
                                 lambda layer, done, total: layer_note(done, total, f"layer {layer}: "))
    timings["precommit1"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    step(STEPS[3])
    columns_mont = labels.column_hashes_mont(layers)
    columns = mont_to_nodes(columns_mont)
    tree_c = trees.poseidon_tree(columns, proof.tree_arities, _every("hashes", note), columns_mont)
    del columns_mont
    step(STEPS[4])
    replica = labels.encode(layers[-1], nodes)
    tree_r = trees.poseidon_tree(replica, proof.tree_arities, _every("hashes", note))
    comm_r = hash_comm_r(tree_c.root, tree_r.root)
    timings["precommit2"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    step(STEPS[5])
    from engine.seal.challenges import interactive_challenges

    sector = SealedSector(labels=layers, data=nodes, replica=replica, column_hashes=columns,
                          comm_d=comm_d, comm_c=tree_c.root, comm_r_last=tree_r.root,
                          tree_d_path=tree_d.path, tree_c_path=tree_c.path, tree_r_path=tree_r.path)
    partitions: list[tuple[VanillaProof, ...]] = []
    for k in range(proof.partitions):
        challenges = interactive_challenges(proof, replica_id, seed, k)
        note(f"partition {k + 1} of {proof.partitions}: {len(challenges)} challenges")
        partitions.append(tuple(
            prove_challenge(sector, proof.tree_arities, int(c),
                            [int(p) for p in parents[c, :proof.base_degree]],
                            [int(p) for p in parents[c, proof.base_degree:]])
            for c in challenges))
    c1 = C1Output(registered_proof=proof.name, shape=proof_shape(proof.name),
                  vanilla_proofs=tuple(partitions), comm_r=comm_r, comm_d=comm_d,
                  replica_id=replica_id, seed=seed, ticket=ticket)
    timings["commit1"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    step(STEPS[6])
    verdict = verify_c1(c1, prover_id, sector_id)
    if not verdict.ok:
        raise SealError(f"the sealed sector's vanilla proofs do not verify: {verdict.first_reason()}")
    timings["commit1_check"] = time.perf_counter() - t0
    return SealResult(c1=c1, comm_d=comm_d, comm_c=tree_c.root, comm_r_last=tree_r.root,
                      comm_r=comm_r, replica_id=replica_id, timings=timings)
