"""engine/c2's bellperson gadgets, exact: rows spelt out as the Rust writes them (AllocatedBit
xor/and and their Is/Not cases, ch and maj, UInt32 addmany through MultiEq, packing), whole
gadgets compared variable for variable, row for row and value for value with tests/
bellpepper_ref.py (the Rust re-derived against a plain recording constraint system), the counts
of engine/seal/circuit_count.py and Filecoin's own constants, and values against hashlib, the
native SHA-256 compression and the native label.

Inputs are fresh every run: field elements, bit patterns (constants, allocated bits, their
negations, repeats), the layer a label is checked on."""

from __future__ import annotations

import hashlib
import os
import random
import secrets
from collections.abc import Sequence
from functools import cache

import bellpepper_ref as br
import numpy as np
import pytest
from r1cs_rows import r1cs_row

from engine.c2 import num
from engine.c2.boolean import MultiEq, addmany, and_, ch, const_word, maj, xor
from engine.c2.cs import PRIVATE, Synth
from engine.c2.sha256 import (
    compression,
    create_label,
    hash_leaf_bits,
    reverse_bit_numbering,
    sha256,
    tree_d_node,
)
from engine.c2.stacked import expand_parents
from engine.circuit.builder import CircuitShape
from engine.circuit.template import ONE, Bit, Tracer
from engine.circuit.witness import fill_inputs, witness_numba, witness_python
from engine.groth16.examples import WitnessError, check_witness
from engine.seal import circuit_count as cc
from engine.seal.hashing import compress as native_compress
from engine.seal.labels import label_node
from engine.seal.registry import BASE_DEGREE, EXP_DEGREE
from kernels.constants import R_MOD
from kernels.cpu.convert import from_mont_fr

heavy = pytest.mark.skipif(not os.environ.get("SEALTOP_HEAVY"),
                           reason="set SEALTOP_HEAVY=1 (every layer against the reference)")
NEG = R_MOD - 1


class Build:
    """One circuit built twice in lockstep: through engine/c2's Synth and through the
    reference, with the values the prover supplies."""

    def __init__(self, name: str, num_public: int = 0) -> None:
        self.s = Synth.new(name, num_public)
        self.ref = br.RefCS()
        self.values: list[int] = []

    def num(self, value: int) -> tuple[int, br.Num]:
        slot = self.s.alloc(("v", len(self.values)))
        self.values.append(value)
        return slot, br.num_alloc(self.ref, value)

    def bit(self, value: int) -> tuple[Bit, br.Boolean]:
        """An ``AllocatedBit::alloc`` of a supplied bit, both ways."""
        b = num.alloc_bit(self.s, ("v", len(self.values)))
        self.values.append(value)
        return b, br.Boolean.is_(br.abit_alloc(self.ref, bool(value)))

    def finish(self) -> tuple[CircuitShape, np.ndarray]:
        shape = self.s.finish()
        z = witness_numba(shape, fill_inputs(shape, self.ref.inputs[1:], {PRIVATE: self.values}))
        return shape, z

    def check(self) -> tuple[CircuitShape, np.ndarray]:
        """Compiled, filled, equal to the reference and satisfied."""
        shape, z = self.finish()
        assert br.mismatch(shape, z, self.ref) is None, br.mismatch(shape, z, self.ref)
        check_witness(shape.r1cs, z)
        return shape, z


def _fr() -> int:
    return secrets.randbelow(R_MOD)


def _val(zi: list[int], b: Bit) -> int:
    return b.value if b.is_const else zi[b.slot] ^ int(b.neg)


def _flip(z: np.ndarray, zi: list[int], v: int) -> np.ndarray:
    """``z`` with bit variable v flipped."""
    bad = z.copy()
    bad[v] = z[0] if zi[v] == 0 else 0
    return bad


# ---------------------------------------------------------------- rows, as the Rust states them


def _bit_ops_body(tr: Tracer, ins: list[Bit]) -> list[Bit]:
    a, b, c = ins
    outs = []
    for na in (False, True):
        for nb in (False, True):
            x, y = Bit(a.slot, na), Bit(b.slot, nb)
            outs += [xor(tr, x, y), and_(tr, x, y)]
    return [*outs, ch(tr, a, b, c), maj(tr, a, b, c)]


