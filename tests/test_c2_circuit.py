"""Filecoin's C2 circuit as sealtop builds it (engine/c2): Filecoin's own counts, the gadgets
against independent oracles (hashlib, the plain Poseidon permutation in Python ints, the rows as
the Rust writes them), and real C1 outputs filling it."""

from __future__ import annotations

import dataclasses
import hashlib
import secrets

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.c2 import num
from engine.c2.circuit import StatementMismatch, build_c2
from engine.c2.cs import PRIVATE, Synth
from engine.c2.poseidon import poseidon_hash
from engine.c2.public import Statement, public_inputs
from engine.c2.sha256 import sha256
from engine.c2.stacked import synthesize
from engine.c2.synthetic import synthetic_c1
from engine.circuit.poseidon_params import poseidon_hash as plain_poseidon
from engine.circuit.witness import fill_inputs, witness_numba
from engine.groth16.compact import compact_r1cs
from engine.groth16.examples import WitnessError, check_witness
from engine.seal.circuit_count import (
    TEST_SHAPE,
    poseidon_constraints,
    sha256_count,
    stacked_constraints,
)
from engine.seal.registry import seal_proof
from engine.seal.sealer import seal_sector
from kernels.constants import R_MOD
from kernels.cpu.convert import from_mont_fr


def _witness(s: Synth, values: list[int]) -> tuple[object, np.ndarray]:
    shape = s.finish()
    z = witness_numba(shape, fill_inputs(shape, [], {PRIVATE: values}))
    return shape, z


def test_filecoins_test_shape_has_filecoins_counts():
    """rust-fil-proofs' stacked_circuit.rs (8 nodes, 2 layers, 1 challenge, tree 8-0-0):
    22 inputs and 1,199,620 constraints; the R1CS adds one x·0 = 0 row per input."""
    b = synthesize(TEST_SHAPE)
    r = b.shape.r1cs
    assert r.num_inputs == 22
    assert r.num_constraints - r.num_inputs == 1_199_620
    assert len(b.input_sources) == 21
    assert r.num_constraints == stacked_constraints(TEST_SHAPE).r1cs_constraints


