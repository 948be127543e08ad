"""bellpepper's booleans, 32-bit words and MultiEq, traced exactly as bellperson synthesizes them.

Filecoin's parameters fix every row of the circuit, so these are not any boolean gadgets: each
op allocates what bellpepper-core 0.2's ``Boolean`` / ``AllocatedBit`` (boolean.rs) and
bellperson 0.27's ``UInt32`` / ``MultiEq`` (uint32.rs, multieq.rs) allocate, in their order, and
enforces their rows with their A, B and C (a boolean is ``(1 - b) * b = 0``, not
``b * (b - 1) = 0``), folding constants only where they fold them. (engine/circuit/bits.py is
sealtop's own cheaper set; it folds ``a xor a`` and writes other rows, so it is not used here.)

A boolean is a :class:`~engine.circuit.template.Bit`: a constant (the one slot), an allocated
bit (``Is``) or its negation (``Not``). A word is 32 of them, least significant first, as
``UInt32.bits`` holds them.
"""

from __future__ import annotations

from engine.circuit.template import (
    LC,
    ONE,
    OP_ADDW,
    OP_AND,
    OP_CH,
    OP_MAJ,
    OP_XOR,
    Bit,
    Tracer,
    lc_sum,
    var,
)
from kernels.constants import R_MOD

Word = list[Bit]
FR_CAPACITY = 254
"""``Scalar::CAPACITY``: the bits a MultiEq constraint or a packed input holds."""

_NEG_ONE = R_MOD - 1


def enforce_bit(tr: Tracer, slot: int) -> None:
    """``AllocatedBit::alloc``'s row: (1 - b) * b = 0."""
    tr.enforce({ONE: 1, slot: _NEG_ONE}, var(slot), {})


def _alloc_op(tr: Tracer, opcode: int, args: list[int]) -> int:
    out = tr.alloc()
    tr.emit(opcode, out, args)
    return out


# ---------------------------------------------------------------- AllocatedBit (boolean.rs)
def _xor_bits(tr: Tracer, a: int, b: int) -> Bit:
    """``AllocatedBit::xor``: (a + a) * b = a + b - c."""
    c = _alloc_op(tr, OP_XOR, [Bit(a).code, Bit(b).code])
    tr.enforce({a: 2}, var(b), {a: 1, b: 1, c: _NEG_ONE} if a != b else {a: 2, c: _NEG_ONE})
    return Bit(c)


def _and_bits(tr: Tracer, a: Bit, b: Bit) -> Bit:
    """``AllocatedBit::and`` (a AND b), ``and_not`` (a AND NOT b) or ``nor`` (NOT a AND NOT b),
    as the operands' negations choose: one allocation, one row with each operand's own lc."""
    c = _alloc_op(tr, OP_AND, [a.code, b.code])
    if a.neg and not b.neg:
        a, b = b, a  # and_not takes the plain operand in A
    tr.enforce(a.lc(), b.lc(), var(c))
    return Bit(c)


# ---------------------------------------------------------------- Boolean (boolean.rs)
def xor(tr: Tracer, a: Bit, b: Bit) -> Bit:
    """``Boolean::xor``."""
    if a.is_const:
        return b if a.value == 0 else ~b
    if b.is_const:
        return a if b.value == 0 else ~a
    if a.neg and not b.neg:
        # (Not a, Is b) is xor(Is b, Is a).not(): the plain operand is AllocatedBit::xor's first,
        # so the row is (b + b) * a = b + a - c, not (a + a) * b
        return ~_xor_bits(tr, b.slot, a.slot)
    out = _xor_bits(tr, a.slot, b.slot)
    return ~out if a.neg != b.neg else out


def and_(tr: Tracer, a: Bit, b: Bit) -> Bit:
    """``Boolean::and``."""
    if (a.is_const and a.value == 0) or (b.is_const and b.value == 0):
        return Bit.const(0)
    if a.is_const:
        return b
    if b.is_const:
        return a
    return _and_bits(tr, a, b)


def ch(tr: Tracer, a: Bit, b: Bit, c: Bit) -> Bit:
    """``Boolean::sha256_ch``: (a and b) xor ((not a) and c), i.e. a ? b : c."""
    if a.is_const and b.is_const and c.is_const:
        return Bit.const(b.value if a.value else c.value)
    if a.is_const and a.value == 0:
        return c
    if b.is_const and b.value == 0:
        return and_(tr, ~a, c)
    if c.is_const and c.value == 0:
        return and_(tr, a, b)
    if c.is_const:  # true
        return ~and_(tr, a, ~b)
    if b.is_const:  # true
        return ~and_(tr, ~a, ~c)
    out = _alloc_op(tr, OP_CH, [a.code, b.code, c.code])
    # a (b - c) = ch - c, with A = b - c and B = a
    tr.enforce(lc_sum((1, b.lc()), (-1, c.lc())), a.lc(), lc_sum((1, var(out)), (-1, c.lc())))
    return Bit(out)