def test_allocated_bit_rows_and_values() -> None:
    """boolean.rs: every Is/Not pairing of xor and and, then sha256_ch and sha256_maj over
    three variables, with the rows each writes and their values for all 8 inputs."""
    b = Build("bits")
    triples = [[b.bit((k >> j) & 1)[0] for j in range(3)] for k in range(8)]
    outs = [b.s.call("bit-ops", t, _bit_ops_body) for t in triples]
    shape, z = b.finish()
    check_witness(shape.r1cs, z)
    zi = from_mont_fr(z)
    for k, out in enumerate(outs):
        av, bv, cv = ((k >> j) & 1 for j in range(3))
        want = []
        for na in (0, 1):
            for nb in (0, 1):
                want += [(av ^ na) ^ (bv ^ nb), (av ^ na) & (bv ^ nb)]
        want += [bv if av else cv, int(av + bv + cv >= 2)]
        assert [_val(zi, o) for o in out] == want
    # the first instance's rows, after the 24 boolean rows of the supplied bits
    a, bb, c = (t.slot for t in triples[0])
    x = [o.slot for o in outs[0]]
    r = 24
    rows = [r1cs_row(shape, r + i) for i in range(11)]
    assert rows[0] == ({a: 2}, {bb: 1}, {a: 1, bb: 1, x[0]: NEG})  # xor(Is a, Is b)
    assert rows[1] == ({a: 1}, {bb: 1}, {x[1]: 1})  # and
    assert rows[2] == ({a: 2}, {bb: 1}, {a: 1, bb: 1, x[2]: NEG})  # xor(Is a, Not b) = Not xor(a, b)
    assert outs[0][2].neg
    assert rows[3] == ({a: 1}, {ONE: 1, bb: NEG}, {x[3]: 1})  # and_not(a, b)
    assert rows[4] == ({bb: 2}, {a: 1}, {bb: 1, a: 1, x[4]: NEG})  # xor(Not a, Is b) = Not xor(b, a)
    assert outs[0][4].neg
    assert rows[5] == ({bb: 1}, {ONE: 1, a: NEG}, {x[5]: 1})  # and_not(b, a)
    assert rows[6] == ({a: 2}, {bb: 1}, {a: 1, bb: 1, x[6]: NEG})  # xor(Not a, Not b)
    assert not outs[0][6].neg
    assert rows[7] == ({ONE: 1, a: NEG}, {ONE: 1, bb: NEG}, {x[7]: 1})  # nor(a, b)
    assert rows[8] == ({bb: 1, c: NEG}, {a: 1}, {x[8]: 1, c: NEG})  # ch: a (b - c) = ch - c
    m = x[9]
    bc = m + 1  # maj is allocated before "b and c"
    assert rows[9] == ({bb: 1}, {c: 1}, {bc: 1})
    assert rows[10] == ({bc: 2, bb: NEG, c: NEG}, {a: 1}, {bc: 1, m: NEG})
    # a wrong and-result breaks its row
    with pytest.raises(WitnessError):
        check_witness(shape.r1cs, _flip(z, zi, x[1]))


_K = random.getrandbits(32)


def _addmany_body(tr: Tracer, ins: list[Bit]) -> list[Bit]:
    x, y = ins[:32], ins[32:]
    meq = MultiEq(tr)
    outs: list[Bit] = []
    for _ in range(8):
        outs += addmany(tr, meq, [x, y, const_word(_K)])
    meq.close()
    return outs