@settings(max_examples=6, deadline=None)
@given(st.binary(min_size=0, max_size=130))
def test_sha256_gadget_is_sha256(msg):
    s = Synth.new("sha", 0)
    bits = [num.alloc_bit(s, ("m", i)) for i in range(8 * len(msg))]
    digest = sha256(s, bits)
    shape, z = _witness(s, [(msg[i // 8] >> (7 - i % 8)) & 1 for i in range(8 * len(msg))])
    check_witness(shape.r1cs, z)
    zi = from_mont_fr(z)
    got = [b.value if b.is_const else zi[b.slot] ^ b.neg for b in digest]
    assert bytes(sum(got[8 * k + j] << (7 - j) for j in range(8)) for k in range(32)) == hashlib.sha256(msg).digest()
    # bellperson's count for this message (engine/seal/circuit_count's model), beside the bits' rows
    assert shape.r1cs.num_constraints - 1 - 8 * len(msg) == sha256_count((2,) * (8 * len(msg)))[0]


@pytest.mark.parametrize("arity", [2, 8, 11])
def test_neptune_poseidon_circuit(arity):
    s = Synth.new("p", 0)
    h = poseidon_hash(s, [s.alloc(("x", i)) for i in range(arity)])
    vals = [secrets.randbelow(R_MOD) for _ in range(arity)]
    shape, z = _witness(s, vals)
    check_witness(shape.r1cs, z)
    assert from_mont_fr(z)[h] == plain_poseidon(vals)
    assert shape.r1cs.num_constraints - 1 == poseidon_constraints(arity)
    z[h, 0] ^= np.uint64(1)
    with pytest.raises(WitnessError):
        check_witness(shape.r1cs, z)


def _row(r, m: str, i: int) -> dict[int, int]:
    csr = getattr(r, m)
    lo, hi = int(csr.indptr[i]), int(csr.indptr[i + 1])
    return dict(zip(np.asarray(csr.indices[lo:hi]).tolist(), from_mont_fr(np.asarray(csr.data[lo:hi]))))


def test_rows_are_the_rusts():
    """A few rows spelt out as bellpepper writes them: AllocatedBit::alloc's (1 - b) * b = 0,
    to_bits_le's 0 * 0 = sum - num, inputize's input * 1 = num."""
    s = Synth.new("rows", 1)
    n = s.alloc(("n",))
    num.inputize(s, n, ("n",))
    b = num.alloc_bit(s, ("b",))
    bits = num.to_bits_le(s, n)
    shape = s.finish()
    r = shape.r1cs
    one, public = 0, 1
    assert (_row(r, "A", 0), _row(r, "B", 0), _row(r, "C", 0)) == ({public: 1}, {one: 1}, {n: 1})
    assert (_row(r, "A", 1), _row(r, "B", 1), _row(r, "C", 1)) == ({one: 1, b.slot: R_MOD - 1}, {b.slot: 1}, {})
    last = 2 + 255
    unpack = _row(r, "C", last)
    assert _row(r, "A", last) == {} and _row(r, "B", last) == {}
    assert unpack == {n: R_MOD - 1, **{bits[i].slot: 1 << i for i in range(255)}}


def _sealed_2k():
    proof = seal_proof("StackedDrg2KiBV1_1")
    prover, sector = secrets.token_bytes(31) + b"\0", secrets.randbelow(1 << 40)
    c1 = seal_sector(proof, secrets.token_bytes(secrets.randbelow(2000)), prover, sector,
                     secrets.token_bytes(32), secrets.token_bytes(32)).c1
    return proof, c1, Statement(proof, prover, sector, c1.ticket, c1.seed, c1.comm_d, c1.comm_r)


def test_a_sealed_2kib_sector_fills_the_circuit(tmp_path):
    proof, c1, statement = _sealed_2k()
    c = build_c2(proof, tmp_path)
    r = c.shape.r1cs
    assert r.num_constraints == 2_687_961 and r.num_inputs == 40
    z = c.witness(c1, 0, statement)
    check_witness(r, z)
    assert from_mont_fr(z[1:40]) == public_inputs(statement, 0)
    # the cache serves the same circuit and its sources, and the compact form's indices were
    # kept with it when it was built (a GPU prover maps them rather than making them)
    again = build_c2(proof, tmp_path)
    assert again.shape.from_cache and again.sources == c.sources
    (entry,) = {p.parent for p in tmp_path.rglob("compact_coefs.npy")}
    assert {f"{n}.npy" for n in ("A_cidx", "B_cidx", "C_cidx")} <= {p.name for p in entry.iterdir()}
    assert np.array_equal(np.load(entry / "B_cidx.npy", mmap_mode="r"),
                          compact_r1cs(again.shape.r1cs).B.cidx)
    # a statement for another sector, ticket or seed is refused before any proving
    for change in ({"sector_id": statement.sector_id + 1}, {"ticket": secrets.token_bytes(32)},
                   {"seed": secrets.token_bytes(32)}):
        with pytest.raises(StatementMismatch):
            c.witness(c1, 0, dataclasses.replace(statement, **change))
    # a tampered column label gives a witness that breaks the circuit
    v = c1.vanilla_proofs[0][1]
    rc = v.replica_column_proofs
    col = rc.drg_parents[2].column
    rows = list(col.rows)
    rows[0] = (int.from_bytes(rows[0], "little") ^ 1).to_bytes(32, "little")
    bad_p = dataclasses.replace(rc.drg_parents[2], column=dataclasses.replace(col, rows=tuple(rows)))
    bad_rc = dataclasses.replace(rc, drg_parents=rc.drg_parents[:2] + (bad_p,) + rc.drg_parents[3:])
    bad = dataclasses.replace(c1, vanilla_proofs=((c1.vanilla_proofs[0][0],
                                                    dataclasses.replace(v, replica_column_proofs=bad_rc)),))
    with pytest.raises(WitnessError):
        check_witness(r, c.witness(bad, 0, statement))


def test_the_witness_alone_needs_no_matrices(tmp_path):
    """build_c2(matrices=False), for timing synthesis where the matrices do not fit: the same
    witness as the full circuit's (which satisfies it), an R1CS of no rows, nothing cached."""
    proof, c1, statement = _sealed_2k()
    full = build_c2(proof, None)
    bare = build_c2(proof, tmp_path / "cache", matrices=False)
    assert bare.shape.r1cs.num_constraints == 0 and bare.shape.meta["witness_only"]
    assert bare.shape.num_vars == full.shape.num_vars
    assert not (tmp_path / "cache").exists()
    z = full.witness(c1, 0, statement)
    check_witness(full.shape.r1cs, z)
    assert np.array_equal(bare.witness(c1, 0, statement), z)
    # the matrix-less circuit still refuses a C1 output for another statement
    with pytest.raises(StatementMismatch):
        bare.witness(c1, 0, dataclasses.replace(statement, sector_id=statement.sector_id + 1))


def test_a_synthetic_8mib_sector_fills_the_circuit():
    proof = seal_proof("StackedDrg8MiBV1_1")
    prover = secrets.token_bytes(31) + b"\0"
    c1 = synthetic_c1(proof, secrets.randbelow(1 << 32), prover_id=prover, sector_id=9)
    c = build_c2(proof, None)
    assert c.shape.r1cs.num_constraints == 3_844_969
    check_witness(c.shape.r1cs, c.witness(c1, 0, Statement(proof, prover, 9, c1.ticket, c1.seed,
                                                           c1.comm_d, c1.comm_r)))
