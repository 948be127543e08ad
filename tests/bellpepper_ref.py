"""An oracle for engine/c2's gadgets: bellpepper-core 0.2.1's and bellperson 0.27's gadgets, and
the SHA-256 gadgets of rust-fil-proofs, re-derived from the Rust one function at a time against a
plain recording constraint system (Python ints, nothing from engine/c2 or engine/circuit).

It keeps what bellperson's ``TestConstraintSystem`` keeps: every allocation in order (inputs and
aux apart, ONE as input 0) with its value as the Rust computes it, and every ``enforce`` as three
linear combinations. The tests build the same circuit through engine/c2's Synth and compare
variable for variable, row for row and value for value.

It is written as a mirror of the Rust's control flow, so that a deviation in engine/c2 shows up
as a different row: ``Boolean`` is Is / Not / Constant, the ``match`` arms are tried in the
Rust's order (or-patterns left alternative first), ``MultiEq`` is flushed on capacity and on drop.
Sources: bellpepper-core src/gadgets/{boolean.rs, num.rs}; bellperson src/gadgets/{uint32.rs,
multieq.rs, sha256.rs, multipack.rs}; rust-fil-proofs storage-proofs-core src/{util.rs,
gadgets/uint64.rs}, filecoin-hashers src/sha256.rs, storage-proofs-porep src/stacked/circuit/
create_label.rs.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from kernels.constants import R_MOD
from kernels.cpu.convert import to_mont_fr

CAPACITY = 254  # Fr::CAPACITY
NUM_BITS = 255  # Fr::NUM_BITS

Var = tuple[str, int]  # ("i", k): input k (ONE is input 0); ("a", k): aux k
ONE: Var = ("i", 0)
Lc = dict[Var, int]


def lc(*terms: tuple[int, Var]) -> Lc:
    """The linear combination sum coeff * var, merged per variable (bellpepper's Indexer)."""
    out: Lc = {}
    for k, v in terms:
        out[v] = (out.get(v, 0) + k) % R_MOD
    return out


def lc_plus(a: Lc, b: Lc, k: int = 1) -> Lc:
    """a + k * b."""
    return lc_acc(dict(a), b, k)


def lc_acc(acc: Lc, b: Lc, k: int = 1) -> Lc:
    """acc += k * b, in place (a sum built term by term, as ``lc = lc + ...`` builds it)."""
    for v, c in b.items():
        acc[v] = (acc.get(v, 0) + k * c) % R_MOD
    return acc


@dataclass
class RefCS:
    """Allocations and rows in bellperson's order, with their values."""

    inputs: list[int] = field(default_factory=lambda: [1])
    aux: list[int] = field(default_factory=list)
    rows: list[tuple[Lc, Lc, Lc]] = field(default_factory=list)

    def alloc(self, value: int) -> Var:
        self.aux.append(value % R_MOD)
        return ("a", len(self.aux) - 1)

    def alloc_input(self, value: int) -> Var:
        self.inputs.append(value % R_MOD)
        return ("i", len(self.inputs) - 1)

    def enforce(self, a: Lc, b: Lc, c: Lc) -> None:
        self.rows.append((a, b, c))

    def value(self, v: Var) -> int:
        return self.inputs[v[1]] if v[0] == "i" else self.aux[v[1]]

    def satisfied(self) -> bool:
        def ev(x: Lc) -> int:
            return sum(c * self.value(v) for v, c in x.items()) % R_MOD

        return all(ev(a) * ev(b) % R_MOD == ev(c) for a, b, c in self.rows)


# ---------------------------------------------------------------- boolean.rs: AllocatedBit


@dataclass(frozen=True)
class ABit:
    var: Var
    value: bool


def abit_alloc(cs: RefCS, value: bool) -> ABit:
    v = cs.alloc(int(value))
    cs.enforce(lc((1, ONE), (-1, v)), lc((1, v)), {})
    return ABit(v, value)


def abit_xor(cs: RefCS, a: ABit, b: ABit) -> ABit:
    value = a.value != b.value
    c = cs.alloc(int(value))
    cs.enforce(lc((1, a.var), (1, a.var)), lc((1, b.var)), lc((1, a.var), (1, b.var), (-1, c)))
    return ABit(c, value)


def abit_and(cs: RefCS, a: ABit, b: ABit) -> ABit:
    value = a.value and b.value
    c = cs.alloc(int(value))
    cs.enforce(lc((1, a.var)), lc((1, b.var)), lc((1, c)))
    return ABit(c, value)


def abit_and_not(cs: RefCS, a: ABit, b: ABit) -> ABit:
    value = a.value and not b.value
    c = cs.alloc(int(value))
    cs.enforce(lc((1, a.var)), lc((1, ONE), (-1, b.var)), lc((1, c)))
    return ABit(c, value)


def abit_nor(cs: RefCS, a: ABit, b: ABit) -> ABit:
    value = not a.value and not b.value
    c = cs.alloc(int(value))
    cs.enforce(lc((1, ONE), (-1, a.var)), lc((1, ONE), (-1, b.var)), lc((1, c)))
    return ABit(c, value)


# ---------------------------------------------------------------- boolean.rs: Boolean


@dataclass(frozen=True)
class Boolean:
    kind: str  # "is", "not", "const"
    bit: ABit | None = None
    const: bool = False

    @staticmethod
    def constant(b: bool | int) -> Boolean:
        return Boolean("const", None, bool(b))

    @staticmethod
    def is_(b: ABit) -> Boolean:
        return Boolean("is", b)

    def value(self) -> bool:
        if self.kind == "const":
            return self.const
        assert self.bit is not None
        return self.bit.value if self.kind == "is" else not self.bit.value

    def lc(self, coeff: int = 1) -> Lc:
        if self.kind == "const":
            return lc((coeff, ONE)) if self.const else {}
        assert self.bit is not None
        if self.kind == "is":
            return lc((coeff, self.bit.var))
        return lc((coeff, ONE), (-coeff, self.bit.var))

    def not_(self) -> Boolean:
        if self.kind == "const":
            return Boolean.constant(not self.const)
        return Boolean("not" if self.kind == "is" else "is", self.bit)

    def is_false(self) -> bool:
        return self.kind == "const" and not self.const

    def is_true(self) -> bool:
        return self.kind == "const" and self.const


def b_xor(cs: RefCS, a: Boolean, b: Boolean) -> Boolean:
    if a.is_false():
        return b
    if b.is_false():
        return a
    if a.is_true():
        return b.not_()
    if b.is_true():
        return a.not_()
    assert a.bit is not None and b.bit is not None
    if a.kind == "is" and b.kind == "not":
        return b_xor(cs, a, b.not_()).not_()
    if a.kind == "not" and b.kind == "is":
        return b_xor(cs, b, a.not_()).not_()
    return Boolean.is_(abit_xor(cs, a.bit, b.bit))  # Is/Is or Not/Not


def b_and(cs: RefCS, a: Boolean, b: Boolean) -> Boolean:
    if a.is_false() or b.is_false():
        return Boolean.constant(False)
    if a.is_true():
        return b
    if b.is_true():
        return a
    assert a.bit is not None and b.bit is not None
    if a.kind == "is" and b.kind == "not":
        return Boolean.is_(abit_and_not(cs, a.bit, b.bit))
    if a.kind == "not" and b.kind == "is":
        return Boolean.is_(abit_and_not(cs, b.bit, a.bit))
    if a.kind == "not":
        return Boolean.is_(abit_nor(cs, a.bit, b.bit))
    return Boolean.is_(abit_and(cs, a.bit, b.bit))


def b_ch(cs: RefCS, a: Boolean, b: Boolean, c: Boolean) -> Boolean:
    value = (a.value() and b.value()) != ((not a.value()) and c.value())
    consts = [x.kind == "const" for x in (a, b, c)]
    if all(consts):
        return Boolean.constant(value)
    if a.is_false():
        return c
    if b.is_false():
        return b_and(cs, a.not_(), c)
    if c.is_false():
        return b_and(cs, a, b)
    if c.is_true():
        return b_and(cs, a, b.not_()).not_()
    if b.is_true():
        return b_and(cs, a.not_(), c.not_()).not_()
    ch = cs.alloc(int(value))
    cs.enforce(lc_plus(b.lc(), c.lc(), -1), a.lc(), lc_plus(lc((1, ch)), c.lc(), -1))
    return Boolean.is_(ABit(ch, value))


def b_maj(cs: RefCS, a: Boolean, b: Boolean, c: Boolean) -> Boolean:
    av, bv, cv = a.value(), b.value(), c.value()
    value = bool((av & bv) ^ (av & cv) ^ (bv & cv))
    if all(x.kind == "const" for x in (a, b, c)):
        return Boolean.constant(value)
    if a.is_false():
        return b_and(cs, b, c)
    if b.is_false():
        return b_and(cs, a, c)
    if c.is_false():
        return b_and(cs, a, b)
    if c.is_true():
        return b_and(cs, a.not_(), b.not_()).not_()
    if b.is_true():
        return b_and(cs, a.not_(), c.not_()).not_()
    if a.is_true():
        return b_and(cs, b.not_(), c.not_()).not_()
    maj = cs.alloc(int(value))
    bc = b_and(cs, b, c)
    cs.enforce(lc_plus(lc_plus(lc_plus(bc.lc(), bc.lc()), b.lc(), -1), c.lc(), -1), a.lc(),
               lc_plus(bc.lc(), lc((1, maj)), -1))
    return Boolean.is_(ABit(maj, value))


# ---------------------------------------------------------------- uint32.rs and multieq.rs


@dataclass
class MultiEq:
    cs: RefCS
    bits_used: int = 0
    lhs: Lc = field(default_factory=dict)
    rhs: Lc = field(default_factory=dict)

    def accumulate(self) -> None:
        self.cs.enforce(self.lhs, lc((1, ONE)), self.rhs)
        self.lhs, self.rhs, self.bits_used = {}, {}, 0

    def enforce_equal(self, num_bits: int, lhs: Lc, rhs: Lc) -> None:
        if CAPACITY <= self.bits_used + num_bits:
            self.accumulate()
        assert CAPACITY > self.bits_used + num_bits
        coeff = pow(2, self.bits_used, R_MOD)
        lc_acc(self.lhs, lhs, coeff)
        lc_acc(self.rhs, rhs, coeff)
        self.bits_used += num_bits

    def drop(self) -> None:
        if self.bits_used > 0:
            self.accumulate()


@dataclass
class UInt32:
    bits: list[Boolean]  # least significant first
    value: int

    @staticmethod
    def constant(v: int) -> UInt32:
        return UInt32([Boolean.constant((v >> i) & 1) for i in range(32)], v)

    @staticmethod
    def from_bits_be(bits: list[Boolean]) -> UInt32:
        assert len(bits) == 32
        v = 0
        for b in bits:
            v = (v << 1) | int(b.value())
        return UInt32(list(reversed(bits)), v)

    def into_bits_be(self) -> list[Boolean]:
        return list(reversed(self.bits))

    def rotr(self, by: int) -> UInt32:
        by %= 32
        bits = (self.bits[by:] + self.bits)[:32]
        return UInt32(bits, ((self.value >> by) | (self.value << (32 - by))) & 0xFFFFFFFF)

    def shr(self, by: int) -> UInt32:
        by %= 32
        bits = self.bits[by:] + [Boolean.constant(False)] * by
        return UInt32(bits, self.value >> by)

    def xor(self, cs: RefCS, other: UInt32) -> UInt32:
        bits = [b_xor(cs, x, y) for x, y in zip(self.bits, other.bits)]
        return UInt32(bits, self.value ^ other.value)


def u32_ch(cs: RefCS, a: UInt32, b: UInt32, c: UInt32) -> UInt32:
    v = (a.value & b.value) ^ (~a.value & 0xFFFFFFFF & c.value)
    return UInt32([b_ch(cs, x, y, z) for x, y, z in zip(a.bits, b.bits, c.bits)], v)


def u32_maj(cs: RefCS, a: UInt32, b: UInt32, c: UInt32) -> UInt32:
    v = (a.value & b.value) ^ (a.value & c.value) ^ (b.value & c.value)
    return UInt32([b_maj(cs, x, y, z) for x, y, z in zip(a.bits, b.bits, c.bits)], v)


def addmany(cs: RefCS, meq: MultiEq, operands: list[UInt32]) -> UInt32:
    assert 2 <= len(operands) <= 10
    max_value = len(operands) * 0xFFFFFFFF
    result = 0
    total: Lc = {}
    all_constants = True
    for op in operands:
        result += op.value
        for i, bit in enumerate(op.bits):
            lc_acc(total, bit.lc(1 << i))
            all_constants = all_constants and bit.kind == "const"
    if all_constants:
        return UInt32.constant(result & 0xFFFFFFFF)
    bits: list[Boolean] = []
    result_lc: Lc = {}
    i = 0
    while max_value:
        b = abit_alloc(cs, bool((result >> i) & 1))
        lc_acc(result_lc, lc((1 << i, b.var)))
        bits.append(Boolean.is_(b))
        max_value >>= 1
        i += 1
    meq.enforce_equal(i, total, result_lc)
    return UInt32(bits[:32], result & 0xFFFFFFFF)


# ---------------------------------------------------------------- sha256.rs

K = (
    0x428A2F98, 0x71374491, 0xB5C0FBCF, 0xE9B5DBA5, 0x3956C25B, 0x59F111F1, 0x923F82A4, 0xAB1C5ED5,
    0xD807AA98, 0x12835B01, 0x243185BE, 0x550C7DC3, 0x72BE5D74, 0x80DEB1FE, 0x9BDC06A7, 0xC19BF174,
    0xE49B69C1, 0xEFBE4786, 0x0FC19DC6, 0x240CA1CC, 0x2DE92C6F, 0x4A7484AA, 0x5CB0A9DC, 0x76F988DA,
    0x983E5152, 0xA831C66D, 0xB00327C8, 0xBF597FC7, 0xC6E00BF3, 0xD5A79147, 0x06CA6351, 0x14292967,
    0x27B70A85, 0x2E1B2138, 0x4D2C6DFC, 0x53380D13, 0x650A7354, 0x766A0ABB, 0x81C2C92E, 0x92722C85,
    0xA2BFE8A1, 0xA81A664B, 0xC24B8B70, 0xC76C51A3, 0xD192E819, 0xD6990624, 0xF40E3585, 0x106AA070,
    0x19A4C116, 0x1E376C08, 0x2748774C, 0x34B0BCB5, 0x391C0CB3, 0x4ED8AA4A, 0x5B9CCA4F, 0x682E6FF3,
    0x748F82EE, 0x78A5636F, 0x84C87814, 0x8CC70208, 0x90BEFFFA, 0xA4506CEB, 0xBEF9A3F7, 0xC67178F2,
)  # fmt: skip
IV = (0x6A09E667, 0xBB67AE85, 0x3C6EF372, 0xA54FF53A, 0x510E527F, 0x9B05688C, 0x1F83D9AB, 0x5BE0CD19)


def compression(cs: RefCS, block: list[Boolean], current: list[UInt32]) -> list[UInt32]:
    assert len(block) == 512 and len(current) == 8
    w = [UInt32.from_bits_be(block[32 * i : 32 * i + 32]) for i in range(16)]
    meq = MultiEq(cs)
    for i in range(16, 64):
        s0 = w[i - 15].rotr(7).xor(cs, w[i - 15].rotr(18)).xor(cs, w[i - 15].shr(3))
        s1 = w[i - 2].rotr(17).xor(cs, w[i - 2].rotr(19)).xor(cs, w[i - 2].shr(10))
        w.append(addmany(cs, meq, [w[i - 16], s0, w[i - 7], s1]))

    # ("concrete", word) or ("deferred", operands): Maybe in sha256.rs
    def compute(m: tuple[str, object], others: list[UInt32]) -> UInt32:
        kind, x = m
        if kind == "concrete":
            assert isinstance(x, UInt32)
            return x
        assert isinstance(x, list)
        return addmany(cs, meq, x + others)

    a: tuple[str, object] = ("concrete", current[0])
    b, c, d = current[1], current[2], current[3]
    e: tuple[str, object] = ("concrete", current[4])
    f, g, h = current[5], current[6], current[7]
    for i in range(64):
        new_e = compute(e, [])
        s1 = new_e.rotr(6).xor(cs, new_e.rotr(11)).xor(cs, new_e.rotr(25))
        ch = u32_ch(cs, new_e, f, g)
        temp1 = [h, s1, ch, UInt32.constant(K[i]), w[i]]
        new_a = compute(a, [])
        s0 = new_a.rotr(2).xor(cs, new_a.rotr(13)).xor(cs, new_a.rotr(22))
        maj = u32_maj(cs, new_a, b, c)
        h = g
        g = f
        f = new_e
        e = ("deferred", temp1 + [d])
        d = c
        c = b
        b = new_a
        a = ("deferred", temp1 + [s0, maj])
    out = [
        compute(a, [current[0]]),
        addmany(cs, meq, [current[1], b]),
        addmany(cs, meq, [current[2], c]),
        addmany(cs, meq, [current[3], d]),
        compute(e, [current[4]]),
        addmany(cs, meq, [current[5], f]),
        addmany(cs, meq, [current[6], g]),
        addmany(cs, meq, [current[7], h]),
    ]
    meq.drop()
    return out


def sha256(cs: RefCS, message: list[Boolean]) -> list[Boolean]:
    assert len(message) % 8 == 0
    padded = list(message) + [Boolean.constant(True)]
    while (len(padded) + 64) % 512:
        padded.append(Boolean.constant(False))
    padded += [Boolean.constant((len(message) >> i) & 1) for i in range(63, -1, -1)]
    cur = [UInt32.constant(v) for v in IV]
    for off in range(0, len(padded), 512):
        cur = compression(cs, padded[off : off + 512], cur)
    return [b for word in cur for b in word.into_bits_be()]


# ---------------------------------------------------------------- num.rs and multipack.rs


@dataclass(frozen=True)
class Num:
    var: Var
    value: int


def num_alloc(cs: RefCS, value: int) -> Num:
    return Num(cs.alloc(value), value % R_MOD)


def inputize(cs: RefCS, n: Num) -> None:
    inp = cs.alloc_input(n.value)
    cs.enforce(lc((1, inp)), lc((1, ONE)), lc((1, n.var)))


def to_bits_le(cs: RefCS, n: Num) -> list[Boolean]:
    bits = [abit_alloc(cs, bool((n.value >> i) & 1)) for i in range(NUM_BITS)]
    unpack = lc(*((1 << i, b.var) for i, b in enumerate(bits)), (-1, n.var))
    cs.enforce({}, {}, unpack)
    return [Boolean.is_(b) for b in bits]


def _packed(bits: list[Boolean]) -> tuple[Lc, int]:
    total: Lc = {}
    value = 0
    for i, bit in enumerate(bits):
        lc_acc(total, bit.lc(1 << i))
        value += int(bit.value()) << i
    return total, value


def pack_bits(cs: RefCS, bits: list[Boolean]) -> Num:
    total, value = _packed(bits[:CAPACITY])
    out = num_alloc(cs, value)
    cs.enforce(total, lc((1, ONE)), lc((1, out.var)))
    return out


def pack_into_inputs(cs: RefCS, bits: list[Boolean]) -> None:
    for k in range(0, len(bits), CAPACITY):
        total, value = _packed(bits[k : k + CAPACITY])
        inp = cs.alloc_input(value)
        cs.enforce(total, lc((1, ONE)), lc((1, inp)))


def equal(cs: RefCS, a: Num, b: Num) -> None:
    cs.enforce(lc((1, a.var)), lc((1, ONE)), lc((1, b.var)))


# ---------------------------------------------------------------- rust-fil-proofs


def reverse_bit_numbering(bits: list[Boolean]) -> list[Boolean]:
    padded = list(bits)
    while len(padded) % 8:
        padded.append(Boolean.constant(False))
    return [b for i in range(0, len(padded), 8) for b in reversed(padded[i : i + 8])]


def uint64_alloc(cs: RefCS, value: int) -> list[Boolean]:
    """``UInt64::alloc``: its bits, least significant first."""
    return [Boolean.is_(abit_alloc(cs, bool((value >> i) & 1))) for i in range(64)]


def hash_circuit(cs: RefCS, bits: list[Boolean]) -> Num:
    be = sha256(cs, bits)
    le = [b for i in range(0, len(be), 8) for b in reversed(be[i : i + 8])][:CAPACITY]
    return pack_bits(cs, le)


def hash_multi_leaf_circuit(cs: RefCS, leaves: list[Num]) -> Num:
    bits: list[Boolean] = []
    for leaf in leaves:
        padded = to_bits_le(cs, leaf)
        while len(padded) % 8:
            padded.append(Boolean.constant(False))
        bits += [b for i in range(0, len(padded), 8) for b in reversed(padded[i : i + 8])]
    return hash_circuit(cs, bits)


def hash_leaf_bits_circuit(cs: RefCS, left: list[Boolean], right: list[Boolean]) -> Num:
    pre: list[Boolean] = []
    for side in (left, right):
        padded = list(side)
        while len(padded) % 8:
            padded.append(Boolean.constant(False))
        pre += [b for i in range(0, len(padded), 8) for b in reversed(padded[i : i + 8])]
    return hash_circuit(cs, pre)


def create_label_circuit(cs: RefCS, replica_id: list[Boolean], parents: list[list[Boolean]],
                         layer: int, node: list[Boolean]) -> Num:
    """``node`` is a UInt64's bits, least significant first; ``layer`` a UInt32 constant."""
    assert 32 <= len(replica_id) <= 256 and len(parents) == 37
    msg = list(replica_id)
    while len(msg) < 256:
        msg.append(Boolean.constant(False))
    msg += UInt32.constant(layer).into_bits_be()
    msg += list(reversed(node))
    while len(msg) < 512:
        msg.append(Boolean.constant(False))
    for p in parents:
        msg += p
        while len(msg) % 256:
            msg.append(Boolean.constant(False))
    assert len(msg) == 39 * 256
    bits = reverse_bit_numbering(sha256(cs, msg))
    return pack_bits(cs, bits[:CAPACITY])


# ---------------------------------------------------------------- comparing with a compiled circuit


def _triples(rows: list[Lc], g) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(row, column, Montgomery coefficient) of the nonzero terms, sorted by row then column."""
    r_l: list[int] = []
    c_l: list[int] = []
    k_l: list[int] = []
    for i, row in enumerate(rows):
        for v, c in row.items():
            if c % R_MOD:
                r_l.append(i)
                c_l.append(g(v))
                k_l.append(c % R_MOD)
    uniq = {c: j for j, c in enumerate(dict.fromkeys(k_l))}
    table = to_mont_fr(list(uniq)) if uniq else np.zeros((0, 4), np.uint64)
    data = table[np.fromiter((uniq[c] for c in k_l), np.int64, len(k_l))]
    rr, cc = np.array(r_l, np.int64), np.array(c_l, np.int64)
    order = np.lexsort((cc, rr))
    return rr[order], cc[order], data[order]


def _csr_triples(csr, n_rows: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    indptr = np.asarray(csr.indptr[: n_rows + 1], np.int64)
    nnz = int(indptr[-1])
    rr = np.repeat(np.arange(n_rows, dtype=np.int64), np.diff(indptr))
    cc = np.asarray(csr.indices[:nnz], np.int64)
    data = np.asarray(csr.data[:nnz])
    order = np.lexsort((cc, rr))
    return rr[order], cc[order], data[order]


def mismatch(shape, z: np.ndarray | None, cs: RefCS) -> str | None:
    """Where a compiled circuit (and its witness ``z``, if given) differs from the reference:
    the counts of inputs, aux variables and rows, then each matrix term by term (ONE, inputs,
    aux numbered as bellperson's z = [1, inputs, aux]), then every value. None when equal."""
    n_pub = len(cs.inputs) - 1
    if shape.num_public != n_pub:
        return f"{shape.num_public} public inputs, the Rust allocates {n_pub}"
    if shape.num_aux != len(cs.aux):
        return f"{shape.num_aux} aux variables, the Rust allocates {len(cs.aux)}"
    r1cs = shape.r1cs
    n_rows = r1cs.num_constraints - (1 + n_pub)  # less the x·0 = 0 input rows
    if n_rows != len(cs.rows):
        return f"{n_rows} rows, the Rust enforces {len(cs.rows)}"

    def g(v: Var) -> int:
        return v[1] if v[0] == "i" else 1 + n_pub + v[1]

    for m, name in enumerate("ABC"):
        mine = _csr_triples(getattr(r1cs, name), n_rows)
        ref = _triples([row[m] for row in cs.rows], g)
        if len(mine[0]) != len(ref[0]):
            per_row = np.bincount(mine[0], minlength=n_rows) != np.bincount(ref[0], minlength=n_rows)
            return f"matrix {name}: row {int(np.flatnonzero(per_row)[0])} has another number of terms"
        diff = (mine[1] != ref[1]) | np.any(mine[2] != ref[2], axis=1) | (mine[0] != ref[0])
        if diff.any():
            return f"matrix {name}: row {int(ref[0][np.flatnonzero(diff)[0]])} has other terms"
    if z is not None:
        want = to_mont_fr(cs.inputs + cs.aux)
        if z.shape != want.shape or not np.array_equal(z, want):
            i = int(np.flatnonzero(np.any(z != want, axis=1))[0])
            return f"witness value {i} differs from the Rust's"
    return None
