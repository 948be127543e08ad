"""The vanilla seal proof of one challenge, shaped as storage-proofs-porep's ``stacked::Proof``,
and its generation from a sealed sector.

A C1 output holds one of these per challenge and per partition. The dataclasses mirror the Rust
structs field for field (their serde names are the attribute names), so engine/seal/c1json.py
maps them to and from filecoin-ffi's JSON without a translation table, and a provider's file
reads into the same objects ours do. Every node value is its 32-byte little-endian domain form
(a ``PoseidonDomain`` or ``Sha256Domain``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

TOTAL_PARENTS = 37
"""Parent labels hashed per label: the base and expander parents repeated up to 37."""

SINGLE, SUB, TOP = "Single", "Sub", "Top"
"""The three shapes of a Merkle proof (storage-proofs-core's ``ProofData`` variants)."""


@dataclass(frozen=True)
class PathElement:
    """One level of a Merkle path: the siblings (arity - 1 of them) and the node's index among
    its arity children."""

    hashes: tuple[bytes, ...]
    index: int


@dataclass(frozen=True)
class MerkleProof:
    """A Merkle inclusion proof: ``Single`` (one tree), ``Sub`` (base trees under one sub level)
    or ``Top`` (base, sub and top levels), as Filecoin's compound trees prove a leaf."""

    shape: str
    root: bytes
    leaf: bytes
    base: tuple[PathElement, ...]
    sub: tuple[PathElement, ...] = ()
    top: tuple[PathElement, ...] = ()

    def levels(self) -> tuple[PathElement, ...]:
        """Every level from the leaf up (base, then sub, then top)."""
        return self.base + self.sub + self.top

    def path_index(self, arities: tuple[int, int, int]) -> int:
        """The leaf index the path proves, read from its per-level indices."""
        index, weight = 0, 1
        for levels, arity in ((self.base, arities[0]), (self.sub, arities[1]), (self.top, arities[2])):
            for el in levels:
                index += el.index * weight
                weight *= arity
        return index


@dataclass(frozen=True)
class Column:
    """A node's labels in every layer (row i is layer i + 1), as tree_c hashes them."""

    index: int
    rows: tuple[bytes, ...]


@dataclass(frozen=True)
class ColumnProof:
    column: Column
    inclusion_proof: MerkleProof


@dataclass(frozen=True)
class ReplicaColumnProof:
    """The challenged node's column and its base (DRG) and expander parents' columns, each with
    its tree_c path."""

    c_x: ColumnProof
    drg_parents: tuple[ColumnProof, ...]
    exp_parents: tuple[ColumnProof, ...]


@dataclass(frozen=True)
class LabelingProof:
    """The parent labels (37, repeated) that label ``node`` in ``layer_index`` (1-based)."""

    parents: tuple[bytes, ...]
    layer_index: int
    node: int


@dataclass(frozen=True)
class EncodingProof:
    """The last layer's labeling inputs: its label is the key that encodes the data node."""

    parents: tuple[bytes, ...]
    layer_index: int
    node: int


@dataclass(frozen=True)
class VanillaProof:
    """One challenge's vanilla proof (storage-proofs-porep's ``stacked::Proof``)."""

    comm_d_proofs: MerkleProof
    comm_r_last_proof: MerkleProof
    replica_column_proofs: ReplicaColumnProof
    labeling_proofs: tuple[LabelingProof, ...]
    encoding_proof: EncodingProof


@dataclass(frozen=True)
class C1Output:
    """filecoin-proofs-api's ``SealCommitPhase1Output``: what commit phase 2 (the SNARK) takes.

    ``vanilla_proofs[k][i]`` is partition k's i-th challenge; ``shape`` names the per-shape
    variant of ``VanillaSealProof`` that wraps them (``StackedDrg2KiBV1`` for every 2 KiB proof,
    V1 and V1_1 alike)."""

    registered_proof: str
    shape: str
    vanilla_proofs: tuple[tuple[VanillaProof, ...], ...]
    comm_r: bytes
    comm_d: bytes
    replica_id: bytes
    seed: bytes
    ticket: bytes


# ---------------------------------------------------------------- generation
def merkle_proof(levels: Sequence[tuple[Sequence[bytes], int]], root: bytes, leaf: bytes,
                 arities: tuple[int, int, int]) -> MerkleProof:
    """A MerkleProof from a plain path (siblings and index per level, leaf first), split into
    base, sub and top levels as the tree's arities say (a sub or top level is the last one or
    two)."""
    els = tuple(PathElement(tuple(map(bytes, hs)), int(i)) for hs, i in levels)
    has_sub, has_top = arities[1] > 0, arities[2] > 0
    if has_top:
        return MerkleProof(TOP, root, leaf, els[:-2], els[-2:-1], els[-1:])
    if has_sub:
        return MerkleProof(SUB, root, leaf, els[:-1], els[-1:])
    return MerkleProof(SINGLE, root, leaf, els)


def repeat_parents(labels: Sequence[bytes]) -> tuple[bytes, ...]:
    """The parent labels cycled up to TOTAL_PARENTS, as the labeling hash takes them."""
    return tuple(labels[i % len(labels)] for i in range(TOTAL_PARENTS))


def layer_parent_labels(layer: int, drg_columns: Sequence[Column],
                        exp_columns: Sequence[Column]) -> tuple[bytes, ...]:
    """A node's 37 labeling inputs in ``layer`` (1-based), from its parents' columns: layer 1
    hashes the base parents' layer-1 labels; a later layer the base parents' labels in that layer
    then the expander parents' in the one before."""
    labels = [c.rows[layer - 1] for c in drg_columns]
    if layer > 1:
        labels += [c.rows[layer - 2] for c in exp_columns]
    return repeat_parents(labels)


@dataclass(frozen=True)
class SealedSector:
    """What commit phase 1 reads of a sealed sector: its labels and trees, and the prover's
    means to open them. ``tree_d_path``, ``tree_c_path`` and ``tree_r_path`` give (siblings,
    index) per level, leaf first."""

    labels: np.ndarray  # uint8[layers, nodes, 32]
    data: np.ndarray  # uint8[nodes, 32]: the Fr32-padded sector (tree_d's leaves)
    replica: np.ndarray  # uint8[nodes, 32]: the encoded last layer (tree_r_last's leaves)
    column_hashes: np.ndarray  # uint8[nodes, 32]: tree_c's leaves
    comm_d: bytes
    comm_c: bytes
    comm_r_last: bytes
    tree_d_path: Callable[[int], list[tuple[list[bytes], int]]]
    tree_c_path: Callable[[int], list[tuple[list[bytes], int]]]
    tree_r_path: Callable[[int], list[tuple[list[bytes], int]]]


def column_at(sector: SealedSector, node: int) -> Column:
    return Column(node, tuple(bytes(sector.labels[layer, node]) for layer in range(sector.labels.shape[0])))


def prove_challenge(sector: SealedSector, arities: tuple[int, int, int], challenge: int,
                    drg_parents: Sequence[int], exp_parents: Sequence[int]) -> VanillaProof:
    """One challenge's vanilla proof: the data leaf's tree_d path, the replica leaf's
    tree_r_last path, the challenged node's and its parents' columns with their tree_c paths, a
    labeling proof per layer and the encoding proof of the last."""
    layers = sector.labels.shape[0]

    def column_proof(node: int) -> ColumnProof:
        col = column_at(sector, node)
        path = merkle_proof(sector.tree_c_path(node), sector.comm_c,
                            bytes(sector.column_hashes[node]), arities)
        return ColumnProof(col, path)

    c_x = column_proof(challenge)
    drg = tuple(column_proof(int(p)) for p in drg_parents)
    exp = tuple(column_proof(int(p)) for p in exp_parents)
    labeling = tuple(
        LabelingProof(layer_parent_labels(layer, [c.column for c in drg], [c.column for c in exp]),
                      layer, challenge)
        for layer in range(1, layers + 1))
    last = labeling[-1]
    return VanillaProof(
        comm_d_proofs=merkle_proof(sector.tree_d_path(challenge), sector.comm_d,
                                   bytes(sector.data[challenge]), (2, 0, 0)),
        comm_r_last_proof=merkle_proof(sector.tree_r_path(challenge), sector.comm_r_last,
                                       bytes(sector.replica[challenge]), arities),
        replica_column_proofs=ReplicaColumnProof(c_x, drg, exp),
        labeling_proofs=labeling,
        encoding_proof=EncodingProof(last.parents, last.layer_index, last.node),
    )
