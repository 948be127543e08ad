"""Vanilla verification of a C1 output from public values alone.

What the chain knows of a sector (its registered proof, prover id, sector number, ticket, seed,
comm_d and comm_r) is all this takes: replica_id, each partition's challenges and every parent
are derived here, never read from the file, and the file's copy of each is checked against the
derived one. Per challenge it checks, as storage-proofs-porep's ``Proof::verify`` does and more
strictly (every index, count, path length and repeated parent label is tied to what it must
be): the data leaf's tree_d path to comm_d; the replica leaf's tree_r_last path; the column of
the challenged node and of each base and expander parent against comm_c, their hashes being the
leaves; each layer's label recomputed from its parents' column entries; and the encoding of the
data leaf under the last layer's label into the replica leaf. comm_r must be Poseidon(comm_c,
comm_r_last). A failure names its partition, challenge and what failed, in one line.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

from engine.circuit.native import poseidon_many
from engine.seal.registry import SealProof, seal_proof
from engine.seal.vanilla import (
    SINGLE,
    SUB,
    TOP,
    C1Output,
    ColumnProof,
    MerkleProof,
    VanillaProof,
    layer_parent_labels,
)
from kernels.cpu.fr import MODULUS

FIELD_MASK = (1 << 254) - 1


class Rejected(Exception):
    """A check that failed: ``str`` is the one-line reason."""


@dataclass(frozen=True)
class PartitionResult:
    partition: int
    challenges: int
    reason: str | None = None

    @property
    def ok(self) -> bool:
        return self.reason is None

    def line(self) -> str:
        if self.ok:
            return f"partition {self.partition}: ok ({self.challenges} challenges)"
        return f"partition {self.partition}: REJECTED: {self.reason}"


@dataclass(frozen=True)
class C1Verdict:
    """The outcome: one result per partition, and a reason that rejects the whole output
    before any partition (its replica_id, its partition count)."""

    partitions: tuple[PartitionResult, ...]
    reason: str | None = None

    @property
    def ok(self) -> bool:
        return self.reason is None and all(p.ok for p in self.partitions)

    def first_reason(self) -> str | None:
        if self.reason is not None:
            return self.reason
        return next((f"partition {p.partition}: {p.reason}" for p in self.partitions if not p.ok), None)


# ---------------------------------------------------------------- hashes (Filecoin's rules)
def truncated_sha256(data: bytes) -> bytes:
    """SHA-256 with the top two bits of its last byte cleared (a field element, LE)."""
    d = bytearray(hashlib.sha256(data).digest())
    d[31] &= 0x3F
    return bytes(d)


def derive_replica_id(prover_id: bytes, sector_id: int, ticket: bytes, comm_d: bytes,
                      porep_id: bytes) -> bytes:
    """replica_id = truncated SHA-256(prover_id || sector_id (u64 BE) || ticket || comm_d ||
    porep_id), as storage-proofs-porep's generate_replica_id."""
    return truncated_sha256(prover_id + sector_id.to_bytes(8, "big") + ticket + comm_d + porep_id)


def label_hash(replica_id: bytes, layer: int, node: int, parents: Sequence[bytes]) -> bytes:
    """A label: truncated SHA-256(replica_id || layer (u32 BE) || node (u64 BE) || 20 zero bytes
    || the 37 parent labels)."""
    head = replica_id + layer.to_bytes(4, "big") + node.to_bytes(8, "big") + bytes(20)
    return truncated_sha256(head + b"".join(parents))


def fr(value: bytes, what: str) -> int:
    """A domain value as a field element; Rejected when it is not one (>= r)."""
    x = int.from_bytes(value, "little")
    if x >= MODULUS:
        raise Rejected(f"{what} is not a field element")
    return x


def poseidon(values: Sequence[bytes], what: str) -> bytes:
    """Neptune's Poseidon (Filecoin's constants) of the values, as a 32-byte domain value."""
    out = poseidon_many([[fr(v, what) for v in values]])[0]
    return out.to_bytes(32, "little")


def encode(key: bytes, data: bytes, what: str) -> bytes:
    """The replica node: key + data in the field."""
    return ((fr(key, f"{what} key") + fr(data, f"{what} data")) % MODULUS).to_bytes(32, "little")


# ---------------------------------------------------------------- paths
def tree_shape(proof: SealProof) -> tuple[str, list[int]]:
    """The proof shape and the arity of each level, leaf first, of tree_c and tree_r_last."""
    base, sub, top = proof.tree_arities
    nodes = proof.nodes
    if top:
        nodes //= top
    if sub:
        nodes //= sub
    base_levels, n = 0, 1
    while n < nodes:
        n *= base
        base_levels += 1
    if n != nodes:
        raise ValueError(f"{proof.name}: {nodes} base leaves is not a power of {base}")
    arities = [base] * base_levels + ([sub] if sub else []) + ([top] if top else [])
    return (TOP if top else SUB if sub else SINGLE), arities


