"""Boolean, packing, unpacking and word-addition gadgets: every output against Python ints on
random inputs (constants and negations included), the witness satisfies, and tampering breaks."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.circuit.bits import add_words, and_, ch, const_word, maj, pack, unpack, xor
from engine.circuit.check import place_on_free, run, unsatisfied_rows_py
from engine.circuit.template import Bit, Tracer, var
from engine.synthesis import is_satisfied
from kernels.cpu.convert import from_mont_fr, to_mont_fr

NB = 6  # bit inputs of the logic template


def _logic_template():
    """Inputs: NB bits, then 3 words (96 bits), then one field value. Outputs in a fixed order."""
    tr = Tracer("logic", NB + 96 + 1)
    b = [Bit(tr.input(i)) for i in range(NB)]
    consts = [Bit.const(0), Bit.const(1)]
    outs: list[Bit] = []
    pool = b + [~x for x in b] + consts
    rnd = random.Random(7)  # the template's wiring; the *values* are fresh each run
    triples = [(rnd.choice(pool), rnd.choice(pool), rnd.choice(pool)) for _ in range(40)]
    for x, y, w in triples:
        outs += [xor(tr, x, y), and_(tr, x, y), ch(tr, x, y, w), maj(tr, x, y, w)]
    words = [[Bit(tr.input(NB + 32 * j + i)) for i in range(32)] for j in range(3)]
    s = add_words(tr, [words[0], words[1], words[2], const_word(0xDEADBEEF)], 0x12345678)
    s2 = add_words(tr, [const_word(5), const_word(7)], 1)  # folds to a constant
    field_in = tr.input(NB + 96)
    bits = unpack(tr, var(field_in), 200)
    packed = pack(tr, bits[:64] + [~bits[64]])
    tr.output(packed)
    return tr.finish(), triples, outs, s, s2


TMPL, TRIPLES, OUTS, SUM, SUM2 = _logic_template()


def _bitval(x: Bit, vals: list[int]) -> int:
    v = 1 if x.is_const else vals[x.slot - 1]
    return v ^ int(x.neg)


def _wire(x: Bit, shape, zi: list[int]) -> int:
    """The value of a traced bit in the witness: constant, input or local slot."""
    if x.is_const:
        v = 1
    elif x.slot <= TMPL.n_in:
        v = zi[shape.regions["in"][0, x.slot - 1]]
    else:
        v = zi[int(shape.stages[0].bases[0]) + x.slot - 1 - TMPL.n_in]
    return v ^ int(x.neg)


@settings(max_examples=8, deadline=None)
@given(st.lists(st.integers(0, 1), min_size=NB, max_size=NB), st.lists(st.integers(0, 2**32 - 1), min_size=3, max_size=3),
       st.integers(0, 2**200 - 1))
def test_logic_and_words(bits: list[int], words: list[int], field: int) -> None:
    row = bits + [(w >> i) & 1 for w in words for i in range(32)] + [field]
    shape, outs = place_on_free(TMPL, 1)
    z = run(shape, [row])
    zi = from_mont_fr(z)
    k = 0
    for x, y, w in TRIPLES:
        a, b_, c = (_bitval(t, row) for t in (x, y, w))
        expect = [a ^ b_, a & b_, b_ if a else c, int(a + b_ + c >= 2)]
        assert [_wire(o, shape, zi) for o in OUTS[k : k + 4]] == expect
        k += 4
    total = (sum(words) + 0xDEADBEEF + 0x12345678) & 0xFFFFFFFF
    got = sum(_wire(b, shape, zi) << i for i, b in enumerate(SUM))
    assert got == total
    assert sum(b.value << i for i, b in enumerate(SUM2)) == 13
    low = field & (2**64 - 1)
    assert zi[outs[-1][0]] == low + ((1 - ((field >> 64) & 1)) << 64)
    assert is_satisfied(shape.r1cs, z)
    assert unsatisfied_rows_py(shape.r1cs, zi) == []


def test_every_aux_value_matters() -> None:
    rnd = random.Random()
    row = [rnd.randrange(2) for _ in range(NB + 96)] + [rnd.getrandbits(200)]
    shape, _ = place_on_free(TMPL, 1)
    z = run(shape, [row])
    first_local = int(shape.stages[0].bases[0])
    for v in range(first_local, shape.num_vars):
        bad = z.copy()
        bad[v] = to_mont_fr([from_mont_fr(z[v : v + 1])[0] + rnd.randrange(1, 1000)])[0]
        assert not is_satisfied(shape.r1cs, bad), f"variable {v} is unconstrained"


def test_unpack_rejects_too_large() -> None:
    tr = Tracer("u", 1)
    unpack(tr, var(tr.input(0)), 8)
    shape, _ = place_on_free(tr.finish(), 1)
    z = run(shape, [[300]])  # does not fit 8 bits: the witness cannot satisfy
    assert not is_satisfied(shape.r1cs, z)
    with pytest.raises(ValueError):
        unpack(Tracer("u", 1), var(1), 255)
    with pytest.raises(ValueError):
        add_words(Tracer("w", 0), [const_word(1)], 2**32)
