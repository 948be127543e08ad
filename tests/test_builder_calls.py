"""The builder's one-instance-at-a-time path (``CircuitBuilder.call`` and ``alloc_aux``, what
engine/c2/cs.py builds Filecoin's circuit with).

A random circuit of interleaved calls of a few templates, array placements and allocations
compiles to exactly the R1CS that a naive reference assembles row by row in Python (same rows,
same order, same columns and coefficients); its stages are gathered per (depth, template); the
witness of the coalesced stages equals the witness of one stage per instance (numba, serial
and parallel, and the Python interpreter), holds the values Python ints say every output
must have, satisfies every row, and a changed value breaks a row. Bad calls are refused. The
porep presets compile to the R1CS they compiled to before stages were coalesced."""

from __future__ import annotations

import os
import random
import time
from dataclasses import dataclass, field

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.circuit.bits import add_words, and_, ch, maj, pack, unpack, xor
from engine.circuit.builder import CircuitBuilder, CircuitShape, Stage
from engine.circuit.cache import load_shape, save_shape
from engine.circuit.check import unsatisfied_rows_py
from engine.circuit.template import ONE, OP_LIN, OP_MUL, Bit, Template, Tracer, var
from engine.circuit.witness import fill_inputs, witness_numba, witness_python
from engine.groth16.r1cs import CSR, R1CS
from engine.synthesis import is_satisfied
from kernels.constants import R_MOD
from kernels.cpu.convert import from_mont_fr, to_mont_fr

K_ADD = 0x9E3779B9  # the constant the word-addition template adds


# ---------------------------------------------------------------------------- templates


def _bits_template(name: str, n_in: int, body) -> Template:
    tr = Tracer(name, n_in)
    for o in body(tr, [Bit(tr.input(i)) for i in range(n_in)]):
        tr.output(o.slot if isinstance(o, Bit) else o)
    return tr.finish()


def _mul_template() -> Template:
    """(x, y) -> x * y + 3: one MUL op, one constraint x · y = out − 3."""
    tr = Tracer("mul3", 2)
    x, y = tr.input(0), tr.input(1)
    out = tr.alloc()
    tr.enforce(var(x), var(y), {out: 1, ONE: R_MOD - 3})
    tr.emit(OP_MUL, out, [1, 1, 1, *tr.lc_args(var(x)), *tr.lc_args(var(y)), *tr.lc_args({ONE: 3})])
    tr.output(out)
    return tr.finish()


def _five_template() -> Template:
    """No inputs -> 5 (out · 1 = 5)."""
    tr = Tracer("five", 0)
    out = tr.alloc()
    tr.enforce(var(out), var(ONE), {ONE: 5})
    tr.emit(OP_LIN, out, tr.lc_args({ONE: 5}))
    tr.output(out)
    return tr.finish()


def _word(v: list[int], at: int) -> int:
    return sum(v[at + i] << i for i in range(32))


# name -> (template, input kind per slot: "b" a bit, "f" a field, "s" a field below 2^8,
# what Python ints say the outputs are)
TEMPLATES = {
    "xa": (_bits_template("xa", 2, lambda tr, b: [xor(tr, b[0], b[1]), and_(tr, b[0], b[1])]),
           "bb", lambda v: [v[0] ^ v[1], v[0] & v[1]]),
    "mc": (_bits_template("mc", 3, lambda tr, b: [maj(tr, *b), ch(tr, *b)]),
           "bbb", lambda v: [int(sum(v) >= 2), v[1] if v[0] else v[2]]),
    "add": (_bits_template("add", 64, lambda tr, b: add_words(tr, [b[:32], b[32:]], K_ADD)),
            "b" * 64, lambda v: [((_word(v, 0) + _word(v, 32) + K_ADD) >> i) & 1 for i in range(32)]),
    "pack8": (_bits_template("pack8", 8, lambda tr, b: [pack(tr, b)]),
              "b" * 8, lambda v: [sum(x << i for i, x in enumerate(v))]),
    "unpack12": (_bits_template("unpack12", 1, lambda tr, b: unpack(tr, var(b[0].slot), 12)),
                 "s", lambda v: [(v[0] >> i) & 1 for i in range(12)]),
    "mul3": (_mul_template(), "ff", lambda v: [(v[0] * v[1] + 3) % R_MOD]),
    "five": (_five_template(), "", lambda v: [5]),
}
OUT_KIND = {"xa": "b", "mc": "b", "add": "b", "pack8": "s", "unpack12": "b", "mul3": "f", "five": "f"}


