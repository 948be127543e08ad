"""Synthetic sectors: a reproducible sector from a seed, labelled over its parent graph, and the
private values (the witness regions) of each partition.

Labelling, as Filecoin's SDR: the label of node v on layer ℓ is
trunc(SHA-256(replica_id ‖ ℓ as u32 BE ‖ v as u64 BE ‖ 20 zero bytes ‖ 37 parent labels)),
field elements as 32 bytes LE. The parent labels are the base parents' labels on layer ℓ and, for
ℓ > 1, the expander parents' labels on layer ℓ − 1, cycled to 37 entries (layer 1: the 6 base
labels six times, then the first; later layers: the 14 twice, then the first 9). Node 0 hashes
the 64-byte prefix only. Without parents every label hashes the prefix only. In the Poseidon-only
mode (``sha=False``) tree_d is a Poseidon tree and a label is
Poseidon_11(replica_id, ℓ·2^64 + v, the same parent labels cycled to 9 entries), zeros where a
node hashes no parents.

Sectors up to ``FULL_TREE_LOG2`` nodes are computed in full (every label, every tree node).
Larger ones are sparse: the challenged nodes' labels are real (hashed from their parents'
labels), the parents' own labels are seeded stand-ins, and only the paths of the opened leaves
are real hashes, which keeps sealtop-32g's shape without a 32 GiB sector.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np

from engine.circuit.graph import ParentGraph
from engine.circuit.merkle import poseidon_paths, poseidon_tree_arities, sha_paths
from engine.circuit.native import poseidon_many, random_field_254
from engine.circuit.params import (
    LABEL_PARENTS,
    POSEIDON_LABEL_ENTRIES,
    PorepParams,
    default_graph_seed,
    job_challenge_seed,
    preset_params,
)
from engine.circuit.sha256 import sha256_field
from engine.circuit.statement import PorepStatement, derive_challenges
from kernels.constants import R_MOD

FULL_TREE_LOG2 = 12


@dataclass
class PorepPartition:
    """One partition's inputs: its statement, the public inputs derived from it, and the private
    regions of the witness."""

    params: PorepParams
    public: list[int]  # replica_id, comm_d, comm_r, then per challenge: index, parent positions
    free: dict[str, object]
    challenges: list[int]
    statement: PorepStatement | None = None


@dataclass
class Sector:
    """A synthetic sector (possibly sparse): what the partitions are proven against."""

    params: PorepParams
    seed: int
    replica_id: int
    comm_d: int
    comm_c: int
    comm_r_last: int
    comm_r: int
    challenge_seed: bytes = b""
    graph_seed: bytes = b""

    def statement(self, partition: int) -> PorepStatement:
        """What a verifier of ``partition`` knows about this sector."""
        return PorepStatement(self.params, self.replica_id, self.comm_d, self.comm_r,
                              self.challenge_seed, self.graph_seed, partition)


def expand_parents(labels: list, entries: int = LABEL_PARENTS) -> list:
    """The parent entries of a label message: ``labels`` cycled to ``entries`` (none stay
    none)."""
    return [labels[i % len(labels)] for i in range(entries)] if labels else []


def label_message(replica_id: int, layer: int, node: int, parent_entries: list[int]) -> bytes:
    """The bytes SHA-256 hashes into a label (``parent_entries``: already cycled, or empty)."""
    return (replica_id.to_bytes(32, "little") + layer.to_bytes(4, "big") + node.to_bytes(8, "big")
            + bytes(20) + b"".join(x.to_bytes(32, "little") for x in parent_entries))


def sha_label(replica_id: int, layer: int, node: int, parent_labels: list[int]) -> int:
    """A node's label from its parents' labels (base on this layer, then expander one below)."""
    return sha256_field(label_message(replica_id, layer, node, expand_parents(parent_labels)))


def poseidon_label_tag(layer: int, node: int) -> int:
    return (layer << 64) + node


def poseidon_label_inputs(replica_id: int, layer: int, node: int, parent_labels: list[int]) -> list[int]:
    """The 11 inputs of a Poseidon-only label."""
    entries = expand_parents(parent_labels, POSEIDON_LABEL_ENTRIES) or [0] * POSEIDON_LABEL_ENTRIES
    return [replica_id, poseidon_label_tag(layer, node), *entries]


def replica_id_of(seed: int) -> int:
    return sha256_field(b"sealtop replica id" + seed.to_bytes(16, "little", signed=True))


def _stand_in(seed: int, layer: int, node: int) -> int:
    """A seeded label for a node whose own parents a sparse sector does not compute."""
    h = hashlib.sha256(repr((seed, "stand-in", layer, node)).encode()).digest()
    return int.from_bytes(h, "little") & ((1 << 254) - 1)


def _labels(p: PorepParams, g: ParentGraph, replica_id: int, nodes: list[int], real: set[int],
            seed: int) -> list[dict[int, int]]:
    """labels[ℓ][v] for ℓ = 1..L (index 0 unused) and v in ``nodes`` (sorted). Nodes in ``real``
    are hashed from their parents' labels; the rest are stand-ins."""
    labels: list[dict[int, int]] = [{}]
    if not p.sha and not p.num_parents:  # no order between nodes: one batch per layer
        for layer in range(1, p.layers + 1):
            vals = poseidon_many([poseidon_label_inputs(replica_id, layer, v, []) for v in nodes])
            labels.append(dict(zip(nodes, vals)))
        return labels
    base = {v: g.base_parents(v) for v in real}
    exp = {v: g.exp_parents(v) for v in real}
    for layer in range(1, p.layers + 1):
        cur: dict[int, int] = {}
        below = labels[layer - 1]
        for v in nodes:
            if v not in real:
                cur[v] = _stand_in(seed, layer, v)
                continue
            pl = [] if v == 0 else [cur[b] for b in base[v]]
            if pl and layer > 1:
                pl += [below[e] for e in exp[v]]
            if p.sha:
                cur[v] = sha_label(replica_id, layer, v, pl)
            else:
                cur[v] = poseidon_many([poseidon_label_inputs(replica_id, layer, v, pl)])[0]
        labels.append(cur)
    return labels


