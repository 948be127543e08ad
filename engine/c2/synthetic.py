"""A C1 output for any registered sector size without sealing the sector: the input of C2 at
32 GiB on a machine that cannot seal 32 GiB.

The sector is a committed-capacity sector (all-zero data, as Filecoin's CC sectors are), so
tree_d is the zero tree: comm_d and every tree_d path cost one hash per level, and replica_id
follows from it exactly as for a real sector. Everything the vanilla proofs open is then real
and consistent, and the rest stands in:

- the challenges are Filecoin's interactive challenges for that replica_id and seed, and every
  parent is the SDR graph's (engine/seal/graph.py node_parents);
- a challenged node's label on every layer is the real label over its parents' labels; a label
  nothing opens as a challenge is a seeded stand-in (a truncated SHA-256 of the seed, the node
  and the layer), the same wherever it is opened;
- tree_c and tree_r_last are sparse: the opened leaves are real (column hashes, and the replica
  node = data 0 + key = the last label), every subtree no path enters is a seeded stand-in, and
  every node on an opened path is the real Poseidon hash of its children, so all paths of the
  sector meet in one comm_c and one comm_r_last, and comm_r = Poseidon_2(comm_c, comm_r_last).

So the result passes the vanilla verifier (engine/seal/vanilla_verify.py) like a sealed sector's
and fills Filecoin's C2 circuit; only the labels and tree nodes no challenge reaches are not what
sealing the zero sector would have made.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Callable

import numpy as np

from engine.seal.c1json import proof_shape
from engine.seal.challenges import interactive_challenges
from engine.seal.graph import node_parents
from engine.seal.hashing import poseidon_nodes
from engine.seal.labels import label_node, replica_id
from engine.seal.registry import SealProof
from engine.seal.trees import level_arities
from engine.seal.vanilla import (
    C1Output,
    Column,
    ColumnProof,
    EncodingProof,
    LabelingProof,
    ReplicaColumnProof,
    VanillaProof,
    layer_parent_labels,
    merkle_proof,
)

NODE = 32


def _trunc(d: bytes) -> bytes:
    return d[:31] + bytes([d[31] & 0x3F])


def _zero_levels(levels: int) -> list[bytes]:
    """The zero tree's node at each height (0: a zero leaf)."""
    out = [bytes(NODE)]
    for _ in range(levels):
        out.append(_trunc(hashlib.sha256(out[-1] + out[-1]).digest()))
    return out