def maj(tr: Tracer, a: Bit, b: Bit, c: Bit) -> Bit:
    """``Boolean::sha256_maj``: the majority of a, b and c."""
    if a.is_const and b.is_const and c.is_const:
        return Bit.const(int(a.value + b.value + c.value >= 2))
    if a.is_const and a.value == 0:
        return and_(tr, b, c)
    if b.is_const and b.value == 0:
        return and_(tr, a, c)
    if c.is_const and c.value == 0:
        return and_(tr, a, b)
    if c.is_const:
        return ~and_(tr, ~a, ~b)
    if b.is_const:
        return ~and_(tr, ~a, ~c)
    if a.is_const:
        return ~and_(tr, ~b, ~c)
    out = _alloc_op(tr, OP_MAJ, [a.code, b.code, c.code])  # maj first, then "b and c"
    bc = and_(tr, b, c)
    tr.enforce(lc_sum((2, bc.lc()), (-1, b.lc()), (-1, c.lc())), a.lc(),
               lc_sum((1, bc.lc()), (-1, var(out))))
    return Bit(out)


# ---------------------------------------------------------------- UInt32 (uint32.rs)
def const_word(v: int) -> Word:
    return [Bit.const((v >> i) & 1) for i in range(32)]


def word_from_bits_be(bits: list[Bit]) -> Word:
    """``UInt32::from_bits_be``: 32 big-endian bits as a word."""
    return list(reversed(bits))


def rotr(w: Word, by: int) -> Word:
    by %= 32
    return w[by:] + w[:by]


def shr(w: Word, by: int) -> Word:
    by %= 32
    return w[by:] + [Bit.const(0)] * by


def wxor(tr: Tracer, a: Word, b: Word) -> Word:
    return [xor(tr, x, y) for x, y in zip(a, b)]


def wch(tr: Tracer, a: Word, b: Word, c: Word) -> Word:
    return [ch(tr, x, y, z) for x, y, z in zip(a, b, c)]


def wmaj(tr: Tracer, a: Word, b: Word, c: Word) -> Word:
    return [maj(tr, x, y, z) for x, y, z in zip(a, b, c)]


class MultiEq:
    """bellperson's MultiEq: equalities of up to CAPACITY bits batched into one row
    ``lhs * 1 = rhs``, flushed when the next would not fit and when the gadget ends."""

    def __init__(self, tr: Tracer) -> None:
        self.tr = tr
        self.bits_used = 0
        self.lhs: LC = {}
        self.rhs: LC = {}

    def flush(self) -> None:
        self.tr.enforce(self.lhs, var(ONE), self.rhs)
        self.lhs, self.rhs, self.bits_used = {}, {}, 0

    def enforce_equal(self, num_bits: int, lhs: LC, rhs: LC) -> None:
        if FR_CAPACITY <= self.bits_used + num_bits:
            self.flush()
        coeff = 1 << self.bits_used
        self.lhs = lc_sum((1, self.lhs), (coeff, lhs))
        self.rhs = lc_sum((1, self.rhs), (coeff, rhs))
        self.bits_used += num_bits

    def close(self) -> None:
        """The Drop: the last batch's row."""
        if self.bits_used > 0:
            self.flush()


def addmany(tr: Tracer, meq: MultiEq, ops: list[Word]) -> Word:
    """``UInt32::addmany``: the sum mod 2^32 of 2..10 words, its bits (carries included)
    allocated and checked through the MultiEq; all-constant operands fold to a constant."""
    if not 2 <= len(ops) <= 10:
        raise ValueError(f"addmany takes 2 to 10 operands, not {len(ops)}")
    if all(b.is_const for w in ops for b in w):
        total = sum(sum(b.value << i for i, b in enumerate(w)) for w in ops)
        return const_word(total & 0xFFFFFFFF)
    nbits = (len(ops) * 0xFFFFFFFF).bit_length()
    lhs = lc_sum(*((1 << i, b.lc()) for w in ops for i, b in enumerate(w)))
    first = tr.alloc(nbits)
    for i in range(nbits):
        enforce_bit(tr, first + i)
    tr.emit(OP_ADDW, first, [nbits, 0, len(ops), *(b.code for w in ops for b in w)])
    meq.enforce_equal(nbits, lhs, {first + i: 1 << i for i in range(nbits)})
    return [Bit(first + i) for i in range(32)]
