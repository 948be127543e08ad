"""Merkle inclusion in Filecoin's circuit: storage-proofs-core's ``PoRCircuit`` (por.rs) with a
private root, its ``insert`` gadgets (insertion.rs) and the node hashes it calls.

Per level, leaf first over the base, sub and top levels: the position's index bits
(``AllocatedBit::alloc``), the arity - 1 siblings (``AllocatedNum::alloc``), the current node
inserted among them at that position, and the node hash of the result. Then every level's bits
are packed into public inputs and the computed root must equal the allocated commitment.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable

from engine.c2 import num
from engine.c2.boolean import _and_bits
from engine.c2.cs import Synth
from engine.c2.poseidon import poseidon_hash
from engine.circuit.template import OP_MUL, Bit, Tracer, lc_sum, var

NodeHash = Callable[[Synth, list[int], int], int]
"""``hash_multi_leaf_circuit(children, height) -> node``."""


def _pick(tr: Tracer, cond: Bit, a: int, b: int) -> int:
    """insertion.rs ``pick``: cond ? a : b, with the row (b - a) * cond = b - c."""
    c = tr.alloc()
    diff = lc_sum((1, var(a)), (-1, var(b)))
    tr.emit(OP_MUL, c, [len(cond.lc()), len(diff), 1, *tr.lc_args(cond.lc()), *tr.lc_args(diff),
                        *tr.lc_args(var(b))])
    tr.enforce(lc_sum((1, var(b)), (-1, var(a))), cond.lc(), lc_sum((1, var(b)), (-1, var(c))))
    return c


def _insert_body(tr: Tracer, ins: list[Bit]) -> list[Bit]:
    """``insert``: the element placed among the others at the position the bits say."""
    size = _size_of(len(ins))
    nbits = size.bit_length() - 1
    element = ins[0].slot
    bits = ins[1 : 1 + nbits]
    others = [b.slot for b in ins[1 + nbits :]]
    pick = lambda c, x, y: _pick(tr, c, x, y)  # noqa: E731
    if size == 2:
        (b0,) = bits
        out = [pick(b0, others[0], element), pick(b0, element, others[0])]
    elif size == 4:
        b0, b1 = bits
        a, b, c, d = element, *others
        p0 = pick(b1, b, pick(b0, b, a))
        p1 = pick(b1, c, pick(b0, a, b))
        p2 = pick(b1, pick(b0, d, a), c)
        p3 = pick(b1, pick(b0, a, d), d)
        out = [p0, p1, p2, p3]
    elif size == 8:
        b0, b1, b2 = bits
        a, b, c, d, e, f, g, h = element, *others
        nor = _and_bits(tr, ~b0, ~b1)  # AllocatedBit::nor, then ::and
        both = _and_bits(tr, b0, b1)
        p0 = pick(b2, b, pick(nor, a, b))
        p1 = pick(b2, c, pick(b1, c, pick(b0, a, b)))
        p2 = pick(b2, d, pick(b1, pick(b0, d, a), c))
        p3 = pick(b2, e, pick(both, a, d))
        p4 = pick(b2, pick(nor, a, f), e)
        p5 = pick(b2, pick(b1, g, pick(b0, a, f)), f)
        p6 = pick(b2, pick(b1, pick(b0, h, a), g), g)
        p7 = pick(b2, pick(both, a, h), h)
        out = [p0, p1, p2, p3, p4, p5, p6, p7]
    else:
        # insertion.rs' general case: for each position, select the element that belongs there
        # from the ``size`` candidate results (one per index), size - 1 picks each
        candidates = [others[:index] + [element] + others[index:] for index in range(size)]
        out = [_select(tr, [c[pos] for c in candidates], bits) for pos in range(size)]
    return [Bit(x) for x in out]


def _select(tr: Tracer, choices: list[int], bits: list[Bit]) -> int:
    """insertion.rs ``select``: the choice the bits index (least significant first), by halving
    the candidates with one pick per pair, most significant bit first. Where both candidates of
    a pick are one variable, the Rust row holds that variable with coefficient 0 in A; here A is
    empty (the same row of the R1CS)."""
    state = list(choices)
    for bit in reversed(bits):
        half = len(state) // 2
        state = [_pick(tr, bit, state[half + j], state[j]) for j in range(half)]
    return state[0]


def _size_of(n_inputs: int) -> int:
    """The arity of an insert whose call has ``n_inputs`` = 1 + log2(arity) + arity - 1."""
    for k in range(1, 16):
        if n_inputs == (1 << k) + k:
            return 1 << k
    raise ValueError(f"no insert takes {n_inputs} inputs")


def insert(s: Synth, element: int, bits: list[Bit], others: list[int]) -> list[int]:
    """``insertion::insert``: ``element`` among ``others`` at the position ``bits`` give (the
    hand-built ``insert_2`` / ``insert_4`` / ``insert_8`` for those sizes, Filecoin's; the
    general ``select`` per position, size * (size - 1) picks, for any other power of two)."""
    if len(others) + 1 != 1 << len(bits):
        raise ValueError(f"insert among {len(others)} elements takes {(len(others) + 1).bit_length() - 1} bits")
    outs = s.call("insert", [Bit(element), *bits, *(Bit(o) for o in others)], _insert_body)
    return [b.slot for b in outs]


def poseidon_node(s: Synth, children: list[int], height: int = 0) -> int:
    """filecoin-hashers' Poseidon ``hash_multi_leaf_circuit`` (``height`` unused)."""
    del height
    return poseidon_hash(s, children)


