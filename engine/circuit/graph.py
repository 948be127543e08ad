"""The sector's parent graph, seeded: Filecoin's SDR shape (a DRG of base parents plus an
expander), with our own generator.

- Base (DRG) parents of node v are earlier nodes: the first is v − 1 (so labelling is
  sequential), the others are drawn by bucket sampling (a distance 2^(j−1) ≤ d < 2^j for a random
  bucket j, as in a bucket-sampling DRG). Nodes 0 and 1 have only node 0 as parent.
- Expander parents of node v are any nodes (their labels come from the previous layer).

Every value comes from BLAKE2b of the graph seed, a tag and the node, so a verifier recomputes
any node's parents from the seed alone, in O(degree).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

MAX_DEGREE = 64


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

    def base_parents(self, node: int) -> list[int]:
        """The DRG parents of ``node``: all below it (node 0 has itself, never challenged)."""
        self._check(node)
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
        return [v % self.num_nodes for v in seeded_u64s(self.seed, b"expander", node, self.exp_degree)]

    def parents(self, node: int) -> list[int]:
        """Base parents, then expander parents (the order of the public inputs and columns)."""
        return self.base_parents(node) + self.exp_parents(node)