class _SparseTree:
    """A Poseidon tree of Filecoin shape where only some leaves are known: every other subtree
    is a stand-in node, and every node above a known leaf is the real hash of its children."""

    def __init__(self, leaves: dict[int, bytes], nodes: int, shape: tuple[int, int, int],
                 stand_in: Callable[[int, int], bytes]) -> None:
        self.arities = level_arities(nodes, shape)
        self.levels: list[dict[int, bytes]] = [dict(leaves)]
        self._stand_ins: dict[tuple[int, int], bytes] = {}
        self.stand_in = stand_in
        for height, a in enumerate(self.arities):
            known = self.levels[-1]
            groups = sorted({i // a for i in known})
            rows = [self._node(height, g * a + j) for g in groups for j in range(a)]
            hashed = poseidon_nodes(np.frombuffer(b"".join(rows), np.uint8).reshape(-1, NODE), a)
            self.levels.append(dict(zip(groups, (bytes(h) for h in hashed))))
        (self.root,) = self.levels[-1].values()

    def _node(self, height: int, i: int) -> bytes:
        got = self.levels[height].get(i)
        if got is None:  # a path asks again for the stand-ins its level's hash took
            got = self._stand_ins.get((height, i))
            if got is None:
                got = self._stand_ins[(height, i)] = self.stand_in(height, i)
        return got

    def path(self, leaf: int) -> list[tuple[list[bytes], int]]:
        """(siblings, slot) per level, leaves up, as Filecoin's PathElements."""
        out = []
        i = leaf
        for height, a in enumerate(self.arities):
            start = i - i % a
            out.append(([self._node(height, j) for j in range(start, start + a) if j != i], i % a))
            i //= a
        return out


def synthetic_c1(proof: SealProof, seed: int, prover_id: bytes | None = None, sector_id: int = 1,
                 partitions: int | None = None) -> C1Output:
    """A C1 output of a zero sector of ``proof``'s size, its stand-ins and its ticket and
    interactive seed drawn from ``seed``; the first ``partitions`` partitions (all by default)."""
    parts = proof.partitions if partitions is None else partitions
    if not 1 <= parts <= proof.partitions:
        raise ValueError(f"{proof.name} has partitions 1..{proof.partitions}, not {parts}")
    keyed = hashlib.sha256(b"sealtop-synthetic-c1" + struct.pack("<Q", seed))

    def prf_of(what: bytes) -> bytes:
        h = keyed.copy()
        h.update(what)
        return _trunc(h.digest())

    def prf(*what: object) -> bytes:  # a stand-in named by the repr of what it stands in for
        return prf_of(repr(what).encode())

    prover = prover_id if prover_id is not None else prf("prover_id")
    ticket, interactive_seed = prf("ticket"), prf("seed")
    d_levels = proof.nodes.bit_length() - 1
    zeros = _zero_levels(d_levels)
    comm_d = zeros[-1]
    rid = replica_id(prover, sector_id, ticket, comm_d, proof.porep_id)

    challenges = [interactive_challenges(proof, rid, interactive_seed, k) for k in range(parts)]
    parents = {c: node_parents(proof, c) for cs in challenges for c in cs}
    challenged = set(parents)
    labels: dict[tuple[int, int], bytes] = {}

    def label(node: int, layer: int) -> bytes:
        got = labels.get((node, layer))
        if got is not None:
            return got
        if node not in challenged:
            value = prf_of(b"('label', %d, %d)" % (node, layer))
        else:
            ps = parents[node]
            prev = [label(p, layer) for p in ps[:proof.base_degree]]
            if layer > 1:
                prev += [label(p, layer - 1) for p in ps[proof.base_degree:]]
            value = label_node(rid, layer, node, prev)
        labels[(node, layer)] = value
        return value

    def column(node: int) -> Column:
        return Column(node, tuple(label(node, layer) for layer in range(1, proof.layers + 1)))

    opened = sorted(challenged | {p for ps in parents.values() for p in ps})
    columns = {n: column(n) for n in opened}
    # every opened column's hash in one batch: Poseidon of arity = layers over its labels
    rows = np.frombuffer(b"".join(b"".join(columns[n].rows) for n in opened), np.uint8)
    hashed = poseidon_nodes(rows.reshape(-1, NODE), proof.layers)
    tree_c = _SparseTree({n: bytes(h) for n, h in zip(opened, hashed)}, proof.nodes,
                         proof.tree_arities, lambda h, i: prf_of(b"('tree_c', %d, %d)" % (h, i)))
    # the replica node is data (0 in a CC sector) + key (the last layer's label)
    tree_r = _SparseTree({c: columns[c].rows[-1] for c in challenged}, proof.nodes,
                         proof.tree_arities,
                         lambda h, i: prf_of(b"('tree_r_last', %d, %d)" % (h, i)))
    from engine.seal.commitments import comm_r as hash_comm_r

    comm_r = hash_comm_r(tree_c.root, tree_r.root)

    def d_path(c: int) -> list[tuple[list[bytes], int]]:
        return [([zeros[h]], (c >> h) & 1) for h in range(d_levels)]

    def col_proof(n: int) -> ColumnProof:
        return ColumnProof(columns[n], merkle_proof(tree_c.path(n), tree_c.root,
                                                    tree_c.levels[0][n], proof.tree_arities))

    vanilla = []
    for cs in challenges:
        part = []
        for c in cs:
            drg = tuple(col_proof(p) for p in parents[c][:proof.base_degree])
            exp = tuple(col_proof(p) for p in parents[c][proof.base_degree:])
            labeling = tuple(
                LabelingProof(layer_parent_labels(layer, [x.column for x in drg], [x.column for x in exp]),
                              layer, c)
                for layer in range(1, proof.layers + 1))
            part.append(VanillaProof(
                comm_d_proofs=merkle_proof(d_path(c), comm_d, zeros[0], (2, 0, 0)),
                comm_r_last_proof=merkle_proof(tree_r.path(c), tree_r.root, tree_r.levels[0][c],
                                               proof.tree_arities),
                replica_column_proofs=ReplicaColumnProof(col_proof(c), drg, exp),
                labeling_proofs=labeling,
                encoding_proof=EncodingProof(labeling[-1].parents, labeling[-1].layer_index, c),
            ))
        vanilla.append(tuple(part))
    return C1Output(registered_proof=proof.name, shape=proof_shape(proof.name),
                    vanilla_proofs=tuple(vanilla), comm_r=comm_r, comm_d=comm_d, replica_id=rid,
                    seed=interactive_seed, ticket=ticket)
