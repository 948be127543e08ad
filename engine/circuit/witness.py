"""Witness generation: run every stage's witness program over its instances, depth by depth.

Two interpreters of the same program (template.py's opcodes):
- :func:`witness_numba` works in the storage layout (Fr Montgomery ``uint64[num_vars, 4]``) with
  numba, the instances of one depth (a wave) in parallel (prange). Bit operations only test and write 0/1;
  linear combinations skip zero wires and add the coefficient for a one wire, so the
  multiplications are spent on the general values only. Poseidon runs natively and writes
  every S-box wire. A stage whose template only computes bits (SHA-256's) runs its instances in
  groups, one bit of a uint64 each (engine.circuit.bitslice): 86 % of a porep-32g partition's
  interpreter time was such stages.
- :func:`witness_python` works on Python ints; it is slow and serves as an independent oracle
  for small circuits.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numba
import numpy as np
from numba import njit, prange

from engine.circuit.bitslice import LANES, run_sliced, written_locals
from engine.circuit.builder import CircuitShape, Stage
from engine.circuit.coverage import writes_every_variable
from engine.circuit.poseidon_native import permute, poseidon_tables
from engine.circuit.template import (
    OP_ADDW,
    OP_AND,
    OP_CH,
    OP_LIN,
    OP_MAJ,
    OP_MUL,
    OP_POSEIDON,
    OP_UNPACK,
    OP_XOR,
    Template,
)
from kernels.constants import R_MOD
from kernels.cpu.convert import from_mont_fr, to_mont_fr
from kernels.cpu.fr import FR_ONE, FR_ZERO, fr_add, fr_from_mont, fr_mul, fr_store

_U0 = np.uint64(0)
_U1 = np.uint64(1)


def fill_inputs(
    shape: CircuitShape, public: list[int], free: Mapping[str, object], z: np.ndarray | None = None
) -> np.ndarray:
    """z with the one, the public inputs and every free region set, the rest zero: a fresh
    array, or ``z`` (uint64[num_vars, 4], e.g. a view of shared memory) overwritten. A reused
    ``z`` is not zeroed where the program writes every other variable (engine.circuit.coverage):
    the rest then holds the last witness until the program overwrites it."""
    if len(public) != shape.num_public:
        raise ValueError(f"circuit {shape.name} takes {shape.num_public} public inputs, got {len(public)}")
    for x in public:
        if not 0 <= int(x) < R_MOD:
            raise ValueError(f"circuit {shape.name}: public input {x} is not a field element")
    if z is None:
        z = np.zeros((shape.num_vars, 4), np.uint64)
    else:
        if z.shape != (shape.num_vars, 4) or z.dtype != np.uint64:
            raise ValueError(f"witness buffer must be uint64[{shape.num_vars}, 4], got {z.dtype}{list(z.shape)}")
        if not writes_every_variable(shape, free):  # else the program overwrites every stale value
            z[:] = 0
    z[0] = np.array(FR_ONE, np.uint64)
    if public:
        z[1 : 1 + len(public)] = to_mont_fr(public)
    for name, values in free.items():
        if name not in shape.regions:
            raise ValueError(f"circuit {shape.name} has no variable region {name!r}")
        idx = shape.regions[name].reshape(-1)
        if isinstance(values, np.ndarray) and values.dtype == np.uint64 and values.ndim >= 2:
            vals = values.reshape(-1, 4)  # already Montgomery
        else:
            vals = to_mont_fr(np.asarray(values, dtype=object).reshape(-1).tolist())
        if len(vals) != len(idx):
            raise ValueError(f"region {name!r} has {len(idx)} variables, got {len(vals)} values")
        z[idx] = vals
    return z


# ---------------------------------------------------------------------------- numba interpreter


# Why the operand reads and bit writes below are spelled out in place rather than in small
# helpers taking z and the input map: a numba function increfs its array arguments on entry and
# decrefs them on return, and once LLVM inlines such a helper into a loop those atomic counts
# stay there. They took about three quarters of a porep-32g partition's witness on one thread,
# and every thread of a worker writes the same counter's cache line. Each expression of the form
#     s = code >> 1;  g = base + s - 1 - n_in if s > n_in else (inflat[irow + s - 1] if s else 0)
# is a slot's global index (0 the one, 1..n_in the instance's inputs through its row of the
# input map, then its locals from base); a variable is nonzero when any of its four words is.


@njit(cache=True, inline="always")
def _gidx(slot, irow, inflat, base, n_in):
    """Global index of ``slot`` for the instance whose inputs start at ``inflat[irow]`` and
    whose locals start at ``base`` (for the rare ops; the hot paths spell it out, see above)."""
    if slot == 0:
        return 0
    if slot <= n_in:
        return inflat[irow + slot - 1]
    return base + slot - 1 - n_in


@njit(cache=True, inline="always")
def _lin(z, args, start, n, consts, coff, irow, inflat, base, n_in):
    """A linear combination of the instance's slots (pairs of slot, constant index). Inlined: as
    a call, each of the ~4 M a porep-32g partition makes counted its array arguments' references
    on entry and return (one thread 2.74 -> 2.58 s, two 2.12 -> 2.09 s with it inlined)."""
    acc = FR_ZERO
    for k in range(n):
        s = args[start + 2 * k]
        g = base + s - 1 - n_in if s > n_in else (inflat[irow + s - 1] if s else 0)
        v = (z[g, 0], z[g, 1], z[g, 2], z[g, 3])
        if (v[0] | v[1] | v[2] | v[3]) == _U0:
            continue
        j = coff + args[start + 2 * k + 1]
        c = (consts[j, 0], consts[j, 1], consts[j, 2], consts[j, 3])
        if v == FR_ONE:
            acc = fr_add(acc, c)
        else:
            acc = fr_add(acc, fr_mul(c, v))
    return acc


@njit(cache=True)
def _poseidon(z, out, arity, args, a0, irow, inflat, base, n_in, pool, meta):
    t = meta[arity, 0]
    s = np.empty((t, 4), np.uint64)
    s[0] = pool[meta[arity, 5]]
    for i in range(arity):
        s[1 + i] = z[_gidx(args[a0 + i], irow, inflat, base, n_in)]
    w = permute(s, arity, pool, meta, z, _gidx(out, irow, inflat, base, n_in), True)
    z[w] = s[1]


# A wave is cut into this many slices, each holding its share of every stage's instances in runs
# (a run of one stage keeps its code and its locals together): any contiguous split of the wave
# among up to a few dozen threads then costs each about the same.
_SPREAD = 64

# stage table columns: offset of the stage's instances in the bases array, inputs, locals,
# offset of its input map in inflat, first op, ops, first constant, and for a template that runs
# sliced (engine.circuit.bitslice) the offset and count in the slots array of the locals it
# writes, then of those of them that another stage or a named region reads
_S_BOFF, _S_N_IN, _S_N_LOC, _S_IN_OFF, _S_OP0, _S_NOPS, _S_COFF, _S_WR0, _S_NWR, _S_EX0, _S_NEX = range(11)


@njit(cache=True)
def _run_instance(z, stage, inst, stages, ops, args, consts, inflat, bases, pool, meta):
    """Run the witness program of one instance of one stage."""
    base = bases[stages[stage, _S_BOFF] + inst]
    n_in = stages[stage, _S_N_IN]
    irow = stages[stage, _S_IN_OFF] + inst * n_in
    coff = stages[stage, _S_COFF]
    op0 = stages[stage, _S_OP0]
    for k in range(op0, op0 + stages[stage, _S_NOPS]):
        code = ops[k, 0]
        out = ops[k, 1]
        a0 = ops[k, 2]
        na = ops[k, 3]
        if 2 <= code <= 6:  # XOR, AND, CH, MAJ (one bit of two or three), ADDW (words of 32 bits)
            if code == 6:
                nbits = args[a0]
                total = np.uint64(args[a0 + 1])
                n = 32 * args[a0 + 2]
                p = a0 + 3
            else:
                n = 3 if code >= 4 else 2
                p = a0
                total = _U0
            word = _U0
            # Every data-dependent choice below is arithmetic, not a branch: the bits are random,
            # so a branch on one mispredicts half the time. (Numba's cached copy of this function
            # compiled the `if` form as branches and ran 35 % slower than a fresh compile's cmovs.)
            for i in range(n):  # the operands' bits, each possibly negated (the code's low bit)
                c = args[p + i]
                s = c >> 1
                g = base + s - 1 - n_in if s > n_in else (inflat[irow + s - 1] if s else 0)
                bit = np.uint64((z[g, 0] | z[g, 1] | z[g, 2] | z[g, 3]) != _U0) ^ np.uint64(c & 1)
                word |= bit << np.uint64(i & 31)
                if code == 6 and i & 31 == 31:
                    total += word
                    word = _U0
            if code != 6:
                x = word & _U1
                y = (word >> _U1) & _U1
                w = word >> np.uint64(2)
                if code == 2:
                    total = x ^ y
                elif code == 3:
                    total = x & y
                elif code == 4:
                    total = (x & y) | ((x ^ _U1) & w)
                else:
                    total = (x & y) | (x & w) | (y & w)
                nbits = 1
            g = base + out - 1 - n_in if out > n_in else (inflat[irow + out - 1] if out else 0)
            for i in range(nbits):
                mask = _U0 - ((total >> np.uint64(i)) & _U1)  # all ones for a 1
                for w4 in range(4):
                    z[g + i, w4] = FR_ONE[w4] & mask
        elif code == 0:  # LIN
            g = _gidx(out, irow, inflat, base, n_in)
            fr_store(z, g, _lin(z, args, a0, na // 2, consts, coff, irow, inflat, base, n_in))
        elif code == 1:  # MUL
            n1 = args[a0]
            n2 = args[a0 + 1]
            n3 = args[a0 + 2]
            p = a0 + 3
            x = _lin(z, args, p, n1, consts, coff, irow, inflat, base, n_in)
            y = _lin(z, args, p + 2 * n1, n2, consts, coff, irow, inflat, base, n_in)
            w = _lin(z, args, p + 2 * (n1 + n2), n3, consts, coff, irow, inflat, base, n_in)
            g = _gidx(out, irow, inflat, base, n_in)
            fr_store(z, g, fr_add(fr_mul(x, y), w))
        elif code == 7:  # UNPACK
            nbits = args[a0]
            v = fr_from_mont(_lin(z, args, a0 + 1, (na - 1) // 2, consts, coff, irow, inflat, base, n_in))
            g = _gidx(out, irow, inflat, base, n_in)
            for i in range(nbits):
                mask = _U0 - ((v[i // 64] >> np.uint64(i % 64)) & _U1)
                for w4 in range(4):
                    z[g + i, w4] = FR_ONE[w4] & mask
        elif code == 8:  # POSEIDON
            _poseidon(z, out, args[a0], args, a0 + 1, irow, inflat, base, n_in, pool, meta)


@njit(cache=True)
def _run_unit(z, known, stage, inst, lanes, stages, ops, args, consts, inflat, bases, pool, meta, slots):
    """One instance through the interpreter (lanes 0), or ``lanes`` instances from ``inst`` on
    of a bit-only stage at once."""
    if lanes == 0:
        _run_instance(z, stage, inst, stages, ops, args, consts, inflat, bases, pool, meta)
        return
    n_in = stages[stage, _S_N_IN]
    run_sliced(z, known, lanes, n_in, stages[stage, _S_N_LOC], stages[stage, _S_IN_OFF] + inst * n_in,
               stages[stage, _S_BOFF] + inst, stages[stage, _S_OP0], stages[stage, _S_NOPS], ops, args,
               inflat, bases, slots, stages[stage, _S_WR0], stages[stage, _S_NWR], stages[stage, _S_EX0],
               stages[stage, _S_NEX])


@njit(cache=True, parallel=True)
def _run_units_parallel(z, known, units, stages, ops, args, consts, inflat, bases, pool, meta, slots):
    for j in prange(units.shape[0]):
        _run_unit(z, known, units[j, 0], units[j, 1], units[j, 2], stages, ops, args, consts, inflat, bases,
                  pool, meta, slots)


@njit(cache=True)
def _run_units_serial(z, known, units, stages, ops, args, consts, inflat, bases, pool, meta, slots):
    for j in range(units.shape[0]):
        _run_unit(z, known, units[j, 0], units[j, 1], units[j, 2], stages, ops, args, consts, inflat, bases,
                  pool, meta, slots)


@dataclass
class WitnessProgram:
    """All templates' programs concatenated, a stage table, and the stages' instances grouped in
    waves, one per depth: every instance of a wave depends only on earlier waves, so a wave
    runs in parallel."""

    ops: np.ndarray  # int64[n_ops, 4], arg offsets made global
    args: np.ndarray
    consts: np.ndarray  # uint64[n, 4]
    stages: np.ndarray  # int64[n_stages, 11]: bases_off, n_in, n_loc, in_off, op0, n_ops, const_off, and slots
    inflat: np.ndarray  # int64: every stage's input map, flattened
    bases: np.ndarray  # int64: every stage's instance bases, one after the other
    waves: list[np.ndarray]  # int64[n_items, 2]: (stage, instance), each stage's spread evenly
    costs: list[int] = field(default_factory=list)  # ops per wave
    slots: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))  # sliced templates' written locals
    counts: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))  # instances per stage
    _units: dict[int, list[np.ndarray]] = field(default_factory=dict)

    def units(self, threads: int, sliced: bool = True) -> list[np.ndarray]:
        """Per wave, its work for ``threads`` threads as int64[n, 3] rows (stage, first instance,
        lanes): a bit-only stage's instances in groups of up to bitslice.LANES (about two groups a
        thread, so that the threads share the stage; one group on one thread), every other
        stage's instances one at a time (lanes 0); spread over the wave as its items are. Not
        ``sliced``: every instance alone, the wave's items in their order."""
        key = threads if sliced else 0
        got = self._units.get(key)
        if got is None:
            bit_only = (self.stages[:, _S_NWR] > 0) & sliced
            got = self._units[key] = [_wave_units(w, self.counts, bit_only, threads) for w in self.waves]
        return got