def test_addmany_multieq_rows_and_capacity() -> None:
    """uint32.rs addmany of three words (34 result bits, each allocated with its boolean row)
    into multieq.rs: seven equalities share one row lhs * 1 = rhs at coefficients 2^(34 j);
    the eighth would pass CAPACITY (7 * 34 + 34 >= 254), so the batch is enforced after the
    eighth's bits, and the eighth's row comes when the MultiEq is dropped."""
    b = Build("addmany")
    xv, yv = random.getrandbits(32), random.getrandbits(32)
    x = [b.bit((xv >> i) & 1)[0] for i in range(32)]
    y = [b.bit((yv >> i) & 1)[0] for i in range(32)]
    neg_at, const_at = random.sample(range(32), 2)  # a negated bit and a constant bit in x
    x[neg_at] = ~x[neg_at]
    x[const_at] = Bit.const(1)
    xval = sum(((xv >> i) & 1 ^ (i == neg_at)) << i for i in range(32) if i != const_at) + (1 << const_at)
    outs = b.s.call("addmany", x + y, _addmany_body)
    shape, z = b.finish()
    check_witness(shape.r1cs, z)
    zi = from_mont_fr(z)
    total = xval + yv + _K
    for j in range(8):
        assert sum(_val(zi, o) << i for i, o in enumerate(outs[32 * j : 32 * j + 32])) == total % 2**32
    first = [outs[32 * j].slot for j in range(8)]  # each result's 34 bits are consecutive
    assert [zi[first[0] + 32], zi[first[0] + 33]] == [(total >> 32) & 1, (total >> 33) & 1]
    base = 64  # the supplied bits' boolean rows
    assert shape.r1cs.num_constraints - 1 == base + 8 * 34 + 2
    for j in range(8):
        for i in range(34):
            v = first[j] + i
            assert r1cs_row(shape, base + 34 * j + i) == ({ONE: 1, v: NEG}, {v: 1}, {})
    lhs_one = (_K + (1 << const_at) + (1 << neg_at)) % R_MOD
    lhs = {ONE: lhs_one, x[neg_at].slot: NEG << neg_at}
    for i in range(32):
        if i not in (neg_at, const_at):
            lhs[x[i].slot] = 1 << i
        lhs[y[i].slot] = lhs.get(y[i].slot, 0) + (1 << i)

    def batch(js: Sequence[int]) -> tuple[dict[int, int], ...]:
        a: dict[int, int] = {}
        c: dict[int, int] = {}
        for k, j in enumerate(js):
            for s, co in lhs.items():
                a[s] = (a.get(s, 0) + (co << (34 * k))) % R_MOD
            for i in range(34):
                c[first[j] + i] = (1 << (34 * k + i)) % R_MOD
        return a, {ONE: 1}, c

    assert r1cs_row(shape, base + 8 * 34) == batch(range(7))
    assert r1cs_row(shape, base + 8 * 34 + 1) == batch([7])
    # a wrong carry breaks the batch
    with pytest.raises(WitnessError):
        check_witness(shape.r1cs, _flip(z, zi, first[2] + 33))


def test_packing_rows() -> None:
    """multipack.rs: pack_into_inputs puts CAPACITY bits in each public input with the row
    (sum 2^i b_i) * 1 = input; pack_bits allocates the number first, then the same row over
    the first CAPACITY bits. A negated bit adds to ONE, a constant bit is ONE."""
    n = random.randrange(255, 400)
    b = Build("pack", num_public=2)
    vals = [random.getrandbits(1) for _ in range(n)]
    bits = [b.bit(v)[0] for v in vals]
    k = random.randrange(253)
    bits[k], vals[k] = ~bits[k], 1 - vals[k]
    bits[k + 1], vals[k + 1] = Bit.const(1), 1
    num.pack_into_inputs(b.s, bits, [("in", 0), ("in", 1)])
    packed = num.pack_bits(b.s, bits)
    chunks = [sum(v << i for i, v in enumerate(vals[j : j + 254])) for j in (0, 254)]
    shape = b.s.finish()
    z = witness_numba(shape, fill_inputs(shape, chunks, {PRIVATE: b.values}))
    check_witness(shape.r1cs, z)
    assert from_mont_fr(z)[packed] == chunks[0]
    row = r1cs_row(shape, n)
    want = {bits[i].slot: 1 << i for i in range(254) if i not in (k, k + 1)}
    want[bits[k].slot] = NEG << k
    want[ONE] = (1 << k) + (1 << (k + 1))
    assert row == ({s: c % R_MOD for s, c in want.items()}, {ONE: 1}, {1: 1})
    tail = {bits[i].slot: 1 << i - 254 for i in range(254, n)}
    assert r1cs_row(shape, n + 1) == (tail, {ONE: 1}, {2: 1})
    assert r1cs_row(shape, n + 2) == (row[0], {ONE: 1}, {packed: 1})
    # a public input that is not the packed bits is refused
    bad = fill_inputs(shape, [chunks[0] ^ 1, chunks[1]], {PRIVATE: b.values})
    with pytest.raises(WitnessError):
        check_witness(shape.r1cs, witness_numba(shape, bad))


