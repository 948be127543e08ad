"""Bit-only templates run over up to 64 instances at once, one bit of a uint64 per instance.

Most of a Filecoin C2 witness is SHA-256 (porep-32g: 99 M of 100 M ops are XOR, AND, CH, MAJ
and word additions, about 86 % of the interpreter's time on one thread). Every value such a
template computes is a bit, so a group of instances of the same stage can share one pass over
its ops: each variable becomes a plane (bit l = instance l's value), XOR, AND, CH and MAJ become
one bitwise operation for the whole group, and a word addition a ripple of full adders over the
planes. The ops are decoded once a group instead of once an instance; what is left is reading the
group's inputs from z and writing every bit the template writes back to z, which the interpreter
writes anyway.

Same semantics as the interpreter (engine.circuit.witness._run_instance) for these opcodes: an
operand is 1 where its variable is nonzero, then negated where its code says so; a word addition
keeps the low ``nbits`` bits of the constant plus its words; a variable is written as Montgomery 1
or 0. A template qualifies (:func:`written_locals`) when it has only these opcodes, writes only
its locals, reads no local before writing it, and adds into at most 64 bits.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from engine.circuit.template import OP_ADDW, OP_AND, OP_CH, OP_MAJ, OP_XOR, Template
from kernels.cpu.fr import FR_ONE

LANES = 64
"""Instances a group holds at most: the bits of a uint64."""

_BIT_OPS = (OP_XOR, OP_AND, OP_CH, OP_MAJ, OP_ADDW)
_ONE = np.array(FR_ONE, np.uint64)
_U0 = np.uint64(0)
_U1 = np.uint64(1)
_ALL = np.uint64(0xFFFFFFFFFFFFFFFF)


def _ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The indices of every range [start, start + length), one after the other."""
    ends = np.cumsum(lengths)
    return np.repeat(starts - ends + lengths, lengths) + np.arange(int(ends[-1]) if len(ends) else 0)


def written_locals(t: Template) -> np.ndarray | None:
    """The local slots the template's ops write, ascending, when the template can run sliced;
    None when it cannot (another opcode, a write outside its locals, a local read before any op
    wrote it, a word addition wider than 64 bits)."""
    ops = t.ops
    if not len(ops) or not np.isin(ops[:, 0], _BIT_OPS).all():
        return None
    addw = ops[:, 0] == OP_ADDW
    skip = np.where(addw, 3, 0)  # a word addition's nbits, constant and word count
    nbits = np.where(addw, t.args[ops[:, 2]], 1)
    if nbits.max() > 64:
        return None
    step = np.arange(len(ops))
    reads = t.args[_ranges(ops[:, 2] + skip, ops[:, 3] - skip)] >> 1
    read_by = np.repeat(step, ops[:, 3] - skip)
    writes = _ranges(ops[:, 1], nbits)
    if writes.min() <= t.n_in or writes.max() > t.n_in + t.n_loc:
        return None
    first_write = np.full(1 + t.n_in + t.n_loc, len(ops))
    np.minimum.at(first_write, writes, np.repeat(step, nbits))
    local = reads > t.n_in
    if (first_write[reads[local]] >= read_by[local]).any():
        return None
    return np.unique(writes)


@njit(cache=True, inline="always")
def _operand(planes, c, full):
    """The plane of operand code ``c``: its slot's plane, negated where the code's low bit says."""
    v = planes[c >> 1]
    return v ^ full if c & 1 else v


@njit(cache=True)
def run_sliced(z, known, lanes, n_in, n_loc, in_row, base_at, op0, nops, ops, args, inflat, bases,
               slots, w0, nw, e0, ne):
    """Instances base_at .. base_at + lanes - 1 of one stage (their locals start at
    ``bases[base_at + l]``, their inputs at ``inflat[in_row + l * n_in]``) through the stage's
    ops ``op0 .. op0 + nops - 1``; then the locals it writes (``slots[w0:w0 + nw]``) back: to z,
    or where ``known`` has entries (uint8[num_vars]) each as its 0 or 1 there, and only those
    other stages read (``slots[e0:e0 + ne]``) to z as well."""
    full = _ALL if lanes == LANES else (_U1 << np.uint64(lanes)) - _U1
    planes = np.zeros(1 + n_in + n_loc, np.uint64)
    planes[0] = full  # slot 0: the one
    for lane in range(lanes):
        bit = _U1 << np.uint64(lane)
        row = in_row + lane * n_in
        for s in range(n_in):
            g = inflat[row + s]
            if (z[g, 0] | z[g, 1] | z[g, 2] | z[g, 3]) != _U0:
                planes[1 + s] |= bit
    acc = np.empty(64, np.uint64)
    for k in range(op0, op0 + nops):
        code = ops[k, 0]
        out = ops[k, 1]
        a0 = ops[k, 2]
        if code == 6:  # ADDW: nbits, constant, words, then the words' bits (least significant first)
            nbits = args[a0]
            const = np.uint64(args[a0 + 1])
            words = args[a0 + 2]
            for i in range(nbits):
                acc[i] = full if (const >> np.uint64(i)) & _U1 else _U0
            for wd in range(words):
                p = a0 + 3 + 32 * wd
                carry = _U0
                for i in range(nbits):
                    a = acc[i]
                    if i < 32:
                        b = _operand(planes, args[p + i], full)
                        acc[i] = a ^ b ^ carry
                        carry = (a & b) | (carry & (a ^ b))
                    elif carry == _U0:
                        break
                    else:
                        acc[i] = a ^ carry
                        carry = a & carry
            for i in range(nbits):
                planes[out + i] = acc[i]
        else:
            x = _operand(planes, args[a0], full)
            y = _operand(planes, args[a0 + 1], full)
            if code == 2:  # XOR
                r = x ^ y
            elif code == 3:  # AND
                r = x & y
            else:
                w = _operand(planes, args[a0 + 2], full)
                if code == 4:  # CH: y where x, else w
                    r = (x & y) | ((x ^ full) & w)
                else:  # MAJ
                    r = (x & y) | (x & w) | (y & w)
            planes[out] = r & full
    if len(known):
        for lane in range(lanes):
            lb = np.uint64(lane)
            base = bases[base_at + lane] - 1 - n_in
            for j in range(w0, w0 + nw):
                s = slots[j]
                known[base + s] = np.uint8((planes[s] >> lb) & _U1)
        _to_z(z, planes, lanes, bases, base_at, n_in, slots, e0, ne)
    else:
        _to_z(z, planes, lanes, bases, base_at, n_in, slots, w0, nw)


@njit(cache=True, inline="always")
def _to_z(z, planes, lanes, bases, base_at, n_in, slots, j0, n):
    """Locals ``slots[j0:j0 + n]`` of every lane into z, as Montgomery 1 or 0 (masked, not
    branched on: the bits are random, see engine/circuit/witness.py's _run_instance)."""
    one0, one1, one2, one3 = _ONE[0], _ONE[1], _ONE[2], _ONE[3]
    for lane in range(lanes):
        lb = np.uint64(lane)
        base = bases[base_at + lane] - 1 - n_in
        for j in range(j0, j0 + n):
            s = slots[j]
            g = base + s
            m = _U0 - ((planes[s] >> lb) & _U1)  # all ones for a 1
            z[g, 0] = one0 & m
            z[g, 1] = one1 & m
            z[g, 2] = one2 & m
            z[g, 3] = one3 & m
