"""The Merkle trees of a sealed sector: tree_d (binary SHA-256 over the padded data) and the
Poseidon trees tree_c and tree_r_last, whose shape is a sector's (base, sub, top) arities.

A Filecoin tree of shape (b, s, t) over N leaves is (s or 1) * (t or 1) base trees of arity b,
each over a consecutive equal run of the leaves; the roots of each run of s base trees are
hashed (arity s) into a sub-tree root, and the roots of the t sub trees (arity t) into the root
(merkletree's ``from_trees`` / ``from_sub_trees``). Since every base tree's leaf count is a power
of b, hashing the whole leaf row level by level in consecutive groups builds every base tree at
once; the sub and top levels are two more grouped levels. So a tree here is its levels, leaves
first, with one arity per level.

Nodes are uint8[n, 32], canonical little-endian field elements (Filecoin's Domain bytes). A leaf
is stored as it is (the hashers' ``leaf`` is the identity). Proofs and their verification are
pure functions of bytes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from engine.seal.hashing import (
    NODE_BYTES,
    mont_to_nodes,
    nodes_to_mont,
    poseidon_bytes,
    poseidon_mont_groups,
    sha256_pairs,
)

SHA256 = "sha256"
POSEIDON = "poseidon"

Progress = Callable[[int, int], None]
"""Called with (hashes done, hashes in all) while a tree is built."""

_CHUNK_GROUPS = 1 << 16  # groups hashed per numba call: progress and Ctrl-C between calls


def _log_exact(n: int, base: int) -> int | None:
    """k with base**k == n, or None."""
    k = 0
    while n > 1 and n % base == 0:
        n //= base
        k += 1
    return k if n == 1 else None


def level_arities(leaves: int, shape: tuple[int, int, int]) -> tuple[int, ...]:
    """The arity of each level (leaves up) of a tree of Filecoin ``shape`` (base, sub, top; 0 =
    none) over ``leaves`` leaves; ValueError when that many leaves do not fit the shape."""
    base, sub, top = shape
    if base < 2 or sub < 0 or top < 0 or (top and not sub):
        raise ValueError(f"not a Filecoin tree shape: {shape}")
    trees = (sub or 1) * (top or 1)
    per_tree, rest = divmod(leaves, trees)
    height = _log_exact(per_tree, base) if per_tree and not rest else None
    if height is None or height == 0:
        raise ValueError(f"{leaves} leaves do not make {trees} base trees of arity {base}")
    return (base,) * height + ((sub,) if sub else ()) + ((top,) if top else ())


@dataclass(frozen=True)
class MerkleProof:
    """An inclusion proof: the leaf, its index, and per level (leaves up) the arity - 1 sibling
    nodes of the group it sits in, in order with its own slot left out."""

    hasher: str
    leaf_index: int
    leaf: bytes
    arities: tuple[int, ...]
    siblings: tuple[tuple[bytes, ...], ...]
    root: bytes

    @property
    def positions(self) -> tuple[int, ...]:
        """The node's slot in its group at each level (Filecoin's PathElement ``index``)."""
        out = []
        i = self.leaf_index
        for a in self.arities:
            out.append(i % a)
            i //= a
        return tuple(out)


@dataclass(frozen=True)
class MerkleTree:
    """A built tree: every level, leaves (levels[0]) to the root (levels[-1], one node)."""

    hasher: str
    arities: tuple[int, ...]
    levels: tuple[np.ndarray, ...]

    @property
    def root(self) -> bytes:
        return bytes(self.levels[-1][0])

    @property
    def leaves(self) -> int:
        return int(self.levels[0].shape[0])

    def path(self, leaf: int) -> list[tuple[list[bytes], int]]:
        """The leaf's path as Filecoin's PathElements: per level (leaves up) the arity - 1
        siblings and the node's slot in its group."""
        p = self.proof(leaf)
        return [(list(sib), pos) for sib, pos in zip(p.siblings, p.positions, strict=True)]

    def proof(self, leaf: int) -> MerkleProof:
        """The inclusion proof of leaf ``leaf``."""
        if not 0 <= leaf < self.leaves:
            raise ValueError(f"leaf {leaf} is outside the tree's {self.leaves} leaves")
        siblings = []
        i = leaf
        for level, a in zip(self.levels[:-1], self.arities, strict=True):
            start = i - i % a
            siblings.append(tuple(bytes(level[j]) for j in range(start, start + a) if j != i))
            i //= a
        return MerkleProof(
            hasher=self.hasher,
            leaf_index=leaf,
            leaf=bytes(self.levels[0][leaf]),
            arities=self.arities,
            siblings=tuple(siblings),
            root=self.root,
        )


