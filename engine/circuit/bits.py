"""Boolean gadgets traced into a :class:`Tracer`: booleanity, packing, unpacking, bit logic and
32-bit word addition. Constants fold at trace time (xor with a constant bit is free), so a
gadget fed constant words (SHA-256's IV, a padding block) costs only what is not constant.

A 32-bit word is a list of 32 :class:`Bit`, index 0 the least significant bit.
"""

from __future__ import annotations

from engine.circuit.template import (
    LC,
    ONE,
    OP_ADDW,
    OP_AND,
    OP_CH,
    OP_LIN,
    OP_MAJ,
    OP_UNPACK,
    OP_XOR,
    Bit,
    Tracer,
    lc_sum,
    var,
)
from kernels.constants import R_MOD

Word = list[Bit]


def enforce_boolean(tr: Tracer, slot: int) -> None:
    """slot · (slot − 1) = 0."""
    tr.enforce(var(slot), {slot: 1, ONE: R_MOD - 1}, {})


def unpack(tr: Tracer, value: LC, nbits: int) -> list[Bit]:
    """nbits boolean wires whose little-endian sum equals ``value``; binds value < 2^nbits."""
    if not 1 <= nbits <= 254:
        raise ValueError(f"unpack to {nbits} bits: choose 1..254 (must stay below r)")
    first = tr.alloc(nbits)
    for i in range(nbits):
        enforce_boolean(tr, first + i)
    tr.enforce(lc_sum(*((1 << i, var(first + i)) for i in range(nbits))), var(ONE), value)
    tr.emit(OP_UNPACK, first, [nbits, *tr.lc_args(value)])
    return [Bit(first + i) for i in range(nbits)]


def pack(tr: Tracer, bits: list[Bit]) -> int:
    """A fresh field wire equal to sum 2^i bits[i]."""
    lc = lc_sum(*((1 << i, b.lc()) for i, b in enumerate(bits)))
    out = tr.alloc()
    tr.enforce(lc, var(ONE), var(out))
    tr.emit(OP_LIN, out, tr.lc_args(lc))
    return out


def xor(tr: Tracer, a: Bit, b: Bit) -> Bit:
    if a.is_const:
        return b if a.value == 0 else ~b
    if b.is_const:
        return a if b.value == 0 else ~a
    if a.slot == b.slot:
        return Bit.const(a.neg != b.neg)
    neg = a.neg != b.neg
    c = tr.alloc()
    # (2a) · b = a + b − c
    tr.enforce(var(a.slot, 2), var(b.slot), {a.slot: 1, b.slot: 1, c: R_MOD - 1})
    tr.emit(OP_XOR, c, [Bit(a.slot).code, Bit(b.slot).code])
    return Bit(c, neg)


def xor3(tr: Tracer, a: Bit, b: Bit, c: Bit) -> Bit:
    return xor(tr, xor(tr, a, b), c)


def and_(tr: Tracer, a: Bit, b: Bit) -> Bit:
    if a.is_const:
        return b if a.value else Bit.const(0)
    if b.is_const:
        return a if b.value else Bit.const(0)
    c = tr.alloc()
    tr.enforce(a.lc(), b.lc(), var(c))
    tr.emit(OP_AND, c, [a.code, b.code])
    return Bit(c)


def ch(tr: Tracer, e: Bit, f: Bit, g: Bit) -> Bit:
    """e ? f : g, one constraint: e · (f − g) = out − g."""
    if e.is_const:
        return f if e.value else g
    if f == g:
        return f
    out = tr.alloc()
    tr.enforce(e.lc(), lc_sum((1, f.lc()), (-1, g.lc())), lc_sum((1, var(out)), (-1, g.lc())))
    tr.emit(OP_CH, out, [e.code, f.code, g.code])
    return Bit(out)


def maj(tr: Tracer, a: Bit, b: Bit, c: Bit) -> Bit:
    """majority(a, b, c) = bc + a (b + c − 2bc): two constraints (one for bc)."""
    if a.is_const and b.is_const and c.is_const:
        return Bit.const(a.value + b.value + c.value >= 2)
    bc = and_(tr, b, c)
    out = tr.alloc()
    tr.enforce(
        a.lc(),
        lc_sum((1, b.lc()), (1, c.lc()), (-2, bc.lc())),
        lc_sum((1, var(out)), (-1, bc.lc())),
    )
    tr.emit(OP_MAJ, out, [a.code, b.code, c.code])
    return Bit(out)


def const_word(x: int) -> Word:
    return [Bit.const((x >> i) & 1) for i in range(32)]


def add_words(tr: Tracer, words: list[Word], k: int = 0) -> Word:
    """(k + sum words) mod 2^32: the sum is unpacked into fresh bits (carries included)."""
    if not 0 <= k < 1 << 32:
        raise ValueError("add_words: the constant must be a 32-bit value")
    if all(b.is_const for w in words for b in w):
        total = k + sum(sum(b.value << i for i, b in enumerate(w)) for w in words)
        return const_word(total & 0xFFFFFFFF)
    nbits = (k + len(words) * 0xFFFFFFFF).bit_length()
    first = tr.alloc(nbits)
    for i in range(nbits):
        enforce_boolean(tr, first + i)
    summed = lc_sum((k, var(ONE)), *((1 << i, b.lc()) for w in words for i, b in enumerate(w)))
    tr.enforce(lc_sum(*((1 << i, var(first + i)) for i in range(nbits))), var(ONE), summed)
    tr.emit(OP_ADDW, first, [nbits, k, len(words), *(b.code for w in words for b in w)])
    return [Bit(first + i) for i in range(32)]
