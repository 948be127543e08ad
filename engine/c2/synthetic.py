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
from dataclasses import dataclass, field

import numpy as np
from numba import njit

from engine.seal.c1json import proof_shape
from engine.seal.challenges import interactive_challenges
from engine.seal.graph import node_parents
from engine.seal.hashing import poseidon_nodes, sha256_rows
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
_KEY = b"sealtop-synthetic-c1"


def _trunc(d: bytes) -> bytes:
    return d[:31] + bytes([d[31] & 0x3F])


def _zero_levels(levels: int) -> list[bytes]:
    """The zero tree's node at each height (0: a zero leaf)."""
    out = [bytes(NODE)]
    for _ in range(levels):
        out.append(_trunc(hashlib.sha256(out[-1] + out[-1]).digest()))
    return out


@njit(cache=True)
def _stand_in_messages(prefix, name, a, b):
    """Row r: ``prefix`` then ``('name', a[r], b[r])`` in ASCII (what a repr of that tuple
    prints), and each row's length."""
    width = len(prefix) + len(name) + 2 * 20 + 8
    msgs = np.zeros((len(a), width), np.uint8)
    lengths = np.empty(len(a), np.int64)
    digits = np.empty(20, np.uint8)
    for r in range(len(a)):
        p = 0
        for c in prefix:
            msgs[r, p] = c
            p += 1
        msgs[r, p] = 40  # (
        msgs[r, p + 1] = 39  # '
        p += 2
        for c in name:
            msgs[r, p] = c
            p += 1
        msgs[r, p] = 39
        p += 1
        for v in (a[r], b[r]):
            msgs[r, p] = 44  # ,
            msgs[r, p + 1] = 32
            p += 2
            n = 0
            while True:
                digits[n] = 48 + v % 10
                v //= 10
                n += 1
                if v == 0:
                    break
            for k in range(n - 1, -1, -1):
                msgs[r, p] = digits[k]
                p += 1
        msgs[r, p] = 41  # )
        lengths[r] = p + 1
    return msgs, lengths