def auth_path(s: Synth, ci: int, tree: Hashable, levels: list[int], leaf: int,
              node_hash: NodeHash) -> tuple[int, list[Bit]]:
    """``SubPath::synthesize`` over the base, sub and top levels in turn (por.rs): per level
    its index bits, its siblings, the insertion and the node hash (given the level's index
    along the path as ``height``, which every filecoin-hashers node hash ignores). Returns the
    computed root and every level's index bits, leaf level first."""
    if any(a < 2 or a & (a - 1) for a in levels):
        raise ValueError(f"path arities must be powers of two (>= 2), got {levels}")
    cur = leaf
    path_bits: list[Bit] = []
    for level, arity in enumerate(levels):
        nbits = arity.bit_length() - 1
        bits = [num.alloc_bit(s, ("path", ci, tree, level, "bit", b)) for b in range(nbits)]
        path_bits += bits
        siblings = [s.alloc(("path", ci, tree, level, "sibling", j)) for j in range(arity - 1)]
        cur = node_hash(s, insert(s, cur, bits, siblings), level)
    return cur, path_bits


def por(s: Synth, ci: int, tree: Hashable, levels: list[int], leaf: int, root: int,
        node_hash: NodeHash) -> None:
    """``PoRCircuit::synthesize`` with a private root for the challenge at ``ci`` of the
    partition: ``levels`` are the arities of the path's levels, leaf first."""
    cur, path_bits = auth_path(s, ci, tree, levels, leaf, node_hash)
    chunks = -(-len(path_bits) // 254)
    num.pack_into_inputs(s, path_bits, [("path_input", ci, tree, k) for k in range(chunks)])
    num.equal(s, cur, root)


def hash2(s: Synth, a: int, b: int) -> int:
    """The Poseidon tree's ``hash2_circuit`` (comm_r = H(comm_c, comm_r_last))."""
    return poseidon_hash(s, [a, b])


def hash_single_column(s: Synth, column: list[int]) -> int:
    """stacked/circuit/hash.rs: Poseidon of a column's labels (2 or 11 layers)."""
    if len(column) not in (2, 11):
        raise ValueError(f"Filecoin hashes columns of 2 or 11 labels, not {len(column)}")
    return poseidon_hash(s, column)