# ---------------------------------------------------------------------------- the reference


@dataclass
class Program:
    """A random circuit built through the builder and, beside it, by hand: the instances in
    circuit order, every variable's expected value and depth."""

    cb: CircuitBuilder
    public: list[int]
    free: dict[str, list[int]] = field(default_factory=dict)  # only the regions it allocated
    instances: list[tuple[str, int, list[int]]] = field(default_factory=list)  # name, base, inputs
    value: dict[int, int] = field(default_factory=dict)
    depth: dict[int, int] = field(default_factory=dict)
    inst_depth: list[int] = field(default_factory=list)
    next_var: int = 0
    pools: dict[str, list[int]] = field(default_factory=lambda: {"b": [], "f": [], "s": []})

    def alloc(self, region: str, values: list[int], kind: str) -> None:
        idx = self.cb.alloc_aux(region, len(values))
        assert idx.tolist() == list(range(self.next_var, self.next_var + len(values)))
        for v, x in zip(idx.tolist(), values):
            self.value[v], self.depth[v] = x, 0
            self.pools[kind].append(v)
        self.free.setdefault(region, []).extend(values)
        self.next_var += len(values)

    def _record(self, name: str, base: int, ins: list[int], outs: list[int], d: int) -> None:
        tmpl, _, fn = TEMPLATES[name]
        assert outs == [base + s - 1 - tmpl.n_in for s in tmpl.outputs]
        for v in range(base, base + tmpl.n_loc):
            self.depth[v] = d
        for v, x in zip(outs, fn([self.value[i] for i in ins])):
            self.value[v] = x
            self.pools[OUT_KIND[name]].append(v)
        self.instances.append((name, base, ins))
        self.inst_depth.append(d)
        self.next_var += tmpl.n_loc

    def _depth(self, ins: list[int]) -> int:
        """One more than the deepest input (free variables and public inputs: 0)."""
        return 1 + max((self.depth[i] for i in ins), default=0)

    def inputs(self, rnd: random.Random, name: str) -> list[int] | None:
        kinds = TEMPLATES[name][1]
        if any(len(self.pools[k]) < kinds.count(k) for k in set(kinds)):
            return None
        picked = {k: rnd.sample(self.pools[k], kinds.count(k)) for k in set(kinds)}
        return [picked[k].pop() for k in kinds]

    def call(self, rnd: random.Random) -> None:
        name = rnd.choice(list(TEMPLATES))
        ins = self.inputs(rnd, name)
        if ins is not None:
            self._record(name, self.next_var, ins, self.cb.call(TEMPLATES[name][0], ins), self._depth(ins))

    def place(self, rnd: random.Random, count: int) -> None:
        """``count`` instances of xa in one placement: one depth, that of its deepest row."""
        rows = [self.inputs(rnd, "xa") for _ in range(count)]
        if any(r is None for r in rows):
            return
        outs = self.cb.place(TEMPLATES["xa"][0], np.array(rows, np.int64))
        d = max(self._depth(r) for r in rows if r is not None)
        for i, r in enumerate(rows):
            assert r is not None
            self._record("xa", self.next_var, r, [int(o[i]) for o in outs], d)