def test_uint64_and_num_gadgets_equal_the_reference() -> None:
    """UInt64::alloc and pack_into_input, inputize, to_bits_le, constraint::equal: the same
    variables, rows and values as the reference."""
    b = Build("nums", num_public=2)
    challenge = random.getrandbits(64)
    bits = num.uint64_alloc(b.s, [("v", len(b.values) + i) for i in range(64)])
    b.values += [(challenge >> i) & 1 for i in range(64)]
    ref_bits = br.uint64_alloc(b.ref, challenge)
    num.pack_into_inputs(b.s, bits, [("challenge",)])
    br.pack_into_inputs(b.ref, ref_bits)
    v = _fr()
    n, rn = b.num(v)
    num.inputize(b.s, n, ("n",))
    br.inputize(b.ref, rn)
    le = num.to_bits_le(b.s, n)
    br.to_bits_le(b.ref, rn)
    m, rm = b.num(v)
    num.equal(b.s, n, m)
    br.equal(b.ref, rn, rm)
    shape, z = b.check()
    zi = from_mont_fr(z)
    assert zi[1:3] == [challenge, v]
    assert sum(zi[bit.slot] << i for i, bit in enumerate(le)) == v
    # a wrong bit of the challenge breaks its packing
    with pytest.raises(WitnessError):
        check_witness(shape.r1cs, _flip(z, zi, bits[random.randrange(64)].slot))


# ---------------------------------------------------------------- SHA-256 against the reference


def _random_pattern(
    b: Build, n: int, rng: random.Random, p_const: float
) -> tuple[list[Bit], list[br.Boolean], list[int]]:
    """n bits: constants, supplied bits (a small pool, so that some repeat) and negations."""
    pool = [b.bit(rng.getrandbits(1)) for _ in range(rng.randrange(8, 48))]
    mine: list[Bit] = []
    ref: list[br.Boolean] = []
    vals: list[int] = []
    for _ in range(n):
        if rng.random() < p_const:
            c = rng.getrandbits(1)
            mine.append(Bit.const(c))
            ref.append(br.Boolean.constant(c))
        else:
            m, r = rng.choice(pool)
            if rng.getrandbits(1):
                m, r = ~m, r.not_()
            mine.append(m)
            ref.append(r)
        vals.append(int(ref[-1].value()))
    return mine, ref, vals


@pytest.mark.parametrize("p_const", [0.1, 0.5, 0.9])
def test_compression_equals_the_reference_on_random_patterns(p_const: float) -> None:
    """One sha256_compression_function over a block and a state whose bits are constants,
    allocated bits and their negations at random: the reference's variables, rows and values,
    and the native compression's output."""
    rng = random.Random(secrets.randbits(64))
    b = Build("compress")
    block, ref_block, bvals = _random_pattern(b, 512, rng, p_const)
    state, ref_state, svals = _random_pattern(b, 256, rng, p_const)
    out = compression(b.s, block, state)
    svalue = [sum(v << j for j, v in enumerate(svals[32 * i : 32 * i + 32])) for i in range(8)]
    words = [br.UInt32(ref_state[32 * i : 32 * i + 32], svalue[i]) for i in range(8)]
    br.compression(b.ref, ref_block, words)
    _, z = b.check()
    zi = from_mont_fr(z)
    st = np.array(svalue, np.uint32)
    w = np.zeros(64, np.uint32)
    w[:16] = [int("".join(map(str, bvals[32 * i : 32 * i + 32])), 2) for i in range(16)]
    native_compress(st, w)
    got = [sum(_val(zi, bit) << j for j, bit in enumerate(out[32 * i : 32 * i + 32])) for i in range(8)]
    assert got == st.tolist()