def check_path(p: MerkleProof, shape: str, arities: Sequence[int], node: int, root: bytes,
               leaf: bytes, sha: bool, what: str) -> None:
    """The path proves ``leaf`` at ``node`` under ``root``: right shape, one level per arity,
    arity - 1 siblings a level, indices that spell ``node``, hashes that reach the root."""
    if p.shape != shape:
        raise Rejected(f"{what}: a {p.shape} proof where the tree needs {shape}")
    expect = {SINGLE: (len(arities), 0, 0), SUB: (len(arities) - 1, 1, 0), TOP: (len(arities) - 2, 1, 1)}[shape]
    if (len(p.base), len(p.sub), len(p.top)) != expect:
        raise Rejected(f"{what}: path has {len(p.levels())} levels, the tree has {len(arities)}")
    if p.root != root:
        raise Rejected(f"{what}: root is not the commitment")
    if p.leaf != leaf:
        raise Rejected(f"{what}: leaf is not the value it must prove")
    index, weight = 0, 1
    h = p.leaf
    for depth, (el, arity) in enumerate(zip(p.levels(), arities)):
        if len(el.hashes) != arity - 1 or not 0 <= el.index < arity:
            raise Rejected(f"{what}: level {depth} has {len(el.hashes)} siblings and index "
                           f"{el.index} (arity {arity})")
        index += el.index * weight
        weight *= arity
        children = list(el.hashes)
        children.insert(el.index, h)
        h = truncated_sha256(b"".join(children)) if sha else poseidon(children, f"{what} level {depth}")
    if index != node:
        raise Rejected(f"{what}: path proves node {index}, not node {node}")
    if h != root:
        raise Rejected(f"{what}: path does not hash to the root")


# ---------------------------------------------------------------- one challenge
@dataclass(frozen=True)
class _Context:
    proof: SealProof
    replica_id: bytes
    comm_d: bytes
    comm_c: bytes
    comm_r_last: bytes
    shape: str
    arities: list[int]
    d_arities: list[int]


def _check_column(cp: ColumnProof, node: int, ctx: _Context, what: str) -> None:
    col = cp.column
    if col.index != node:
        raise Rejected(f"{what}: column of node {col.index}, not node {node}")
    if len(col.rows) != ctx.proof.layers:
        raise Rejected(f"{what}: column has {len(col.rows)} rows, the sector {ctx.proof.layers} layers")
    if cp.inclusion_proof.leaf != poseidon(col.rows, f"{what} column"):
        raise Rejected(f"{what}: the column's hash is not its tree_c leaf")
    check_path(cp.inclusion_proof, ctx.shape, ctx.arities, node, ctx.comm_c,
               cp.inclusion_proof.leaf, False, f"{what} tree_c path")


def verify_challenge(v: VanillaProof, node: int, parents: Sequence[int], ctx: _Context) -> None:
    """Every check of one challenge; Rejected with what failed."""
    proof = ctx.proof
    proved = v.comm_d_proofs.path_index((2, 0, 0))
    if proved != node:
        raise Rejected(f"proves node {proved}, not node {node}: the challenge the seed and "
                       "replica_id give")
    check_path(v.comm_d_proofs, SINGLE, ctx.d_arities, node, ctx.comm_d, v.comm_d_proofs.leaf,
               True, "comm_d path")
    check_path(v.comm_r_last_proof, ctx.shape, ctx.arities, node, ctx.comm_r_last,
               v.comm_r_last_proof.leaf, False, "comm_r_last path")
    rcp = v.replica_column_proofs
    _check_column(rcp.c_x, node, ctx, "challenged node")
    base, exp = parents[:proof.base_degree], parents[proof.base_degree:]
    if len(rcp.drg_parents) != len(base) or len(rcp.exp_parents) != len(exp):
        raise Rejected(f"{len(rcp.drg_parents)} base and {len(rcp.exp_parents)} expander parent "
                       f"columns, the graph has {len(base)} and {len(exp)}")
    for j, (cp, p) in enumerate(zip(rcp.drg_parents, base)):
        _check_column(cp, p, ctx, f"base parent {j} (node {p})")
    for j, (cp, p) in enumerate(zip(rcp.exp_parents, exp)):
        _check_column(cp, p, ctx, f"expander parent {j} (node {p})")
    if len(v.labeling_proofs) != proof.layers:
        raise Rejected(f"{len(v.labeling_proofs)} labeling proofs for {proof.layers} layers")
    drg_cols = [c.column for c in rcp.drg_parents]
    exp_cols = [c.column for c in rcp.exp_parents]
    for layer, lp in enumerate(v.labeling_proofs, start=1):
        what = f"label of layer {layer}"
        if lp.layer_index != layer or lp.node != node:
            raise Rejected(f"{what}: proof is for layer {lp.layer_index}, node {lp.node}")
        if lp.parents != layer_parent_labels(layer, drg_cols, exp_cols):
            raise Rejected(f"{what}: parent labels are not the parents' column entries")
        if label_hash(ctx.replica_id, layer, node, lp.parents) != rcp.c_x.column.rows[layer - 1]:
            raise Rejected(f"{what}: does not match the column's (label recomputed from replica_id "
                           "and the parents)")
    ep = v.encoding_proof
    last = v.labeling_proofs[-1]
    if ep.layer_index != proof.layers or ep.node != node or ep.parents != last.parents:
        raise Rejected("encoding proof: not the last layer's labeling inputs for this node")
    key = label_hash(ctx.replica_id, ep.layer_index, node, ep.parents)
    if encode(key, v.comm_d_proofs.leaf, "encoding") != v.comm_r_last_proof.leaf:
        raise Rejected("encoding: the data leaf encoded with the last layer's label is not the "
                       "replica leaf")


