"""The parallel QAP-at-tau kernels that setup (and the device-made key) use, against Python integers
and the serial product: the transposed product with the columns split among several threads
(a heavy column 0, as the constant one is in a circuit, and repeated columns in a row), the
chunked geometric sequence and the chunked batch inversion (zeros map to zero), the add and
subtract paths of ±1 coefficients against engine.groth16.sparse's plain products, and the
Lagrange basis in chunks."""

from __future__ import annotations

import secrets

import numpy as np
import pytest

from engine.groth16.qap import geometric, lagrange_at, transposed_product
from engine.groth16.r1cs import CSR
from engine.groth16.sparse import matvec_transposed
from kernels.constants import R_MOD, root_of_unity
from kernels.cpu.convert import from_mont_fr, to_mont_fr
from kernels.cpu.fr_vec import batch_inv


def _csr(rows: int, cols: int, rng: np.random.Generator, general: bool = True) -> tuple[CSR, list]:
    entries = []
    for _ in range(rows):
        k = int(rng.integers(0, 5))
        picks = [0] * int(rng.integers(0, 2)) + [int(c) for c in rng.integers(0, cols, size=k)]  # repeats allowed
        entries.append([(c, secrets.randbelow(R_MOD) if general else secrets.choice([1, R_MOD - 1, 2])) for c in picks])
    indptr = np.cumsum([0] + [len(r) for r in entries]).astype(np.int64)
    indices = np.array([c for r in entries for c, _ in r], np.int32)
    data = to_mont_fr([v for r in entries for _, v in r]).reshape(-1, 4)
    return CSR(indptr, indices, data), entries


@pytest.mark.parametrize("threads", [1, 2, 3, 7, 64])
def test_transposed_product_any_split_matches_python_ints(threads: int) -> None:
    rng = np.random.default_rng()
    rows, cols = 61, int(rng.integers(1, 40))
    m, entries = _csr(rows, cols, rng)
    x = [secrets.randbelow(R_MOD) for _ in range(rows)]
    want = [0] * cols
    for i, row in enumerate(entries):
        for c, v in row:
            want[c] = (want[c] + v * x[i]) % R_MOD
    got = transposed_product(m, to_mont_fr(x), cols, threads=threads)
    assert from_mont_fr(got) == want


def test_transposed_product_equals_the_serial_one_at_scale() -> None:
    rng = np.random.default_rng()
    rows, cols = 40_000, 30_000
    m, _ = _csr(rows, cols, rng, general=False)
    x = to_mont_fr([secrets.randbelow(R_MOD) for _ in range(rows + 3)])  # longer than the rows
    assert m.nnz >= 1 << 16  # the default split over numba's threads
    assert np.array_equal(transposed_product(m, x, cols + 5), matvec_transposed(m, x, cols + 5))
    with pytest.raises(ValueError):
        transposed_product(m, x[: rows - 1], cols)


def test_geometric_and_batch_inverse_in_chunks_match_python_ints() -> None:
    n = 4096 * 3 + 17  # several chunks and a short last one
    start, ratio = secrets.randbelow(R_MOD), secrets.randbelow(R_MOD)
    got = from_mont_fr(geometric(start, ratio, n))
    assert got[0] == start and got[-1] == start * pow(ratio, n - 1, R_MOD) % R_MOD
    assert all(got[i + 1] == got[i] * ratio % R_MOD for i in range(0, n - 1, 97))
    assert len(geometric(start, ratio, 0)) == 0
    vals = [secrets.randbelow(R_MOD) for _ in range(n)]
    for i in (0, 4095, 4096, n - 1):
        vals[i] = 0
    inv = from_mont_fr(batch_inv(to_mont_fr(vals)))
    assert all((v * w) % R_MOD == (1 if v else 0) for v, w in zip(vals, inv))
    assert inv[4096] == 0 and inv[4097] == pow(vals[4097], -1, R_MOD)


def _signed_csr(rows: int, cols: int, rng: np.random.Generator) -> CSR:
    """Coefficients +1, -1 (the add and subtract paths), 2, R^-1 (whose Montgomery form is the
    word 1: a one in the wrong form must take the product path) and random values."""
    r_inv = pow(2**256, -1, R_MOD)
    kinds = [1, R_MOD - 1, 2, r_inv]
    per_row = rng.integers(0, 6, size=rows)
    indptr = np.concatenate(([0], np.cumsum(per_row))).astype(np.int64)
    nnz = int(indptr[-1])
    indices = rng.integers(0, cols, size=nnz).astype(np.int32)
    vals = [kinds[k] if k < 4 else secrets.randbelow(R_MOD) for k in rng.integers(0, 6, size=nnz)]
    return CSR(indptr, indices, to_mont_fr(vals).reshape(-1, 4))


@pytest.mark.parametrize("threads", [None, 1, 5])
def test_transposed_product_signed_coefficients_match_the_reference(threads: int | None) -> None:
    rng = np.random.default_rng()
    rows, cols = 20_000, 3_000
    m = _signed_csr(rows, cols, rng)
    assert m.nnz >= 1 << 15
    xs = [secrets.randbelow(R_MOD) for _ in range(rows)]
    for i in rng.integers(0, rows, size=rows // 10):  # zeros and -1 among the row values
        xs[int(i)] = secrets.choice([0, R_MOD - 1, 1])
    x = to_mont_fr(xs)
    got = transposed_product(m, x, cols, threads=threads)
    assert np.array_equal(got, matvec_transposed(m, x, cols))
    # a +1 turned into -1 changes its column by -2·x[row], and only that column
    k = int(np.flatnonzero(np.all(m.data == to_mont_fr([1])[0], axis=1))[0])
    row = int(np.searchsorted(m.indptr, k, side="right") - 1)
    data = m.data.copy()
    data[k] = to_mont_fr([R_MOD - 1])[0]
    flipped = transposed_product(CSR(m.indptr, m.indices, data), x, cols, threads=threads)
    col = int(m.indices[k])
    diff = np.flatnonzero(np.any(flipped != got, axis=1))
    assert list(diff) == ([col] if xs[row] else [])
    assert from_mont_fr(flipped[col:col + 1])[0] == (from_mont_fr(got[col:col + 1])[0] - 2 * xs[row]) % R_MOD


def test_lagrange_basis_in_chunks_matches_python_ints() -> None:
    log_n = 14  # 2^14 points: several chunks on two or more threads
    n = 1 << log_n
    tau = secrets.randbelow(R_MOD)
    got = from_mont_fr(lagrange_at(tau, log_n))
    w = root_of_unity(log_n)
    c = (pow(tau, n, R_MOD) - 1) * pow(n, -1, R_MOD) % R_MOD
    for i in [0, 1, n // 2 - 1, n // 2, n - 1, *(secrets.randbelow(n) for _ in range(200))]:
        wi = pow(w, i, R_MOD)
        assert got[i] == c * wi * pow(tau - wi, -1, R_MOD) % R_MOD
    assert sum(got) % R_MOD == 1
    with pytest.raises(ValueError, match="domain"):
        lagrange_at(pow(w, secrets.randbelow(n), R_MOD), log_n)