def test_compression_refuses_bad_sizes() -> None:
    s = Synth.new("bad", 0)
    with pytest.raises(ValueError, match="512 block bits"):
        compression(s, [Bit.const(0)] * 511, [Bit.const(0)] * 256)


def _le32(v: int) -> bytes:
    return v.to_bytes(32, "little")


def test_tree_d_node() -> None:
    """hash_multi_leaf_circuit of two children (tree_d's node): the reference's circuit, the
    digest of their 64 bytes truncated as Filecoin does, circuit_count's 45,379 constraints,
    45,331 aux variables (2 * 255 bits, 44,820 in the hash as the symbolic count has it, 1
    packed number), and the Python witness oracle."""
    b = Build("node")
    left, right = _fr(), _fr()
    (ls, lr), (rs, rr) = b.num(left), b.num(right)
    out = tree_d_node(b.s, [ls, rs])
    br.hash_multi_leaf_circuit(b.ref, [lr, rr])
    shape, z = b.check()
    zi = from_mont_fr(z)
    d = hashlib.sha256(_le32(left) + _le32(right)).digest()
    assert zi[out] == int.from_bytes(d[:31] + bytes([d[31] & 0x3F]), "little")
    assert shape.r1cs.num_constraints - 1 == cc.sha256_node_constraints(2) == 45_379
    assert shape.num_aux - 2 == 2 * 255 + _sha_aux(cc._field_bits_be() * 2) + 1 == 45_331
    assert witness_python(shape, [], {PRIVATE: b.values}) == zi
    with pytest.raises(WitnessError):
        check_witness(shape.r1cs, _flip(z, zi, out - 1))


def test_util_rs_leaf_constant() -> None:
    """storage-proofs-core util.rs hash_leaf_bits_circuit: 512 allocated bits (two field
    elements' little-endian bits), the hash and the pack are 45,387 constraints."""
    b = Build("leaf")
    left, right = _fr(), _fr()
    lb = [b.bit((left >> i) & 1) for i in range(256)]
    rb = [b.bit((right >> i) & 1) for i in range(256)]
    out = hash_leaf_bits(b.s, [x[0] for x in lb], [x[0] for x in rb])
    br.hash_leaf_bits_circuit(b.ref, [x[1] for x in lb], [x[1] for x in rb])
    shape, z = b.check()
    assert shape.r1cs.num_constraints - 1 == 45_387
    assert from_mont_fr(z[out : out + 1])[0] == int.from_bytes(
        hashlib.sha256(_le32(left) + _le32(right)).digest(), "little") % 2**254


# ---------------------------------------------------------------- labels


def _label_inputs(b: Build, n_parents: int):
    """replica_id and the parent labels allocated and unpacked as proof.rs / params.rs do, and
    the challenge as a UInt64; returns the Synth's and the reference's bits and the values."""
    rid = _fr()
    rs, rr = b.num(rid)
    r_bits = reverse_bit_numbering(num.to_bits_le(b.s, rs))
    r_ref = br.reverse_bit_numbering(br.to_bits_le(b.ref, rr))
    node = random.getrandbits(64)
    ch_bits = num.uint64_alloc(b.s, [("v", len(b.values) + i) for i in range(64)])
    b.values += [(node >> i) & 1 for i in range(64)]
    ch_ref = br.uint64_alloc(b.ref, node)
    vals = [_fr() for _ in range(n_parents)]
    cols = [b.num(v) for v in vals]
    parents = [reverse_bit_numbering(num.to_bits_le(b.s, c)) for c, _ in cols]
    p_ref = [br.reverse_bit_numbering(br.to_bits_le(b.ref, r)) for _, r in cols]
    return (r_bits, ch_bits, parents), (r_ref, ch_ref, p_ref), (rid, node, vals)