# ---------------------------------------------------------------- the output
def _partition(c1: C1Output, k: int, ctx_base: dict, challenges: list[int],
               parents_of) -> PartitionResult:
    proofs = c1.vanilla_proofs[k]
    if len(proofs) != len(challenges):
        return PartitionResult(k, len(challenges), f"{len(proofs)} challenge proofs, the seed gives "
                                                   f"{len(challenges)} challenges")
    if not proofs:
        return PartitionResult(k, 0, "no challenge proofs")
    first = proofs[0]
    comm_c = first.replica_column_proofs.c_x.inclusion_proof.root
    comm_r_last = first.comm_r_last_proof.root
    try:
        if poseidon([comm_c, comm_r_last], "comm_c or comm_r_last") != c1.comm_r:
            return PartitionResult(k, len(challenges), "comm_r is not Poseidon(comm_c, comm_r_last)")
    except Rejected as exc:
        return PartitionResult(k, len(challenges), str(exc))
    ctx = _Context(comm_c=comm_c, comm_r_last=comm_r_last, **ctx_base)
    for i, (v, node) in enumerate(zip(proofs, challenges)):
        try:
            verify_challenge(v, node, parents_of(node), ctx)
        except Rejected as exc:
            return PartitionResult(k, len(challenges), f"challenge {i} (node {node}): {exc}")
    return PartitionResult(k, len(challenges))


def verify_c1(c1: C1Output, prover_id: bytes, sector_id: int) -> C1Verdict:
    """Check a C1 output against the sector's public values: the file's registered proof,
    ticket, seed, comm_d and comm_r, and the prover id and sector number given here (which the
    file does not hold). Never raises for a bad proof: the verdict says why."""
    from engine.seal.challenges import interactive_challenges
    from engine.seal.graph import node_parents

    proof = seal_proof(c1.registered_proof)
    if len(prover_id) != 32:
        raise ValueError(f"prover id must be 32 bytes, not {len(prover_id)}")
    replica_id = derive_replica_id(prover_id, sector_id, c1.ticket, c1.comm_d, proof.porep_id)
    if c1.replica_id != replica_id:
        return C1Verdict((), "replica_id is not the one derived from the ticket, comm_d, prover id, "
                             "sector id and porep id")
    if c1.comm_d == bytes(32) or c1.comm_r == bytes(32):
        return C1Verdict((), "an all-zero comm_d or comm_r")
    if c1.seed == bytes(32):
        return C1Verdict((), "an all-zero seed")
    if len(c1.vanilla_proofs) != proof.partitions:
        return C1Verdict((), f"{len(c1.vanilla_proofs)} partitions, {proof.name} has {proof.partitions}")
    shape, arities = tree_shape(proof)
    d_levels = proof.nodes.bit_length() - 1
    ctx_base = dict(proof=proof, replica_id=replica_id, comm_d=c1.comm_d, shape=shape,
                    arities=arities, d_arities=[2] * d_levels)
    results = []
    for k in range(proof.partitions):
        challenges = [int(c) for c in interactive_challenges(proof, replica_id, c1.seed, k)]
        results.append(_partition(c1, k, ctx_base, challenges,
                                  lambda n: [int(x) for x in node_parents(proof, n)]))
    return C1Verdict(tuple(results))
