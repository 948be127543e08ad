"""Bit-only templates run in groups of instances (engine.circuit.bitslice) against the Python
oracle (engine.circuit.witness.witness_python) and the one-instance interpreter: random bit
programs over many instances (groups of every width, a last group short, negations, the
constant one, word additions with constants and carries past 32 bits, general values read as
bits), then Filecoin's 2 KiB C2 circuit whole."""

from __future__ import annotations

import random
import secrets

import numba
import numpy as np
import pytest

from engine.circuit.bitslice import written_locals
from engine.circuit.builder import CircuitBuilder
from engine.circuit.template import OP_ADDW, OP_AND, OP_CH, OP_LIN, OP_MAJ, OP_XOR, Tracer
from engine.circuit.witness import fill_inputs, witness_numba, witness_program, witness_python
from engine.groth16.compact import WitnessLayout, write_compact
from kernels.constants import R_MOD
from kernels.cpu.convert import from_mont_fr


def _random_bit_template(rng: random.Random, n_in: int, n_ops: int) -> Tracer:
    """A program of random bit ops and word additions over the inputs, the one and earlier
    outputs, every operand negated or not at random."""
    t = Tracer("random-bits", n_in)
    have = list(range(0, 1 + n_in))  # the one and the inputs

    def code() -> int:
        return 2 * rng.choice(have) + rng.getrandbits(1)

    for _ in range(n_ops):
        op = rng.choice([OP_XOR, OP_AND, OP_CH, OP_MAJ, OP_ADDW])
        if op == OP_ADDW:
            nbits, words = rng.choice([32, 33, 35, 40, 64]), rng.randint(1, 5)
            out = t.alloc(nbits)
            t.emit(op, out, [nbits, rng.getrandbits(rng.choice([8, 32, 34])), words]
                   + [code() for _ in range(32 * words)])
            have += range(out, out + nbits)
        else:
            out = t.alloc()
            t.emit(op, out, [code() for _ in range(3 if op in (OP_CH, OP_MAJ) else 2)])
            have.append(out)
    t.output(have[-1])
    return t


