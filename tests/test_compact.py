"""The compact resident matrices and witness: their reference evaluation (fed exactly the arrays
that are uploaded) equals the CSR evaluation bit for bit, on random circuits and witnesses and on
real porep circuits; sizes against the plain forms; bad input refused in one line."""

from __future__ import annotations

import os
import random
import secrets

import numpy as np
import pytest

from engine.circuit.porep import build_porep, generate_partitions, porep_witness
from engine.groth16.compact import (
    COEF_NEG_ONE,
    COEF_ONE,
    CompactError,
    compact_r1cs,
    compact_witness,
    evaluate_compact,
    expand_witness,
    sizes,
)
from engine.groth16.r1cs import CSR, R1CS
from engine.synthesis import evaluate, first_unsatisfied
from kernels.constants import R_MOD
from kernels.cpu.convert import from_mont_fr, to_mont_fr

heavy = pytest.mark.skipif(not os.environ.get("SEALTOP_HEAVY"), reason="set SEALTOP_HEAVY=1 (minutes of tracing)")


def _random_csr(rng: random.Random, rows: int, cols: int, pool: list[int]) -> CSR:
    indptr, idx, vals = [0], [], []
    for _ in range(rows):
        k = rng.randrange(0, min(7, cols + 1))  # a row cannot name more columns than exist
        picked = rng.sample(range(cols), k)
        idx += picked
        vals += [rng.choice(pool) for _ in picked]
        indptr.append(len(idx))
    data = to_mont_fr(vals) if vals else np.zeros((0, 4), np.uint64)
    return CSR(np.array(indptr, np.int64), np.array(idx, np.int32), np.asarray(data, np.uint64).reshape(-1, 4))


def _random_case(rng: random.Random) -> tuple[R1CS, np.ndarray]:
    """A random R1CS (coefficients from a small pool with ±1 and random field values) and a
    witness mixing 0, 1 and general values."""
    rows, nv = rng.randrange(1, 400), rng.randrange(2, 300)
    pool = [1, R_MOD - 1, 2, R_MOD - 2] + [rng.randrange(R_MOD) for _ in range(rng.randrange(0, 40))]
    r = R1CS(1, nv - 1, *(_random_csr(rng, rows, nv, pool) for _ in range(3)))
    zi = [1] + [rng.choice([0, 1, 1, 0, 0, rng.randrange(R_MOD)]) for _ in range(nv - 1)]
    return r, np.asarray(to_mont_fr(zi), np.uint64)


def _same(r: R1CS, z: np.ndarray) -> None:
    cm, w = compact_r1cs(r), compact_witness(z)
    got = evaluate_compact(cm, w)
    want = evaluate(r, z)
    for g, e in zip(got, want):
        assert g.dtype == np.uint64 and np.array_equal(g, e)


def test_random_circuits_equal_csr_bit_for_bit() -> None:
    rng = random.Random(secrets.randbits(64))
    for _ in range(25):
        r, z = _random_case(rng)
        _same(r, z)
        assert np.array_equal(expand_witness(compact_witness(z)), z)


def test_table_and_dtypes() -> None:
    rng = random.Random(secrets.randbits(64))
    r, z = _random_case(rng)
    cm = compact_r1cs(r)
    assert from_mont_fr(cm.coefs[[COEF_ONE, COEF_NEG_ONE]]) == [1, R_MOD - 1]
    table = [bytes(row) for row in cm.coefs]
    assert len(set(table)) == len(table)  # distinct entries
    for m, csr in ((cm.A, r.A), (cm.B, r.B), (cm.C, r.C)):
        assert m.rowptr.dtype == np.uint32 and m.cols.dtype == np.int32 and m.cidx.dtype == np.uint16
        assert np.array_equal(cm.coefs[m.cidx], csr.data)  # each nonzero's own coefficient
    w = compact_witness(z)
    assert w.gidx.dtype == np.int32 and np.all(np.diff(w.gidx) > 0)