def _rows_since(s: Synth, n0: int) -> int:
    """Rows the gadget calls placed since the builder's row ``n0``."""
    return s.builder.next_row - n0


def _check_label(layer: int) -> None:
    n_parents = BASE_DEGREE if layer == 1 else BASE_DEGREE + EXP_DEGREE
    b = Build("label")
    (r_bits, ch_bits, parents), (r_ref, ch_ref, p_ref), (rid, node, vals) = _label_inputs(b, n_parents)
    n0 = b.s.builder.next_row
    out = create_label(b.s, r_bits, expand_parents(parents, layer), layer, ch_bits)
    rows = _rows_since(b.s, n0)
    expanded = [p_ref[i % n_parents] for i in range(37)]
    br.create_label_circuit(b.ref, r_ref, expanded, layer, ch_ref)
    shape, z = b.check()
    zi = from_mont_fr(z)
    want = label_node(_le32(rid), layer, node, [_le32(v) for v in vals])
    assert zi[out] == int.from_bytes(want, "little")
    assert rows == cc.label_constraints(layer)
    with pytest.raises(WitnessError):
        check_witness(shape.r1cs, _flip(z, zi, out - 1))  # the label's last digest bit


def test_label_on_a_random_layer_is_filecoins() -> None:
    """create_label_circuit on a 32 GiB layer drawn fresh (6 parents on layer 1, 14 above):
    the reference's circuit, the native label, circuit_count's constraints."""
    _check_label(random.choice([1, random.randrange(2, 12)]))


@heavy
@pytest.mark.parametrize("layer", range(1, 12))
def test_label_every_layer_equals_the_reference(layer: int) -> None:
    _check_label(layer)


class _AuxCounter(cc._Sha256Counter):
    """circuit_count's symbolic SHA-256, also counting the allocations bellperson makes: one
    per xor, and, and ch row, two per maj (the majority, then "b and c"), one per addmany result
    bit (MultiEq rows allocate nothing)."""

    def __init__(self) -> None:
        super().__init__()
        self.aux = 0

    def xor(self, a: int, b: int) -> int:
        n = self.n
        out = super().xor(a, b)
        self.aux += self.n - n
        return out

    def and_(self, a: int, b: int) -> int:
        n = self.n
        out = super().and_(a, b)
        self.aux += self.n - n
        return out

    def ch(self, a: int, b: int, c: int) -> int:
        n, aux = self.n, self.aux
        out = super().ch(a, b, c)
        if self.aux == aux:  # not folded into an and
            self.aux += self.n - n
        return out

    def maj(self, a: int, b: int, c: int) -> int:
        n, aux = self.n, self.aux
        out = super().maj(a, b, c)
        if self.aux == aux:
            self.aux += self.n - n
        return out

    def addmany(self, ops: list[cc.Word]) -> cc.Word:
        n = self.n
        out = super().addmany(ops)
        if self.n > n:
            self.aux += (len(ops) * 0xFFFFFFFF).bit_length()
        return out


@cache
def _block_aux(block: tuple[int, ...], state: tuple[cc.Word, ...]) -> tuple[int, tuple[cc.Word, ...]]:
    counter = _AuxCounter()
    out = counter.compress(block, state)
    return counter.aux, out


def _sha_aux(message: tuple[int, ...]) -> int:
    """Aux variables of bellperson's sha256 over a symbolic message (circuit_count's bits)."""
    length = len(message)
    pad = (-(length + 1 + 64)) % 512
    padded = message + (1,) + (0,) * pad + tuple((length >> i) & 1 for i in range(63, -1, -1))
    state = tuple(cc._const_word(v) for v in cc.IV)
    aux = 0
    for off in range(0, len(padded), 512):
        n, state = _block_aux(padded[off : off + 512], state)
        aux += n
    return aux


LABEL_AUX = 521_749
"""Aux variables of create_label_circuit on any layer (the hash's 521,748 and the packed
number), beside its 522,269 constraints: the 520 MultiEq rows allocate nothing."""


