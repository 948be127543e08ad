"""Merkle inclusion: one tree level as a gadget template, and trees computed natively.

A level takes the current node, the siblings and the path bits of the position (little-endian,
log2(arity) of them) and produces the parent. The bits come from the unpacked challenge index,
so the path is bound to it. Trees may be *sparse*: only the nodes on the paths of the challenged
leaves are real hashes of their children; every other child is a seeded stand-in value. A full
tree is the sparse tree whose leaves are all known.

Poseidon trees use neptune's Merkle hash of arity 8 or 2; the SHA-256 tree (tree_d) hashes the
64-byte concatenation of its two children and truncates to 254 bits.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from engine.circuit.bits import unpack
from engine.circuit.native import poseidon_many, random_field_254, sha_many
from engine.circuit.poseidon import poseidon_gadget
from engine.circuit.sha256 import digest_to_field, field_to_stream, sha256_stream
from engine.circuit.template import LC, ONE, OP_MUL, Template, Tracer, lc_sum, var


def _mul_op(tr: Tracer, out: int, l1: LC, l2: LC, l3: LC) -> None:
    """Record the witness of out = l1·l2 + l3 and its constraint l1·l2 = out − l3."""
    tr.enforce(l1, l2, lc_sum((1, var(out)), (-1, l3)))
    tr.emit(OP_MUL, out, [len(l1), len(l2), len(l3), *tr.lc_args(l1), *tr.lc_args(l2), *tr.lc_args(l3)])


def insert_gadget(tr: Tracer, cur: int, sibs: list[int], bits: list[int]) -> list[int]:
    """The arity = 2^len(bits) hash inputs: ``cur`` at the position given by ``bits``, the
    siblings in order around it. Returns the slots of the inputs."""
    arity = 1 << len(bits)
    if len(sibs) != arity - 1:
        raise ValueError(f"a level of arity {arity} has {arity - 1} siblings, got {len(sibs)}")
    # one-hot indicators e[p] = [position == p], built bit by bit
    ind: list[LC] = [var(ONE)]
    for b in bits:
        hi: list[LC] = []
        for f in ind:
            if f == var(ONE):
                hi.append(var(b))
            else:
                g = tr.alloc()
                _mul_op(tr, g, f, var(b), {})
                hi.append(var(g))
        ind = [lc_sum((1, f), (-1, h)) for f, h in zip(ind, hi)] + hi
    inputs: list[int] = []
    for j in range(arity):
        # the sibling that sits at j when cur is elsewhere
        if j == 0:
            sp: LC = var(sibs[0])
        elif j == arity - 1:
            sp = var(sibs[arity - 2])
        else:
            lt = lc_sum(*((1, ind[q]) for q in range(j + 1, arity)))  # [j < position]
            s = tr.alloc()
            _mul_op(tr, s, lt, lc_sum((1, var(sibs[j])), (-1, var(sibs[j - 1]))), var(sibs[j - 1]))
            sp = var(s)
        x = tr.alloc()
        _mul_op(tr, x, ind[j], lc_sum((1, var(cur)), (-1, sp)), sp)
        inputs.append(x)
    return inputs


def poseidon_level_template(arity: int) -> Template:
    """Inputs: cur, arity − 1 siblings, log2(arity) path bits. Output: the parent."""
    m = arity.bit_length() - 1
    if arity not in (2, 8) or 1 << m != arity:
        raise ValueError(f"Poseidon Merkle levels have arity 2 or 8, not {arity}")
    tr = Tracer(f"poseidon{arity}-level", 1 + (arity - 1) + m)
    cur = tr.input(0)
    sibs = [tr.input(1 + j) for j in range(arity - 1)]
    bits = [tr.input(arity + i) for i in range(m)]
    tr.output(poseidon_gadget(tr, insert_gadget(tr, cur, sibs, bits)))
    return tr.finish()


def sha_level_template() -> Template:
    """Inputs: cur, sibling, path bit. Output: trunc(SHA-256(left || right))."""
    tr = Tracer("sha256-level", 3)
    cur, sib, b = tr.input(0), tr.input(1), tr.input(2)
    left = tr.alloc()
    _mul_op(tr, left, var(b), lc_sum((1, var(sib)), (-1, var(cur))), var(cur))
    right = lc_sum((1, var(cur)), (1, var(sib)), (-1, var(left)))
    lbits = unpack(tr, var(left), 254)
    rbits = unpack(tr, right, 254)
    digest = sha256_stream(tr, field_to_stream(lbits) + field_to_stream(rbits))
    tr.output(digest_to_field(tr, digest))
    return tr.finish()


def eq_template() -> Template:
    """Inputs x, y: enforces x = y (x · 1 = y)."""
    tr = Tracer("eq", 2)
    tr.enforce(var(tr.input(0)), var(ONE), var(tr.input(1)))
    return tr.finish()


# ---------------------------------------------------------------------------- native trees


@dataclass
class MerklePaths:
    """Root and, per challenged leaf, per level: siblings (arity − 1 ints) and position."""

    root: int
    siblings: list[list[list[int]]]  # [challenge][level] -> siblings
    positions: list[list[int]]  # [challenge][level] -> position among the arity children


def tree_paths(
    leaves: dict[int, int],
    num_leaves: int,
    arities: Sequence[int],
    hash_rows: Callable[[list[list[int]]], list[int]],
    challenges: Sequence[int],
    rng: np.random.Generator,
) -> MerklePaths:
    """Compute the root and the challenged paths of a (possibly sparse) tree."""
    if int(np.prod(arities)) != num_leaves:
        raise ValueError(f"tree arities {list(arities)} do not cover {num_leaves} leaves")
    for c in challenges:
        if c not in leaves:
            raise ValueError(f"challenged leaf {c} has no value")
    level = dict(leaves)
    idx = list(challenges)
    sibs: list[list[list[int]]] = [[] for _ in challenges]
    pos: list[list[int]] = [[] for _ in challenges]
    size = num_leaves
    for a in arities:
        parents = sorted({i // a for i in level})
        missing = [p * a + j for p in parents for j in range(a) if p * a + j not in level]
        for i, v in zip(missing, random_field_254(rng, len(missing))):
            level[i] = v
        for ci, i in enumerate(idx):
            p = i // a
            sibs[ci].append([level[p * a + j] for j in range(a) if p * a + j != i])
            pos[ci].append(i % a)
        hashed = hash_rows([[level[p * a + j] for j in range(a)] for p in parents])
        level = dict(zip(parents, hashed))
        idx = [i // a for i in idx]
        size //= a
    assert size == 1 and list(level) == [0]
    return MerklePaths(level[0], sibs, pos)


def poseidon_tree_arities(log2_leaves: int) -> list[int]:
    """tree_r_last / tree_c shape: arity-8 levels from the leaves, then arity-2 levels."""
    return [8] * (log2_leaves // 3) + [2] * (log2_leaves % 3)


def poseidon_paths(
    leaves: dict[int, int], num_leaves: int, challenges: Sequence[int], rng: np.random.Generator
) -> MerklePaths:
    """tree_r_last / tree_c: Poseidon, arity 8 levels then arity 2 levels."""
    arities = poseidon_tree_arities(num_leaves.bit_length() - 1)
    return tree_paths(leaves, num_leaves, arities, poseidon_many, challenges, rng)


def sha_paths(
    leaves: dict[int, int], num_leaves: int, challenges: Sequence[int], rng: np.random.Generator
) -> MerklePaths:
    """tree_d: SHA-256 binary tree."""
    arities = [2] * (num_leaves.bit_length() - 1)
    return tree_paths(leaves, num_leaves, arities, sha_many, challenges, rng)