def test_a_wrong_compact_form_is_caught() -> None:
    """Negative cases: the comparison detects a changed coefficient index and a flipped bit."""
    rng = random.Random(secrets.randbits(64))
    while True:
        r, z = _random_case(rng)
        if r.A.nnz and np.any(from_mont_fr(z[r.A.indices]) != 0):
            break
    cm, w = compact_r1cs(r), compact_witness(z)
    want = evaluate(r, z)[0]
    # a nonzero whose variable is not 0: changing its coefficient changes that row
    k = next(k for k in range(r.A.nnz) if from_mont_fr(z[r.A.indices[k : k + 1]])[0] != 0)
    cidx = cm.A.cidx
    old = int(cidx[k])
    cidx[k] = (old + 1) % len(cm.coefs)
    assert not np.array_equal(evaluate_compact(cm, w)[0], want)
    cidx[k] = old
    assert np.array_equal(evaluate_compact(cm, w)[0], want)
    # flipping a 0/1 value bit changes the witness it stands for
    i = next((i for i in range(1, w.num_vars) if not (w.general[i >> 3] >> (i & 7)) & 1), None)
    if i is not None:
        w.bits[i >> 3] ^= np.uint8(1 << (i & 7))
        assert not np.array_equal(expand_witness(w), z)


def test_bad_input_is_one_line() -> None:
    rng = random.Random(secrets.randbits(64))
    r, z = _random_case(rng)
    cm = compact_r1cs(r)
    with pytest.raises(CompactError, match="^the witness has .* variables$"):
        evaluate_compact(cm, compact_witness(np.zeros((r.num_vars + 1, 4), np.uint64)))
    with pytest.raises(CompactError, match="must be uint64"):
        compact_witness(np.zeros((3, 4), np.int64))
    many = to_mont_fr(list(range(2, 2 + 70_000)))
    csr = CSR(np.array([0, len(many)], np.int64), np.zeros(len(many), np.int32), np.asarray(many, np.uint64))
    empty = CSR(np.array([0, 0], np.int64), np.zeros(0, np.int32), np.zeros((0, 4), np.uint64))
    with pytest.raises(CompactError, match="distinct coefficients"):
        compact_r1cs(R1CS(1, 0, csr, empty, empty))


def _porep_case(preset: str, tmp_path) -> None:
    shape = build_porep(preset, tmp_path)
    r = shape.r1cs
    _, parts = generate_partitions(preset, secrets.randbelow(2**32))
    _, z = porep_witness(shape, parts[0])
    cm, w = compact_r1cs(r), compact_witness(z)
    a, b, c = evaluate_compact(cm, w)
    ea, eb, ec = evaluate(r, z)
    assert np.array_equal(a, ea) and np.array_equal(b, eb) and np.array_equal(c, ec)
    assert first_unsatisfied(a, b, c) < 0
    s = sizes(cm, w)
    # 6 bytes per nonzero, 4 per row pointer, 32 per table entry; the witness 2 bits per value
    # plus 36 per general one
    n = r.num_constraints
    assert s["matrix_bytes"] == 6 * r.nnz + 3 * 4 * (n + 1) + 32 * len(cm.coefs)
    assert s["witness_bytes"] == 2 * ((r.num_vars + 7) // 8) + 36 * len(w.gidx)
    assert s["witness_bytes"] < s["witness_bytes_plain"] / 20
    print(f"\n{preset}: {s}")
    # a tampered witness gives a different a/b/c through both paths, the same difference
    i = int(w.gidx[len(w.gidx) // 2]) if len(w.gidx) else r.num_inputs
    z2 = z.copy()
    z2[i] = to_mont_fr([12345])[0]
    got, want = evaluate_compact(cm, compact_witness(z2)), evaluate(r, z2)
    assert all(np.array_equal(g, e) for g, e in zip(got, want))
    assert first_unsatisfied(*got) >= 0


@pytest.mark.slow
def test_porep_small_equals_csr(tmp_path) -> None:
    _porep_case("small", tmp_path)


@pytest.mark.slow
@heavy
def test_porep_medium_equals_csr(tmp_path) -> None:
    _porep_case("medium", tmp_path)