def generate_partitions(
    p: PorepParams | str, seed: int, partitions: int = 1, graph_seed: bytes | None = None,
    label_graph_seed: bytes | None = None,
) -> tuple[Sector, list[PorepPartition]]:
    """A reproducible synthetic sector from ``seed`` (labelled over the graph of ``graph_seed``,
    by default the shape's own) and its partitions' inputs.

    ``label_graph_seed`` makes a cheating prover's sector: labels computed over that other graph
    while the partitions open the parents ``graph_seed`` names (full sectors only; the tests use
    it to show that such a witness satisfies nothing)."""
    if isinstance(p, str):
        p = preset_params(p)
    p.validate()
    if partitions < 1:
        raise ValueError("a job has at least one partition")
    rng = np.random.default_rng(seed & ((1 << 64) - 1))
    N, L = p.num_nodes, p.layers
    replica_id = replica_id_of(seed)
    cseed = job_challenge_seed(seed)
    gseed = default_graph_seed(p) if graph_seed is None else graph_seed
    g = ParentGraph(gseed, N, p.base_parents, p.exp_parents)
    g_label = g if label_graph_seed is None else ParentGraph(label_graph_seed, N, p.base_parents, p.exp_parents)
    chals = [derive_challenges(p, replica_id, cseed, part) for part in range(partitions)]
    challenged = sorted({c for cs in chals for c in cs})
    parents = {c: g.parents(c) for c in challenged}
    opened = sorted(set(challenged).union(*map(set, parents.values())))
    full = p.log2_nodes <= FULL_TREE_LOG2
    if not full and label_graph_seed is not None:
        raise ValueError("labels over another graph need a full sector")
    nodes = list(range(N)) if full else opened
    labels = _labels(p, g_label, replica_id, nodes, set(nodes) if full else set(challenged), seed)
    data_nodes = nodes if full else challenged
    data = dict(zip(data_nodes, random_field_254(rng, len(data_nodes))))
    replica = {v: (data[v] + labels[L][v]) % R_MOD for v in data_nodes}
    columns = dict(zip(nodes, poseidon_many([[labels[l][v] for l in range(1, L + 1)] for v in nodes])))

    d_paths = (sha_paths if p.sha else poseidon_paths)(data, N, challenged, rng)
    r_paths = poseidon_paths(replica, N, challenged, rng)
    c_paths = poseidon_paths(columns, N, opened, rng)
    comm_r = poseidon_many([[c_paths.root, r_paths.root]])[0]
    sector = Sector(p, seed, replica_id, d_paths.root, c_paths.root, r_paths.root, comm_r, cseed, gseed)

    at_ch = {c: j for j, c in enumerate(challenged)}
    at_op = {v: j for j, v in enumerate(opened)}
    arities = poseidon_tree_arities(p.log2_nodes)
    d_levels = p.log2_nodes if p.sha else len(arities)
    parts = []
    for part, cs in enumerate(chals):
        free: dict[str, object] = {
            "data": [data[c] for c in cs],
            "comm_c": [c_paths.root],
            "comm_r_last": [r_paths.root],
        }
        for lvl in range(d_levels):
            sib = [d_paths.siblings[at_ch[c]][lvl] for c in cs]
            free[f"d_sib{lvl}"] = [s[0] for s in sib] if p.sha else sib
        for lvl in range(len(arities)):
            free[f"r_sib{lvl}"] = [r_paths.siblings[at_ch[c]][lvl] for c in cs]
            free[f"c_sib{lvl}"] = [c_paths.siblings[at_op[c]][lvl] for c in cs]
            if p.num_parents:
                free[f"pc_sib{lvl}"] = [[c_paths.siblings[at_op[v]][lvl] for v in parents[c]] for c in cs]
        if p.num_parents:
            free["parent_cols"] = [[[labels[l][v] for l in range(1, L + 1)] for v in parents[c]] for c in cs]
        st = sector.statement(part)
        parts.append(PorepPartition(p, st.public_inputs(), free, list(cs), st))
    return sector, parts