def random_program(rnd: random.Random, steps: int) -> Program:
    pub = [rnd.randrange(R_MOD) for _ in range(2)]
    prog = Program(CircuitBuilder("calls", 2), pub, next_var=3)
    for i, x in enumerate(pub):
        prog.value[1 + i], prog.depth[1 + i] = x, 0
        prog.pools["f"].append(1 + i)
    prog.alloc("bits", [rnd.randrange(2) for _ in range(10)], "b")
    for _ in range(steps):
        r = rnd.random()
        if r < 0.15:
            prog.alloc("bits", [rnd.randrange(2) for _ in range(rnd.randint(1, 3))], "b")
        elif r < 0.2:
            prog.alloc("fields", [rnd.randrange(R_MOD)], "f")
        elif r < 0.25:
            prog.place(rnd, rnd.randint(1, 4))
        else:
            prog.call(rnd)
    return prog


def naive_csr(prog: Program, which: str, num_inputs: int) -> CSR:
    """One matrix, row by row in Python: each instance's template rows with its slots mapped
    to global variables, in circuit order, then bellman's input rows."""
    indptr, cols, coefs = [0], [], []
    for name, base, ins in prog.instances:
        t = TEMPLATES[name][0]
        m = getattr(t, which)
        for j in range(t.n_rows):
            for k in range(int(m.ptr[j]), int(m.ptr[j + 1])):
                s = int(m.slot[k])
                cols.append(0 if s == ONE else ins[s - 1] if s <= t.n_in else base + s - 1 - t.n_in)
                coefs.append(m.coef[k])
            indptr.append(len(cols))
    for i in range(num_inputs):
        if which == "A":
            cols.append(i)
            coefs.append(to_mont_fr([1])[0])
        indptr.append(len(cols))
    data = np.array(coefs, np.uint64).reshape(-1, 4)
    return CSR(np.array(indptr, np.int64), np.array(cols, np.int32), data)


def naive_shape(prog: Program, shape: CircuitShape) -> CircuitShape:
    """The same circuit with one stage per instance, run one after the other (what the builder
    made before stages were coalesced), its R1CS assembled by :func:`naive_csr`."""
    tid = {id(t): i for i, t in enumerate(shape.templates)}
    stages, row = [], 0
    for k, (name, base, ins) in enumerate(prog.instances):
        t = TEMPLATES[name][0]
        stages.append(Stage(tid[id(t)], 1, np.array([base], np.int64), np.array([row], np.int64),
                            np.array(ins, np.int64).reshape(1, t.n_in), k + 1))
        row += t.n_rows
    num_inputs = 1 + len(prog.public)
    r = R1CS(num_inputs, prog.next_var - num_inputs, *(naive_csr(prog, m, num_inputs) for m in "ABC"))
    return CircuitShape("naive", len(prog.public), r.num_aux, shape.templates, stages,
                        shape.regions, r)


def _same_csr(a: CSR, b: CSR) -> bool:
    return all(np.array_equal(np.asarray(getattr(a, p)), np.asarray(getattr(b, p)))
               for p in ("indptr", "indices", "data"))


# ---------------------------------------------------------------------------- the tests