def _nodes(leaves: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(leaves, np.uint8)
    if a.ndim != 2 or a.shape[1] != NODE_BYTES:
        raise ValueError(f"tree leaves need uint8[n, 32], got shape {a.shape}")
    return a


def _total_hashes(leaves: int, arities: tuple[int, ...]) -> int:
    total, n = 0, leaves
    for a in arities:
        n //= a
        total += n
    return total


def tree_d(leaves: np.ndarray, progress: Progress | None = None) -> MerkleTree:
    """tree_d: the binary SHA-256 tree over the Fr32-padded sector's nodes (a power of two)."""
    level = _nodes(leaves)
    height = _log_exact(level.shape[0], 2)
    if not height:
        raise ValueError(f"tree_d needs a power-of-two number of leaves (>= 2), got {level.shape[0]}")
    arities = (2,) * height
    total, done = _total_hashes(level.shape[0], arities), 0
    levels = [level]
    for _ in arities:
        outs = []
        step = 2 * _CHUNK_GROUPS
        for s in range(0, level.shape[0], step):
            outs.append(sha256_pairs(level[s : s + step]))
            done += outs[-1].shape[0]
            if progress is not None:
                progress(done, total)
        level = np.concatenate(outs) if len(outs) > 1 else outs[0]
        levels.append(level)
    return MerkleTree(SHA256, arities, tuple(levels))


def poseidon_tree(
    leaves: np.ndarray,
    shape: tuple[int, int, int],
    progress: Progress | None = None,
    leaves_mont: np.ndarray | None = None,
) -> MerkleTree:
    """A Poseidon tree of Filecoin ``shape`` (tree_c over column hashes, tree_r_last over the
    replica). ``leaves_mont``, when the caller has it, is the same leaves in Fr storage form
    (saves one conversion)."""
    level = _nodes(leaves)
    arities = level_arities(level.shape[0], shape)
    mont = nodes_to_mont(level) if leaves_mont is None else leaves_mont
    total, done = _total_hashes(level.shape[0], arities), 0
    levels = [level]
    for a in arities:
        outs = []
        step = a * _CHUNK_GROUPS
        for s in range(0, mont.shape[0], step):
            outs.append(poseidon_mont_groups(mont[s : s + step], a))
            done += outs[-1].shape[0]
            if progress is not None:
                progress(done, total)
        mont = np.concatenate(outs) if len(outs) > 1 else outs[0]
        levels.append(mont_to_nodes(mont))
    return MerkleTree(POSEIDON, arities, tuple(levels))


def _sha_group(parts: list[bytes]) -> bytes:
    d = bytearray(hashlib.sha256(b"".join(parts)).digest())
    d[31] &= 0x3F
    return bytes(d)


def verify_proof(proof: MerkleProof, root: bytes) -> bool:
    """Whether ``proof`` shows its leaf at its index under ``root`` (recomputed from the leaf and
    the siblings; a malformed proof is simply not valid)."""
    if proof.hasher == SHA256:
        hash_group = _sha_group
    elif proof.hasher == POSEIDON:
        hash_group = poseidon_bytes
    else:
        return False
    if len(proof.siblings) != len(proof.arities) or proof.root != root or len(root) != NODE_BYTES:
        return False
    capacity = 1
    for a, sib in zip(proof.arities, proof.siblings, strict=True):
        if a < 2 or len(sib) != a - 1 or any(len(s) != NODE_BYTES for s in sib):
            return False
        capacity *= a
    if not 0 <= proof.leaf_index < capacity or len(proof.leaf) != NODE_BYTES:
        return False
    node = proof.leaf
    try:
        for pos, sib in zip(proof.positions, proof.siblings, strict=True):
            node = hash_group([*sib[:pos], node, *sib[pos:]])
    except ValueError:  # a Poseidon input that is not a field element
        return False
    return node == root
