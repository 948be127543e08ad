"""Gadget templates: a gadget traced once into a small constraint system over local slots.

A template has slot 0 (the constant one), ``n_in`` input slots (1..n_in) and ``n_loc`` local
slots after them. Its constraints are rows of linear combinations over those slots, and its
*witness program* is a list of operations that compute every local slot from the inputs. The
circuit builder (builder.py) replicates a template as arrays: instance i of a placement maps its
input slots through a table and its local slots to ``base + i * n_loc + (slot - 1 - n_in)``, so a
gadget is never re-traced per instance. The witness interpreters (witness.py) run the same
program for every instance.

Bits are written as :class:`Bit`: a slot and a negation flag; the constant bits are the one
slot, negated or not. Linear combinations are dicts {slot: coefficient mod r}.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from kernels.constants import R_MOD
from kernels.cpu.convert import to_mont_fr

ONE = 0  # slot of the constant one (global variable 0 as well)

# Witness-program opcodes. Every op is (opcode, out, arg_start, arg_len) over an args pool.
OP_LIN = 0  # out = sum c_k * v_k                 args: (slot, const_idx)*
OP_MUL = 1  # out = L1 * L2 + L3                  args: n1, n2, n3, (slot, const_idx)*
OP_XOR = 2  # out = a ^ b (bits)                  args: bit codes a, b
OP_AND = 3  # out = a & b                         args: a, b
OP_CH = 4  # out = e ? f : g                      args: e, f, g
OP_MAJ = 5  # out = majority(a, b, c)             args: a, b, c
OP_ADDW = 6  # out.. = bits of (K + sum words)    args: nbits, K, nwords, 32*nwords bit codes
OP_UNPACK = 7  # out.. = bits of L (canonical)    args: nbits, (slot, const_idx)*
OP_POSEIDON = 8  # out.. = S-box wires, then hash args: arity, input slots

LC = dict[int, int]


@dataclass(frozen=True)
class Bit:
    """A boolean wire: ``slot`` (possibly the one slot) optionally negated (1 - slot)."""

    slot: int
    neg: bool = False

    @staticmethod
    def const(v: int | bool) -> Bit:
        return Bit(ONE, not bool(v))

    @property
    def is_const(self) -> bool:
        return self.slot == ONE

    @property
    def value(self) -> int:
        """The value of a constant bit."""
        return int(not self.neg)

    @property
    def code(self) -> int:
        return self.slot * 2 + int(self.neg)

    def __invert__(self) -> Bit:
        return Bit(self.slot, not self.neg)

    def lc(self) -> LC:
        if self.slot == ONE:
            return {} if self.neg else {ONE: 1}
        return {ONE: 1, self.slot: R_MOD - 1} if self.neg else {self.slot: 1}


def lc_sum(*terms: tuple[int, LC]) -> LC:
    """sum k * lc over (k, lc) pairs, reduced mod r, zero terms dropped."""
    out: LC = {}
    for k, lc in terms:
        for s, c in lc.items():
            out[s] = (out.get(s, 0) + k * c) % R_MOD
    return {s: c for s, c in out.items() if c}


def _normal(lc: LC) -> LC:
    """``lc`` with coefficients reduced mod r and zero terms dropped (one pass, no merging:
    a dict holds each slot once)."""
    out: LC = {}
    for s, c in lc.items():
        c %= R_MOD
        if c:
            out[s] = c
    return out


def var(slot: int, k: int = 1) -> LC:
    return {slot: k % R_MOD}


@dataclass(frozen=True)
class SparseRows:
    """Rows of one matrix of a template: CSR over local slots, Montgomery coefficients."""

    ptr: np.ndarray  # int64[rows + 1]
    slot: np.ndarray  # int64[nnz]
    coef: np.ndarray  # uint64[nnz, 4]


@dataclass(frozen=True)
class Template:
    """A traced gadget: constraints and witness program over local slots."""

    name: str
    n_in: int
    n_loc: int
    outputs: tuple[int, ...]  # slots of the named outputs, in order
    A: SparseRows
    B: SparseRows
    C: SparseRows
    ops: np.ndarray  # int64[n_ops, 4]
    args: np.ndarray  # int64[n_args]
    consts: np.ndarray  # uint64[n_consts, 4] Montgomery, for OP_LIN / OP_MUL / OP_UNPACK

    @property
    def n_rows(self) -> int:
        return len(self.A.ptr) - 1

    @property
    def nnz(self) -> int:
        return int(self.A.ptr[-1] + self.B.ptr[-1] + self.C.ptr[-1])


def _mont_rows(coefs: list[int]) -> np.ndarray:
    """Montgomery rows of ``coefs``, converting each distinct value once (a SHA-256 gadget's
    millions of coefficients take a handful of values: 1, −1, powers of two)."""
    if not coefs:
        return np.zeros((0, 4), np.uint64)
    uniq = {c: i for i, c in enumerate(dict.fromkeys(coefs))}
    table = to_mont_fr(list(uniq))
    return table[np.fromiter((uniq[c] for c in coefs), np.int64, len(coefs))]


@dataclass
class Tracer:
    """Records the constraints and the witness program of one gadget."""

    name: str
    n_in: int
    n_slots: int = 0
    rows: list[tuple[LC, LC, LC]] = field(default_factory=list)
    ops: list[tuple[int, int, list[int]]] = field(default_factory=list)
    const_ids: dict[int, int] = field(default_factory=dict)
    outputs: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.n_in < 0:
            raise ValueError("a template needs a non-negative number of inputs")
        self.n_slots = 1 + self.n_in

    def input(self, i: int) -> int:
        if not 0 <= i < self.n_in:
            raise ValueError(f"template {self.name}: input {i} out of range")
        return 1 + i

    def alloc(self, n: int = 1) -> int:
        """n fresh local slots; returns the first."""
        first = self.n_slots
        self.n_slots += n
        return first

    def enforce(self, a: LC, b: LC, c: LC) -> None:
        self.rows.append((_normal(a), _normal(b), _normal(c)))

    def const(self, c: int) -> int:
        c %= R_MOD
        if c not in self.const_ids:
            self.const_ids[c] = len(self.const_ids)
        return self.const_ids[c]

    def lc_args(self, lc: LC) -> list[int]:
        out: list[int] = []
        for s, c in lc.items():
            out += [s, self.const(c)]
        return out

    def emit(self, opcode: int, out: int, args: list[int]) -> None:
        self.ops.append((opcode, out, [int(a) for a in args]))

    def output(self, slot: int) -> None:
        if slot <= self.n_in:
            raise ValueError(f"template {self.name}: an output must be a local slot")
        self.outputs.append(slot)

    def finish(self) -> Template:
        mats = []
        for m in range(3):
            ptr = [0]
            slots: list[int] = []
            coefs: list[int] = []
            for row in self.rows:
                for s, c in sorted(row[m].items()):
                    slots.append(s)
                    coefs.append(c)
                ptr.append(len(slots))
            mats.append(SparseRows(np.array(ptr, np.int64), np.array(slots, np.int64), _mont_rows(coefs)))
        ops = np.zeros((len(self.ops), 4), np.int64)
        args: list[int] = []
        for k, (code, out, a) in enumerate(self.ops):
            ops[k] = (code, out, len(args), len(a))
            args += a
        consts = sorted(self.const_ids, key=self.const_ids.__getitem__)
        return Template(
            name=self.name,
            n_in=self.n_in,
            n_loc=self.n_slots - 1 - self.n_in,
            outputs=tuple(self.outputs),
            A=mats[0],
            B=mats[1],
            C=mats[2],
            ops=ops,
            args=np.array(args, np.int64),
            consts=to_mont_fr(consts) if consts else np.zeros((0, 4), np.uint64),
        )