def witness_program(shape: CircuitShape) -> WitnessProgram:
    """Flatten the shape's templates and stages; the stages' depths are the waves."""
    cached = getattr(shape, "_witness_program", None)
    if cached is not None:
        return cached
    t_op0, t_c0 = [], []
    ops_l, args_l, consts_l = [], [], []
    n_op = n_arg = n_c = 0
    for t in shape.templates:
        t_op0.append(n_op)
        t_c0.append(n_c)
        o = t.ops.copy()
        o[:, 2] += n_arg
        ops_l.append(o)
        args_l.append(t.args)
        consts_l.append(t.consts.reshape(-1, 4))
        n_op += len(t.ops)
        n_arg += len(t.args)
        n_c += len(t.consts)
    n_st = len(shape.stages)
    tmpl = np.fromiter((st.template for st in shape.stages), np.int64, n_st)
    count = np.fromiter((st.count for st in shape.stages), np.int64, n_st)
    depth = np.fromiter((st.depth for st in shape.stages), np.int64, n_st)
    n_in = np.array([t.n_in for t in shape.templates], np.int64)[tmpl]
    n_ops = np.array([len(t.ops) for t in shape.templates], np.int64)[tmpl]
    stages = np.zeros((n_st, 11), np.int64)
    stages[:, _S_BOFF] = np.cumsum(count) - count
    stages[:, _S_N_IN] = n_in
    stages[:, _S_N_LOC] = np.array([t.n_loc for t in shape.templates], np.int64)[tmpl]
    stages[:, _S_IN_OFF] = np.cumsum(count * n_in) - count * n_in
    stages[:, _S_OP0] = np.array(t_op0, np.int64)[tmpl]
    stages[:, _S_NOPS] = n_ops
    stages[:, _S_COFF] = np.array(t_c0, np.int64)[tmpl]
    in_l = [np.ascontiguousarray(st.inmap, np.int64).reshape(-1) for st in shape.stages]
    base_l = [np.asarray(st.bases, np.int64) for st in shape.stages]
    inflat = np.concatenate(in_l) if in_l else np.zeros(0, np.int64)
    wr = [written_locals(t) for t in shape.templates]
    ex = _read_elsewhere(shape, wr, inflat)
    lists = [x for w, e in zip(wr, ex) for x in ((w, e) if w is not None else ())]
    ends = np.cumsum([0] + [len(x) for x in lists])
    k = 0
    for ti, w in enumerate(wr):
        if w is not None:
            m = tmpl == ti
            stages[m, _S_WR0], stages[m, _S_NWR] = ends[k], len(lists[k])
            stages[m, _S_EX0], stages[m, _S_NEX] = ends[k + 1], len(lists[k + 1])
            k += 2
    # one wave per depth: (stage, instance) items, each stage's instances spread evenly over its
    # wave in _SPREAD slices. Why: a parallel loop's threads take contiguous shares of the range (numba with the omp
    # layer, chunk size or not), and waves mix dear instances with cheap ones (porep-32g: 216
    # SHA-256 blocks of ~20 K ops beside 252 inserts of 22), so grouped by stage one thread got
    # every block and a second thread gained nothing (2-core, one partition: 2.63 s on one
    # thread, 2.08 on two grouped, 1.37 shuffled)
    waves: list[np.ndarray] = []
    costs: list[int] = []
    if n_st:
        order = np.lexsort((-n_ops, depth))
        c_o = count[order]
        start = np.cumsum(c_o) - c_o
        items = np.empty((int(c_o.sum()), 2), np.int64)
        items[:, 0] = np.repeat(order, c_o)
        items[:, 1] = np.arange(len(items), dtype=np.int64) - np.repeat(start, c_o)
        first = np.concatenate([[0], np.flatnonzero(np.diff(depth[order])) + 1])
        waves = [w[np.argsort((w[:, 1] * _SPREAD) // count[w[:, 0]], kind="stable")]
                 for w in np.split(items, start[first[1:]])]
        costs = np.add.reduceat(n_ops[order] * c_o, first).tolist()
    prog = WitnessProgram(
        ops=np.concatenate(ops_l) if ops_l else np.zeros((0, 4), np.int64),
        args=np.concatenate(args_l) if args_l else np.zeros(0, np.int64),
        consts=np.ascontiguousarray(np.concatenate(consts_l) if consts_l else np.zeros((0, 4), np.uint64)),
        stages=stages,
        inflat=inflat,
        bases=np.concatenate(base_l) if base_l else np.zeros(0, np.int64),
        waves=waves,
        costs=costs,
        slots=np.concatenate(lists or [np.zeros(0, np.int64)]).astype(np.int64),
        counts=count,
    )
    shape._witness_program = prog  # type: ignore[attr-defined]
    return prog


def _read_elsewhere(shape: CircuitShape, written: list[np.ndarray | None], inflat: np.ndarray) -> list[np.ndarray]:
    """Per template that runs sliced, the written local slots that some instance of it has read
    by another stage (through the input maps) or named in a region: the only ones a witness
    that keeps the rest as bits apart (witness_numba's ``known``) must still put in z."""
    out = [np.zeros(0, np.int64) for _ in written]
    sliced = [i for i, st in enumerate(shape.stages) if written[st.template] is not None]
    if not sliced:
        return out
    read = np.concatenate([inflat] + [np.asarray(r, np.int64).reshape(-1) for r in shape.regions.values()])
    first = np.concatenate([np.asarray(shape.stages[i].bases, np.int64) for i in sliced])
    owner = np.repeat(np.array(sliced), [shape.stages[i].count for i in sliced])
    order = np.argsort(first, kind="stable")
    first, owner = first[order], owner[order]
    at = np.searchsorted(first, read, side="right") - 1
    ok = at >= 0
    read, at = read[ok], at[ok]
    st = owner[at]
    tmpl = np.array([shape.stages[i].template for i in range(len(shape.stages))], np.int64)[st]
    n_in = np.array([t.n_in for t in shape.templates], np.int64)[tmpl]
    n_loc = np.array([t.n_loc for t in shape.templates], np.int64)[tmpl]
    off = read - first[at]
    inside = off < n_loc
    slot, tmpl = off[inside] + 1 + n_in[inside], tmpl[inside]
    for t, w in enumerate(written):
        if w is not None:
            hit = np.zeros(1 + shape.templates[t].n_in + shape.templates[t].n_loc, bool)
            hit[slot[tmpl == t]] = True
            out[t] = w[hit[w]]
    return out


def _wave_units(items: np.ndarray, count: np.ndarray, sliced: np.ndarray, threads: int) -> np.ndarray:
    """A wave's units for ``threads`` threads (WitnessProgram.units): its items of stages not
    ``sliced`` with lanes 0, in the wave's (spread) order, and the sliced stages' groups merged
    into that order."""
    alone = ~sliced[items[:, 0]]
    rows = [np.column_stack([items[alone], np.zeros(int(alone.sum()), np.int64)])]
    for st in np.unique(items[~alone, 0]):
        c = int(count[st])
        lanes = min(LANES, -(-c // (1 if threads == 1 else 2 * threads)))
        first = np.arange(0, c, lanes)
        rows.append(np.stack([np.full(len(first), st), first, np.minimum(lanes, c - first)], 1))
    units = np.concatenate(rows).astype(np.int64)
    if len(rows) == 1:
        return units
    spread = (units[:, 1] * _SPREAD) // count[units[:, 0]]
    return units[np.argsort(spread, kind="stable")]


_NONE_KNOWN = np.zeros(0, np.uint8)  # every bit to z
PARALLEL_MIN_OPS = 20000  # below this a wave runs on one thread: a parallel launch costs more


def witness_numba(shape: CircuitShape, z: np.ndarray, parallel: bool | None = None,
                  sliced: bool = True, known: np.ndarray | None = None) -> np.ndarray:
    """Complete ``z`` (from :func:`fill_inputs`) in place, wave by wave; returns z. A wave of
    more than one instance runs on every thread where numba has several and ``parallel`` says
    so; None decides per wave by its cost (:data:`PARALLEL_MIN_OPS`). With ``sliced`` (the
    default) bit-only stages run in groups of instances (engine.circuit.bitslice); without it,
    every instance through the interpreter (the same z).

    With ``known`` (uint8[num_vars], kept with z between witnesses of the circuit, 2 where the
    witness leaves the value in z), the sliced stages write each bit they compute there as 0
    or 1 instead of in z, and in z only the ones another stage reads: what the compact form
    (engine.groth16.compact.write_compact, given the same ``known``) needs, without writing and
    reading back Montgomery rows for every bit (porep-32g: ~4 GB a partition)."""
    if known is not None and (not sliced or known.shape != (z.shape[0],) or known.dtype != np.uint8):
        raise ValueError(f"known must be uint8[{z.shape[0]}] with sliced stages, got {known.dtype}{list(known.shape)}")
    pool, meta = poseidon_tables()
    prog = witness_program(shape)
    kept = _NONE_KNOWN if known is None else known
    threads = numba.get_num_threads() if parallel is not False else 1
    for units, cost in zip(prog.units(threads, sliced), prog.costs):
        wide = cost >= PARALLEL_MIN_OPS if parallel is None else parallel
        run = _run_units_parallel if len(units) > 1 and wide and threads > 1 else _run_units_serial
        run(z, kept, units, prog.stages, prog.ops, prog.args, prog.consts, prog.inflat, prog.bases, pool, meta,
            prog.slots)  # contiguous shares: see the waves' spread
    return z


# ---------------------------------------------------------------------------- Python oracle


def _py_stage(zi: list[int], t: Template, st: Stage) -> None:
    consts = from_mont_fr(t.consts) if len(t.consts) else []
    ops = t.ops.tolist()
    args = t.args.tolist()
    r = R_MOD
    for inst in range(st.count):
        inrow = st.inmap[inst].tolist()
        base = int(st.bases[inst])

        def g(slot: int) -> int:
            if slot == 0:
                return 0
            if slot <= t.n_in:
                return inrow[slot - 1]
            return base + slot - 1 - t.n_in

        def bit(code: int) -> int:
            return int(zi[g(code >> 1)] != 0) ^ (code & 1)

        def lin(p: int, n: int) -> int:
            return sum(consts[args[p + 2 * k + 1]] * zi[g(args[p + 2 * k])] for k in range(n)) % r

        for code, out, a0, na in ops:
            a = args[a0 : a0 + na]
            if code == OP_XOR:
                zi[g(out)] = bit(a[0]) ^ bit(a[1])
            elif code == OP_AND:
                zi[g(out)] = bit(a[0]) & bit(a[1])
            elif code == OP_CH:
                zi[g(out)] = bit(a[1]) if bit(a[0]) else bit(a[2])
            elif code == OP_MAJ:
                zi[g(out)] = int(bit(a[0]) + bit(a[1]) + bit(a[2]) >= 2)
            elif code == OP_ADDW:
                nbits, k, nw = a[0], a[1], a[2]
                total = k + sum(bit(a[3 + 32 * w + i]) << i for w in range(nw) for i in range(32))
                for i in range(nbits):
                    zi[g(out) + i] = (total >> i) & 1
            elif code == OP_LIN:
                zi[g(out)] = lin(a0, na // 2)
            elif code == OP_MUL:
                n1, n2, n3 = a[0], a[1], a[2]
                p = a0 + 3
                zi[g(out)] = (lin(p, n1) * lin(p + 2 * n1, n2) + lin(p + 2 * (n1 + n2), n3)) % r
            elif code == OP_UNPACK:
                v = lin(a0 + 1, (na - 1) // 2)
                for i in range(a[0]):
                    zi[g(out) + i] = (v >> i) & 1
            elif code == OP_POSEIDON:
                from engine.circuit.poseidon_params import poseidon_hash

                wires: list[int] = []
                h = poseidon_hash([zi[g(s)] for s in a[1:]], wires)
                w = g(out)
                zi[w : w + len(wires)] = wires
                zi[w + len(wires)] = h
            else:
                raise ValueError(f"unknown witness opcode {code}")


def witness_python(shape: CircuitShape, public: list[int], free: Mapping[str, object]) -> list[int]:
    """The full witness as Python ints (canonical), computed without numba or Montgomery."""
    z = fill_inputs(shape, public, free)
    zi = from_mont_fr(z)
    for st in sorted(shape.stages, key=lambda st: st.depth):  # producers before consumers
        _py_stage(zi, shape.templates[st.template], st)
    return zi