class _StandIns:
    """The seeded stand-ins: a truncated SHA-256 of the key, the seed and the repr of a tuple
    naming what it stands in for (a label, a tree node), one at a time or a batch at once."""

    def __init__(self, seed: int) -> None:
        self.prefix = _KEY + struct.pack("<Q", seed)
        self._keyed = hashlib.sha256(self.prefix)

    def one(self, what: bytes) -> bytes:
        h = self._keyed.copy()
        h.update(what)
        return _trunc(h.digest())

    def batch(self, name: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """uint8[n, 32]: the stand-in for ``(name, a[r], b[r])`` in row r."""
        if not len(a):
            return np.empty((0, NODE), np.uint8)
        msgs, lengths = _stand_in_messages(np.frombuffer(self.prefix, np.uint8),
                                           np.frombuffer(name.encode(), np.uint8),
                                           np.ascontiguousarray(a, np.int64), np.ascontiguousarray(b, np.int64))
        return sha256_rows(msgs, trim=True, lengths=lengths)


class _SparseTree:
    """A Poseidon tree of Filecoin shape where only some leaves are known: every other subtree
    is a stand-in node, and every node above a known leaf is the real hash of its children.
    Per height it keeps the groups a known node sits in with all their children (known or
    stand-in), which is all any path of a known leaf reads."""

    def __init__(self, leaves: np.ndarray, values: np.ndarray, nodes: int, shape: tuple[int, int, int],
                 stand_ins: _StandIns, name: str) -> None:
        self.arities = level_arities(nodes, shape)
        self.groups: list[np.ndarray] = []  # per height: the sorted group indices
        self.rows: list[np.ndarray] = []  # per height: uint8[groups, arity, 32], their children
        known, vals = leaves, values
        for height, a in enumerate(self.arities):
            groups = np.unique(known // a)
            kids = (groups[:, None] * a + np.arange(a)).reshape(-1)
            at = np.minimum(np.searchsorted(known, kids), len(known) - 1)
            hit = known[at] == kids
            rows = np.empty((len(kids), NODE), np.uint8)
            rows[hit] = vals[at[hit]]
            miss = ~hit
            rows[miss] = stand_ins.batch(name, np.full(int(miss.sum()), height), kids[miss])
            self.groups.append(groups)
            self.rows.append(rows.reshape(len(groups), a, NODE))
            known, vals = groups, poseidon_nodes(rows, a)
        self.root = bytes(vals[0])

    def path(self, leaf: int) -> list[tuple[list[bytes], int]]:
        """A known leaf's path: (siblings, slot) per level, leaves up, as Filecoin's
        PathElements."""
        out = []
        i = leaf
        for a, groups, rows in zip(self.arities, self.groups, self.rows):
            g, slot = divmod(i, a)
            kids = rows[int(np.searchsorted(groups, g))].tobytes()
            out.append(([kids[NODE * j:NODE * (j + 1)] for j in range(a) if j != slot], slot))
            i = g
        return out


@dataclass
class SyntheticSector:
    """A synthetic sector's public values and what its partitions' vanilla proofs are made of
    (labels, sparse trees); each partition's proofs are made when first asked for, so the
    first partition of a job need not wait for the other nine."""

    proof: SealProof
    partitions: int
    replica_id: bytes
    comm_d: bytes
    comm_r: bytes
    ticket: bytes
    seed: bytes
    challenges: list[list[int]]
    parents: dict[int, list[int]]
    columns: dict[int, Column]
    tree_c: _SparseTree
    tree_r: _SparseTree
    column_hashes: dict[int, bytes]
    zeros: list[bytes]
    _col_proofs: dict[int, ColumnProof] = field(default_factory=dict)
    _made: dict[int, tuple[VanillaProof, ...]] = field(default_factory=dict)

    @property
    def comm_c(self) -> bytes:
        return self.tree_c.root

    @property
    def comm_r_last(self) -> bytes:
        return self.tree_r.root

    def _col_proof(self, n: int) -> ColumnProof:  # a column opened by several challenges is one object
        got = self._col_proofs.get(n)
        if got is None:
            got = self._col_proofs[n] = ColumnProof(self.columns[n], merkle_proof(
                self.tree_c.path(n), self.tree_c.root, self.column_hashes[n], self.proof.tree_arities))
        return got

    def vanilla(self, k: int) -> tuple[VanillaProof, ...]:
        """Partition ``k``'s vanilla proofs, one a challenge."""
        got = self._made.get(k)
        if got is not None:
            return got
        if not 0 <= k < self.partitions:
            raise ValueError(f"this synthetic sector holds partitions 0..{self.partitions - 1}, not {k}")
        proof, zeros = self.proof, self.zeros
        part = []
        for c in self.challenges[k]:
            ps = self.parents[c]
            drg = tuple(self._col_proof(p) for p in ps[:proof.base_degree])
            exp = tuple(self._col_proof(p) for p in ps[proof.base_degree:])
            labeling = tuple(
                LabelingProof(layer_parent_labels(layer, [x.column for x in drg], [x.column for x in exp]),
                              layer, c)
                for layer in range(1, proof.layers + 1))
            d_path = [([zeros[h]], (c >> h) & 1) for h in range(len(zeros) - 1)]
            part.append(VanillaProof(
                comm_d_proofs=merkle_proof(d_path, self.comm_d, zeros[0], (2, 0, 0)),
                comm_r_last_proof=merkle_proof(self.tree_r.path(c), self.tree_r.root, self.columns[c].rows[-1],
                                               proof.tree_arities),
                replica_column_proofs=ReplicaColumnProof(self._col_proof(c), drg, exp),
                labeling_proofs=labeling,
                encoding_proof=EncodingProof(labeling[-1].parents, labeling[-1].layer_index, c),
            ))
        got = self._made[k] = tuple(part)
        return got

    def c1(self) -> C1Output:
        """The whole C1 output: every partition's vanilla proofs."""
        return C1Output(registered_proof=self.proof.name, shape=proof_shape(self.proof.name),
                        vanilla_proofs=tuple(self.vanilla(k) for k in range(self.partitions)),
                        comm_r=self.comm_r, comm_d=self.comm_d, replica_id=self.replica_id,
                        seed=self.seed, ticket=self.ticket)


def synthetic_c1(proof: SealProof, seed: int, prover_id: bytes | None = None, sector_id: int = 1,
                 partitions: int | None = None) -> C1Output:
    """A C1 output of a zero sector of ``proof``'s size, its stand-ins and its ticket and
    interactive seed drawn from ``seed``; the first ``partitions`` partitions (all by default)."""
    return synthetic_sector(proof, seed, prover_id, sector_id, partitions).c1()


def synthetic_sector(proof: SealProof, seed: int, prover_id: bytes | None = None, sector_id: int = 1,
                     partitions: int | None = None) -> SyntheticSector:
    """As synthetic_c1, the partitions' vanilla proofs left to be made when asked for."""
    parts = proof.partitions if partitions is None else partitions
    if not 1 <= parts <= proof.partitions:
        raise ValueError(f"{proof.name} has partitions 1..{proof.partitions}, not {parts}")
    stand_ins = _StandIns(seed)

    def prf(*what: object) -> bytes:  # a stand-in named by the repr of what it stands in for
        return stand_ins.one(repr(what).encode())

    prover = prover_id if prover_id is not None else prf("prover_id")
    ticket, interactive_seed = prf("ticket"), prf("seed")
    d_levels = proof.nodes.bit_length() - 1
    zeros = _zero_levels(d_levels)
    comm_d = zeros[-1]
    rid = replica_id(prover, sector_id, ticket, comm_d, proof.porep_id)

    challenges = [interactive_challenges(proof, rid, interactive_seed, k) for k in range(parts)]
    parents = {c: node_parents(proof, c) for cs in challenges for c in cs}
    challenged = set(parents)
    opened = np.array(sorted(challenged | {p for ps in parents.values() for p in ps}), np.int64)
    layers = np.arange(1, proof.layers + 1)
    # every label nothing challenges (the parents' columns), in one batch
    standing = opened[~np.isin(opened, list(challenged))]
    batch = stand_ins.batch("label", np.repeat(standing, proof.layers), np.tile(layers, len(standing)))
    labels: dict[tuple[int, int], bytes] = dict(zip(
        ((int(n), int(layer)) for n in standing for layer in layers),
        (bytes(x) for x in batch)))

    def label(node: int, layer: int) -> bytes:  # a challenged node's real label
        got = labels.get((node, layer))
        if got is None:
            ps = parents[node]
            prev = [label(p, layer) for p in ps[:proof.base_degree]]
            if layer > 1:
                prev += [label(p, layer - 1) for p in ps[proof.base_degree:]]
            got = labels[(node, layer)] = label_node(rid, layer, node, prev)
        return got

    columns = {int(n): Column(int(n), tuple(label(int(n), int(layer)) for layer in layers)) for n in opened}
    # every opened column's hash in one batch: Poseidon of arity = layers over its labels
    rows = np.frombuffer(b"".join(b"".join(columns[int(n)].rows) for n in opened), np.uint8)
    hashed = poseidon_nodes(rows.reshape(-1, NODE), proof.layers)
    tree_c = _SparseTree(opened, hashed, proof.nodes, proof.tree_arities, stand_ins, "tree_c")
    # the replica node is data (0 in a CC sector) + key (the last layer's label)
    ends = np.array(sorted(challenged), np.int64)
    last = np.frombuffer(b"".join(columns[int(c)].rows[-1] for c in ends), np.uint8).reshape(-1, NODE)
    tree_r = _SparseTree(ends, last, proof.nodes, proof.tree_arities, stand_ins, "tree_r_last")
    from engine.seal.commitments import comm_r as hash_comm_r

    comm_r = hash_comm_r(tree_c.root, tree_r.root)

    return SyntheticSector(proof, parts, rid, comm_d, comm_r, ticket, interactive_seed, challenges, parents,
                           columns, tree_c, tree_r, dict(zip(opened.tolist(), (bytes(h) for h in hashed))), zeros)