@settings(max_examples=4, deadline=None)
@given(st.integers(0, 2**64 - 1))
def test_random_calls_equal_the_naive_circuit(seed: int) -> None:
    rnd = random.Random(seed)
    prog = random_program(rnd, 160)
    shape = prog.cb.compile()
    naive = naive_shape(prog, shape)
    # the same R1CS: same rows in the same order
    assert shape.num_vars == prog.next_var == naive.num_vars
    assert shape.r1cs.num_constraints == naive.r1cs.num_constraints
    for m in "ABC":
        assert _same_csr(getattr(shape.r1cs, m), getattr(naive.r1cs, m)), m
    assert shape.r1cs.digest() == naive.r1cs.digest()
    # coalesced: one stage per (depth, template), every instance in exactly one
    groups = {(name, d) for (name, _, _), d in zip(prog.instances, prog.inst_depth)}
    assert len(shape.stages) == len(groups) < len(prog.instances)
    assert sorted(b for s in shape.stages for b in s.bases.tolist()) == sorted(b for _, b, _ in prog.instances)
    for s in shape.stages:
        t = shape.templates[s.template]
        assert {prog.depth[int(b)] for b in s.bases} == {s.depth}
        assert np.all(np.diff(s.rows) >= t.n_rows)  # in circuit order, never overlapping
    # the witness: coalesced = one stage per instance = Python interpreter = Python ints
    z = witness_numba(shape, fill_inputs(shape, prog.public, prog.free))
    z_par = witness_numba(shape, fill_inputs(shape, prog.public, prog.free), parallel=True)
    z_naive = witness_numba(naive, fill_inputs(naive, prog.public, prog.free), parallel=False)
    assert np.array_equal(z, z_naive) and np.array_equal(z, z_par)
    zi = from_mont_fr(z)
    assert witness_python(shape, prog.public, prog.free) == zi == witness_python(naive, prog.public, prog.free)
    assert all(zi[v] == x for v, x in prog.value.items())
    assert is_satisfied(shape.r1cs, z) and unsatisfied_rows_py(shape.r1cs, zi) == []
    # a changed value of any instance's variable breaks a row
    name, base, _ = rnd.choice(prog.instances)
    v = base + rnd.randrange(TEMPLATES[name][0].n_loc)
    bad = list(zi)
    bad[v] = (bad[v] + rnd.randrange(1, R_MOD)) % R_MOD
    assert unsatisfied_rows_py(shape.r1cs, bad) != []
    assert not is_satisfied(shape.r1cs, to_mont_fr(bad))


def test_depths_coalesce_independent_calls_and_order_chains() -> None:
    xa = TEMPLATES["xa"][0]
    cb = CircuitBuilder("depths", 0)
    bits = cb.alloc_aux("b", 40).tolist()
    for i in range(20):  # independent: all at depth 1
        cb.call(xa, [bits[2 * i], bits[2 * i + 1]])
    cur = bits[0]
    for i in range(6):  # a chain: depths 1, 2, ..., 6
        cur = cb.call(xa, [cur, bits[i + 1]])[0]
    shape = cb.compile()
    assert sorted((s.depth, s.count) for s in shape.stages) == [(1, 21)] + [(d, 1) for d in range(2, 7)]
    rnd = random.Random()
    vals = [rnd.randrange(2) for _ in range(40)]
    z = witness_numba(shape, fill_inputs(shape, [], {"b": vals}))
    assert is_satisfied(shape.r1cs, z)
    assert from_mont_fr(z) == witness_python(shape, [], {"b": vals})
    want = vals[0]
    for i in range(6):
        want ^= vals[i + 1]
    assert from_mont_fr(z)[cur] == want


def test_bad_calls_are_refused() -> None:
    xa, add = TEMPLATES["xa"][0], TEMPLATES["add"][0]
    cb = CircuitBuilder("bad", 1)
    bits = cb.alloc_aux("b", 64).tolist()
    for ins in ([bits[0], cb.next_var], [-1, bits[0]], [bits[0], 10**9]):
        with pytest.raises(ValueError, match="unallocated"):
            cb.call(xa, ins)
    with pytest.raises(ValueError, match="unallocated"):
        cb.call(add, bits[:63] + [cb.next_var])  # the numpy path (more inputs than the Python one)
    with pytest.raises(ValueError, match="takes 2 inputs"):
        cb.call(xa, bits[:3])
    with pytest.raises(ValueError, match="defined twice"):
        cb.free("b", 3)
    cb.free("f", 2)
    with pytest.raises(ValueError, match="defined twice"):
        cb.alloc_aux("f", 1)
    with pytest.raises(ValueError, match="negative"):
        cb.alloc_aux("b", -1)
    assert cb.next_row == 0 and cb.instances() == [(xa, 0), (add, 0)]  # nothing was recorded


