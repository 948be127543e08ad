"""The sector's parent graph, seeded: the parents of every node, which labelling hashes and the
verifier recomputes from the seed alone, in O(degree).

A graph of Filecoin's degrees (6 base parents, 8 expander parents) is Filecoin's SDR graph
(engine/seal/graph.py) with the seed as its porep id: the bucket-sampling DRG and the Feistel
expander keyed as Filecoin keys them. Seeded with a registered proof's porep id over that proof's
node count, it is that proof's graph parent for parent (see ``params.default_graph_seed``).

Other degrees (the small presets' shapes, which Filecoin has no graph for) keep a look-alike:
- base parents of node v are earlier nodes: the first is v − 1 (so labelling is sequential), the
  others drawn by bucket sampling (a distance 2^(j−1) ≤ d < 2^j for a random bucket j); nodes 0
  and 1 have only node 0 as parent;
- expander parents of node v are any nodes (their labels come from the previous layer);
every value from BLAKE2b of the graph seed, a tag and the node.
"""

from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass
from functools import cached_property

from engine.seal import graph as sdr
from engine.seal.registry import SEAL_PROOFS, SealProof

MAX_DEGREE = 64
SDR_DEGREES = (6, 8)  # Filecoin's base and expander degrees: such a graph is an SDR graph


def seeded_u64s(seed: bytes, tag: bytes, index: int, count: int) -> list[int]:
    """``count`` pseudo-random u64 values determined by (seed, tag, index)."""
    out: list[int] = []
    block = 0
    while len(out) < count:
        h = hashlib.blake2b(seed + tag + index.to_bytes(8, "little") + block.to_bytes(4, "little"),
                            digest_size=64).digest()
        out += [int.from_bytes(h[i : i + 8], "little") for i in range(0, 64, 8)]
        block += 1
    return out[:count]


@dataclass(frozen=True)
class ParentGraph:
    """The parents of every node of a sector of ``num_nodes`` nodes."""

    seed: bytes  # 32 bytes
    num_nodes: int
    base_degree: int
    exp_degree: int

    def __post_init__(self) -> None:
        if len(self.seed) != 32:
            raise ValueError(f"a graph seed is 32 bytes, got {len(self.seed)}")
        if self.num_nodes < 2:
            raise ValueError("a graph needs at least two nodes")
        if not (0 <= self.base_degree <= MAX_DEGREE and 0 <= self.exp_degree <= MAX_DEGREE):
            raise ValueError(f"graph degrees must be 0..{MAX_DEGREE}")

    def _check(self, node: int) -> None:
        if not 0 <= node < self.num_nodes:
            raise ValueError(f"node {node} is outside the graph (0..{self.num_nodes - 1})")

    @cached_property
    def sdr_shape(self) -> SealProof | None:
        """The SDR graph this is (the seed as porep id, this node count), or None for a
        look-alike of other degrees."""
        if (self.base_degree, self.exp_degree) != SDR_DEGREES or self.num_nodes > 0xFFFFFFFF:
            return None
        template = SEAL_PROOFS["StackedDrg32GiBV1_1"]
        return dataclasses.replace(template, name="sealtop-graph", porep_id=self.seed,
                                   nodes=self.num_nodes, sector_size=32 * self.num_nodes)

    def base_parents(self, node: int) -> list[int]:
        """The DRG parents of ``node``: all below it (node 0 has itself, never challenged)."""
        self._check(node)
        if self.sdr_shape is not None:
            return self.parents(node)[: self.base_degree]
        d = self.base_degree
        if d == 0:
            return []
        if node < 2:
            return [0] * d
        out = [node - 1]
        top = node.bit_length()  # 2^(top-1) <= node < 2^top
        for v in seeded_u64s(self.seed, b"drg", node, d - 1):
            j = 1 + v % top
            lo, hi = 1 << (j - 1), min(1 << j, node + 1)
            out.append(node - (lo + (v >> 8) % (hi - lo)))
        return out

    def exp_parents(self, node: int) -> list[int]:
        """The expander parents of ``node``: any nodes, read one layer down."""
        self._check(node)
        if self.sdr_shape is not None:
            return self.parents(node)[self.base_degree:]
        return [v % self.num_nodes for v in seeded_u64s(self.seed, b"expander", node, self.exp_degree)]

    def parents(self, node: int) -> list[int]:
        """Base parents, then expander parents (the order of the public inputs and columns)."""
        if self.sdr_shape is not None:
            self._check(node)
            return sdr.node_parents(self.sdr_shape, node)
        return self.base_parents(node) + self.exp_parents(node)