@pytest.mark.parametrize("layers", [2, 11], ids=["2KiB", "32GiB"])
def test_label_counts_every_layer(layers: int) -> None:
    """Every layer's label as the partition circuit builds it (parents unpacked per layer,
    cycled to 37): its constraints are circuit_count's label_constraints(layer) and its aux
    variables the symbolic count's, LABEL_AUX on every layer."""
    s = Synth.new("labels", 0)
    rid_bits = reverse_bit_numbering(num.to_bits_le(s, s.alloc(("rid",))))
    ch_bits = num.uint64_alloc(s, [("ch", i) for i in range(64)])
    cols = [[s.alloc(("col", p, r)) for r in range(layers)] for p in range(BASE_DEGREE + EXP_DEGREE)]
    b = s.builder
    for layer in range(1, layers + 1):
        parents = [reverse_bit_numbering(num.to_bits_le(s, c[layer - 1])) for c in cols[:BASE_DEGREE]]
        if layer > 1:
            parents += [reverse_bit_numbering(num.to_bits_le(s, c[layer - 2]))
                        for c in cols[BASE_DEGREE:]]
        n0 = b.next_row
        v0 = b.next_var
        create_label(s, rid_bits, expand_parents(parents, layer), layer, ch_bits)
        rows = _rows_since(s, n0)
        assert rows == cc.label_constraints(layer)
        aux = b.next_var - v0
        assert aux == _sha_aux(cc.label_message(layer)) + 1 == LABEL_AUX


def test_create_label_rs_constant() -> None:
    """create_label.rs test_create_label: replica_id and 37 parents as 256 allocated bits each
    (bytes_into_boolean_vec_be), layer 3 and node 22 as constants: 532,025 constraints, and the
    label is the native one."""
    b = Build("create_label.rs")
    rid = _fr()
    vals = [_fr() for _ in range(BASE_DEGREE + EXP_DEGREE)]

    def be_bits(v: int) -> list[tuple[Bit, br.Boolean]]:
        data = _le32(v)
        return [b.bit((data[i // 8] >> (7 - i % 8)) & 1) for i in range(256)]

    rid_bits = be_bits(rid)
    parent_bits = [be_bits(vals[i % 14]) for i in range(37)]
    node = [Bit.const((22 >> i) & 1) for i in range(64)]
    out = create_label(b.s, [x[0] for x in rid_bits], [[x[0] for x in p] for p in parent_bits], 3, node)
    shape, z = b.finish()  # the reference's label is test_label_on_a_random_layer_is_filecoins'
    check_witness(shape.r1cs, z)
    assert shape.r1cs.num_constraints - 1 == 532_025
    want = label_node(_le32(rid), 3, 22, [_le32(v) for v in vals])
    assert from_mont_fr(z[out : out + 1])[0] == int.from_bytes(want, "little")


@pytest.mark.parametrize("bad", ["parents", "node", "replica"])
def test_create_label_refuses_bad_shapes(bad: str) -> None:
    s = Synth.new("bad", 0)
    rid = [Bit.const(0)] * (16 if bad == "replica" else 256)
    parents = [[Bit.const(0)] * 256] * (36 if bad == "parents" else 37)
    node = [Bit.const(0)] * (63 if bad == "node" else 64)
    with pytest.raises(ValueError):
        create_label(s, rid, parents, 1, node)


def test_sha256_digest_of_supplied_bits() -> None:
    """bellperson's sha256 over supplied message bits of a fresh length (padding constant):
    hashlib's digest, the reference's circuit."""
    n = random.randrange(0, 130)
    msg = secrets.token_bytes(n)
    b = Build("sha")
    pairs = [b.bit((msg[i // 8] >> (7 - i % 8)) & 1) for i in range(8 * n)]
    digest = sha256(b.s, [p[0] for p in pairs])
    br.sha256(b.ref, [p[1] for p in pairs])
    _, z = b.check()
    zi = from_mont_fr(z)
    got = bytes(sum(_val(zi, digest[8 * k + j]) << (7 - j) for j in range(8)) for k in range(32))
    assert got == hashlib.sha256(msg).digest()
