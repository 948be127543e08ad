"""Number and bit gadgets of Filecoin's circuit over allocated numbers, each one template call in
bellperson's order: ``AllocatedNum::to_bits_le`` and ``inputize`` (bellpepper-core num.rs),
``multipack::pack_bits`` and ``pack_into_inputs`` (bellperson multipack.rs), the
``constraint::equal`` and ``constraint::add`` rows (storage-proofs-core constraint.rs, the latter
being ``encode``) and ``AllocatedBit::alloc`` of a supplied bit (a path position, a UInt64 bit).
"""

from __future__ import annotations

from engine.c2.boolean import FR_CAPACITY, enforce_bit
from engine.c2.cs import Source, Synth
from engine.circuit.template import OP_LIN, OP_UNPACK, Bit, Tracer, lc_sum, var

FR_NUM_BITS = 255
"""``PrimeField::NUM_BITS``: the bits ``to_bits_le`` allocates."""


def _to_bits_le_body(tr: Tracer, ins: list[Bit]) -> list[Bit]:
    n = ins[0].slot
    first = tr.alloc(FR_NUM_BITS)
    for i in range(FR_NUM_BITS):
        enforce_bit(tr, first + i)
    tr.emit(OP_UNPACK, first, [FR_NUM_BITS, *tr.lc_args(var(n))])
    # 0 * 0 = sum 2^i b_i - num
    tr.enforce({}, {}, lc_sum(*((1 << i, var(first + i)) for i in range(FR_NUM_BITS)), (-1, var(n))))
    return [Bit(first + i) for i in range(FR_NUM_BITS)]


def to_bits_le(s: Synth, n: int) -> list[Bit]:
    """``AllocatedNum::to_bits_le``: 255 allocated bits, least significant first, and one
    unpacking row (which holds modulo r only: a non-canonical decomposition would satisfy it)."""
    return s.call("to_bits_le", [Bit(n)], _to_bits_le_body)


def _pack_body(tr: Tracer, bits: list[Bit]) -> list[Bit]:
    lc = lc_sum(*((1 << i, b.lc()) for i, b in enumerate(bits)))
    out = tr.alloc()
    tr.emit(OP_LIN, out, tr.lc_args(lc))
    tr.enforce(lc, var(0), var(out))
    return [Bit(out)]


def pack_bits(s: Synth, bits: list[Bit]) -> int:
    """``multipack::pack_bits``: the first CAPACITY bits as one allocated number."""
    (out,) = s.call("pack_bits", bits[:FR_CAPACITY], _pack_body)
    return out.slot


def _packing_row(tr: Tracer, ins: list[Bit]) -> list[Bit]:
    *bits, public = ins
    tr.enforce(lc_sum(*((1 << i, b.lc()) for i, b in enumerate(bits))), var(0), var(public.slot))
    return []


def pack_into_inputs(s: Synth, bits: list[Bit], sources: list[Source]) -> None:
    """``multipack::pack_into_inputs``: per CAPACITY-bit chunk one public input and the row
    ``(sum 2^i bit_i) * 1 = input``. ``sources`` names each chunk's input."""
    chunks = [bits[i : i + FR_CAPACITY] for i in range(0, len(bits), FR_CAPACITY)]
    if len(chunks) != len(sources):
        raise ValueError(f"{len(bits)} bits pack into {len(chunks)} inputs, {len(sources)} sources given")
    for chunk, src in zip(chunks, sources):
        public = s.alloc_input(src)
        s.call("pack_input", [*chunk, Bit(public)], _packing_row)


def _inputize_row(tr: Tracer, ins: list[Bit]) -> list[Bit]:
    n, public = ins
    tr.enforce(var(public.slot), var(0), var(n.slot))
    return []


def inputize(s: Synth, n: int, source: Source) -> None:
    """``AllocatedNum::inputize``: a public input and the row input * 1 = num."""
    public = s.alloc_input(source)
    s.call("inputize", [Bit(n), Bit(public)], _inputize_row)


def _equal_row(tr: Tracer, ins: list[Bit]) -> list[Bit]:
    a, b = ins
    tr.enforce(var(a.slot), var(0), var(b.slot))
    return []


def equal(s: Synth, a: int, b: int) -> None:
    """``constraint::equal``: a * 1 = b."""
    s.call("equal", [Bit(a), Bit(b)], _equal_row)


def _add_body(tr: Tracer, ins: list[Bit]) -> list[Bit]:
    a, b = ins
    out = tr.alloc()
    tr.emit(OP_LIN, out, tr.lc_args({a.slot: 1, b.slot: 1} if a.slot != b.slot else {a.slot: 2}))
    tr.enforce(lc_sum((1, var(a.slot)), (1, var(b.slot))), var(0), var(out))
    return [Bit(out)]


def add(s: Synth, a: int, b: int) -> int:
    """``constraint::add``: an allocated a + b and the row (a + b) * 1 = sum (Filecoin's
    ``encode`` of a replica node: key + value)."""
    (out,) = s.call("add", [Bit(a), Bit(b)], _add_body)
    return out.slot


def _bit_row(tr: Tracer, ins: list[Bit]) -> list[Bit]:
    enforce_bit(tr, ins[0].slot)
    return []


def alloc_bit(s: Synth, source: Source) -> Bit:
    """``AllocatedBit::alloc`` of a supplied bit: the variable, then its boolean row."""
    v = s.alloc(source)
    s.call("bit", [Bit(v)], _bit_row)
    return Bit(v)


def uint64_alloc(s: Synth, sources: list[Source]) -> list[Bit]:
    """``UInt64::alloc``: 64 supplied bits, least significant first."""
    if len(sources) != 64:
        raise ValueError("a UInt64 is 64 bits")
    return [alloc_bit(s, src) for src in sources]