def test_building_goes_on_after_compile() -> None:
    """compile() keeps no view of the growing records: more calls and a second compile work."""
    xa = TEMPLATES["xa"][0]
    cb = CircuitBuilder("twice", 0)
    bits = cb.alloc_aux("b", 4).tolist()
    cb.call(xa, bits[:2])
    first = cb.compile()
    more = cb.alloc_aux("b", 1).tolist()
    cb.call(TEMPLATES["add"][0], (bits * 16)[:63] + more)
    second = cb.compile()
    assert second.r1cs.num_constraints > first.r1cs.num_constraints
    vals = [random.randrange(2) for _ in range(5)]
    assert is_satisfied(second.r1cs, witness_numba(second, fill_inputs(second, [], {"b": vals})))


def test_save_load_round_trip(tmp_path) -> None:
    prog = random_program(random.Random(), 80)
    shape = prog.cb.compile()
    save_shape(shape, tmp_path / "entry")
    back = load_shape(tmp_path / "entry")
    assert back.r1cs.digest() == shape.r1cs.digest() and back.regions.keys() == shape.regions.keys()
    assert len(back.stages) == len(shape.stages)
    for a, b in zip(shape.stages, back.stages):
        assert (a.template, a.count, a.depth) == (b.template, b.count, b.depth)
        assert all(np.array_equal(getattr(a, f), getattr(b, f)) for f in ("bases", "rows", "inmap"))
    z = witness_numba(back, fill_inputs(back, prog.public, prog.free))
    assert np.array_equal(z, witness_numba(shape, fill_inputs(shape, prog.public, prog.free)))
    assert is_satisfied(back.r1cs, z)


# R1CS.digest() of the porep presets, recorded on the commit before stages were coalesced
# (1245331: one stage per placement); the rows must not move.
PRESET_DIGESTS = {
    "tiny": "33f6e3b2cbbf80712ff93e8e01fd63f607cf115accf8f4688ade196306880f9b",
    "small": "945e92ad6da8dd46989334431d624aa30cbbd8cf60b2bebd6792da5b7459f65c",
}


@pytest.mark.parametrize("preset", sorted(PRESET_DIGESTS))
def test_porep_presets_compile_to_the_same_r1cs(preset: str) -> None:
    from engine.circuit.porep import build_porep

    shape = build_porep(preset)
    assert shape.r1cs.digest().hex() == PRESET_DIGESTS[preset]
    assert len(shape.stages) == len({(s.template, s.depth) for s in shape.stages})  # coalesced


def test_100k_calls_timing(capsys: pytest.CaptureFixture[str]) -> None:
    """100k calls of a small template and 35k alloc_aux, as at Filecoin's scale (printed, not
    asserted: the machine is shared)."""
    xa = TEMPLATES["xa"][0]
    rnd = random.Random()
    cb = CircuitBuilder("timing", 0)
    pool = cb.alloc_aux("b", 64).tolist()
    picks = [(rnd.randrange(1, 64), rnd.randrange(1, 64)) for _ in range(100_000)]
    t0 = time.perf_counter()
    for i, (p, q) in enumerate(picks):
        if i % 20 < 7:  # 35k single allocations, interleaved
            pool.append(int(cb.alloc_aux("b", 1)[0]))
        pool.append(cb.call(xa, [pool[-p], pool[-q]])[i & 1])
    t1 = time.perf_counter()
    shape = cb.compile()
    t2 = time.perf_counter()
    vals = [rnd.randrange(2) for _ in range(len(shape.regions["b"]))]
    z = witness_numba(shape, fill_inputs(shape, [], {"b": vals}))
    t3 = time.perf_counter()
    assert len(shape.regions["b"]) == 64 + 35_000 and sum(s.count for s in shape.stages) == 100_000
    assert is_satisfied(shape.r1cs, z)
    with capsys.disabled():
        print(f"\n100k calls + 35k alloc_aux: build {t1 - t0:.3f} s, compile {t2 - t1:.3f} s, "
              f"witness {t3 - t2:.3f} s; {len(shape.stages)} stages, "
              f"{shape.r1cs.num_constraints} rows (cpus {os.cpu_count()})")