def _random_circuit(rng: random.Random, count: int, sums: bool = False):
    """Two random templates, ``count`` instances of the first over free inputs and ``count // 3``
    of the second over the first's outputs: two waves. With ``sums``, a third wave of field
    sums (not bit-only) over the second's outputs."""
    first = _random_bit_template(rng, 40, 300).finish()
    second = _random_bit_template(rng, 6, 200).finish()
    b = CircuitBuilder("random-bits", 0)
    free = b.free("x", (count, first.n_in))
    (outs,) = b.place(first, free)
    pick = np.array([rng.sample(range(count), second.n_in) for _ in range(count // 3)], np.int64)
    (last,) = b.place(second, outs[pick])
    if sums:
        t = Tracer("sum", 3)
        out = t.alloc()
        t.emit(OP_LIN, out, t.lc_args({1: rng.randrange(R_MOD), 2: 3, 3: rng.randrange(R_MOD)}))
        t.output(out)
        b.place(t.finish(), last[np.array([rng.sample(range(len(last)), 3) for _ in range(5)], np.int64)])
    return b.compile(matrices=False)


@pytest.mark.parametrize("threads", [1, 2])
def test_random_bit_programs_equal_the_oracle_and_the_interpreter(threads: int) -> None:
    rng = random.Random(secrets.randbits(64))
    count = rng.choice([97, 130, 200])  # groups of one width and a short last one
    shape = _random_circuit(rng, count)
    assert all(written_locals(t) is not None for t in shape.templates)
    # mostly bits, some general values (read as 1 where nonzero, as the interpreter reads them)
    x = [rng.choice([0, 1, 1, 0, rng.randrange(2, R_MOD)]) for _ in range(shape.regions["x"].size)]
    want = witness_python(shape, [], {"x": x})
    before = numba.get_num_threads()
    numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))  # type: ignore[attr-defined]
    try:
        units = witness_program(shape).units(numba.get_num_threads())
        assert max(int(u[:, 2].max()) for u in units) > 1  # groups of several instances ran
        stale = np.full((shape.num_vars, 4), 0xDEADBEEF, np.uint64)
        sliced = witness_numba(shape, fill_inputs(shape, [], {"x": x}, stale), parallel=threads > 1)
        plain = witness_numba(shape, fill_inputs(shape, [], {"x": x}), parallel=threads > 1, sliced=False)
    finally:
        numba.set_num_threads(before)
    assert from_mont_fr(sliced) == want
    assert np.array_equal(sliced, plain)


def test_a_wrong_input_changes_the_sliced_witness_as_the_oracle_says() -> None:
    rng = random.Random(secrets.randbits(64))
    shape = _random_circuit(rng, 70)
    x = [rng.getrandbits(1) for _ in range(shape.regions["x"].size)]
    y = list(x)
    y[rng.randrange(len(y))] ^= 1
    zx = from_mont_fr(witness_numba(shape, fill_inputs(shape, [], {"x": x})))
    zy = from_mont_fr(witness_numba(shape, fill_inputs(shape, [], {"x": y})))
    assert zy == witness_python(shape, [], {"x": y})
    assert zx != zy


def test_templates_that_cannot_run_sliced_are_left_to_the_interpreter() -> None:
    t = Tracer("lin", 2)
    out = t.alloc()
    t.emit(OP_LIN, out, t.lc_args({1: 3, 2: 5}))
    assert written_locals(t.finish()) is None
    t = Tracer("reads-ahead", 2)
    a, b = t.alloc(), t.alloc()
    t.emit(OP_XOR, a, [2 * 1, 2 * b])  # b is read before any op writes it
    t.emit(OP_AND, b, [2 * 1, 2 * 2])
    assert written_locals(t.finish()) is None
    t = Tracer("wide", 1)
    out = t.alloc(65)
    t.emit(OP_ADDW, out, [65, 0, 1] + [2] * 32)
    assert written_locals(t.finish()) is None
    t = Tracer("fine", 1)
    out = t.alloc(33)
    t.emit(OP_ADDW, out, [33, 7, 1] + [2] * 32)
    assert written_locals(t.finish()).tolist() == list(range(2, 35))


def test_filecoins_2kib_witness_is_the_same_sliced_or_not() -> None:
    from engine.c2.assign import Partition, assign_mont
    from engine.c2.circuit import PRIVATE, build_c2
    from engine.c2.public import Statement, public_inputs
    from engine.c2.synthetic import synthetic_c1
    from engine.seal.registry import seal_proof

    proof = seal_proof("StackedDrg2KiBV1_1")
    circuit = build_c2(proof, matrices=False)
    prover = secrets.token_bytes(31) + b"\0"
    c1 = synthetic_c1(proof, secrets.randbelow(1 << 32), prover_id=prover, sector_id=5, partitions=1)
    statement = Statement(proof, prover, 5, c1.ticket, c1.seed, c1.comm_d, c1.comm_r)
    part = Partition.of_c1(c1, 0)
    prog = witness_program(circuit.shape)
    assert (prog.stages[:, -1] > 0).any()  # the SHA-256 stages run sliced
    sliced = circuit.witness_of(part, statement, np.full((circuit.shape.num_vars, 4), 3, np.uint64))
    free = {PRIVATE: assign_mont(circuit.plans[0], part)}
    plain = witness_numba(circuit.shape, fill_inputs(circuit.shape, public_inputs(statement, 0), free), sliced=False)
    assert np.array_equal(sliced, plain)


def _compact(z: np.ndarray, layout: WitnessLayout, known: np.ndarray | None = None) -> np.ndarray:
    buf = np.zeros(layout.words, np.uint64)
    write_compact(z, buf, layout, known)
    return buf


def test_bits_kept_apart_give_the_same_compact_witness() -> None:
    """witness_numba with ``known`` writes to z only the bits another stage reads; the compact
    form written from z and ``known`` is the one written from the whole z, across witnesses
    that reuse both buffers (stale rows left in z where the bits went apart)."""
    rng = random.Random(secrets.randbits(64))
    shape = _random_circuit(rng, rng.choice([64, 100]), sums=True)
    layout = WitnessLayout(shape.num_vars, shape.num_vars)
    z = np.full((shape.num_vars, 4), 0xDEADBEEF, np.uint64)
    known = np.full(shape.num_vars, 2, np.uint8)
    for _ in range(3):
        x = [rng.getrandbits(1) for _ in range(shape.regions["x"].size)]
        full = witness_numba(shape, fill_inputs(shape, [], {"x": x}))
        witness_numba(shape, fill_inputs(shape, [], {"x": x}, z), known=known)
        assert np.array_equal(_compact(z, layout, known), _compact(full, layout))
        assert not np.array_equal(z, full)  # the bits no stage reads stayed out of z
    assert set(np.unique(known).tolist()) == {0, 1, 2}
    with pytest.raises(ValueError, match="known"):
        witness_numba(shape, z, known=known, sliced=False)


def test_filecoins_2kib_compact_witness_with_bits_kept_apart() -> None:
    from engine.c2.assign import Partition
    from engine.c2.circuit import build_c2
    from engine.c2.public import Statement
    from engine.c2.synthetic import synthetic_c1
    from engine.seal.registry import seal_proof
    from engine.synthesis import general_capacity

    proof = seal_proof("StackedDrg2KiBV1_1")
    circuit = build_c2(proof, matrices=False)
    layout = WitnessLayout(circuit.shape.num_vars, general_capacity(circuit.shape))
    z = np.empty((circuit.shape.num_vars, 4), np.uint64)
    known = np.full(circuit.shape.num_vars, 2, np.uint8)
    for _ in range(2):
        prover = secrets.token_bytes(31) + b"\0"
        c1 = synthetic_c1(proof, secrets.randbelow(1 << 32), prover_id=prover, sector_id=5, partitions=1)
        statement = Statement(proof, prover, 5, c1.ticket, c1.seed, c1.comm_d, c1.comm_r)
        part = Partition.of_c1(c1, 0)
        circuit.witness_of(part, statement, z, known=known)
        full = circuit.witness_of(part, statement)
        assert np.array_equal(_compact(z, layout, known), _compact(full, layout))
    assert (known < 2).mean() > 0.9  # most of the witness is SHA-256 bits


def test_a_workers_c2_segments_with_bits_kept_apart_are_the_whole_witness_compacted():
    """synthesize_to_segment (a synthesis worker's task with abc_eval = "gpu") on a C2 preset,
    two jobs in a row through the same buffers: each segment is the compact form of the whole
    witness of its own job."""
    from engine.pipeline.circuits import resolve
    from engine.synthesis import compact_layout, synthesize_to_segment

    circuit = resolve("c2-2KiB", None)
    layout = compact_layout(circuit)
    buffers: dict[str, np.ndarray] = {}
    for seed in (secrets.randbelow(1 << 30), secrets.randbelow(1 << 30)):
        seg = np.zeros(layout.words, np.uint64)
        synthesize_to_segment(circuit, seed, 0, 1, seg, buffers)
        assert (buffers["c2-2KiB/known"] < 2).any()  # the sliced stages kept their bits apart
        assert np.array_equal(seg, _compact(circuit.witness(seed, 0, 1), layout))
