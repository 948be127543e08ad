"""The parallel QAP-at-tau kernels that setup (and the device-made key) use, against Python integers
and the serial product: the transposed product with the columns split among several threads
(a heavy column 0, as the constant one is in a circuit, and repeated columns in a row), the
chunked geometric sequence and the chunked batch inversion (zeros map to zero)."""

from __future__ import annotations

import secrets

import numpy as np
import pytest

from engine.groth16.qap import geometric, transposed_product
from engine.groth16.r1cs import CSR
from engine.groth16.sparse import matvec_transposed
from kernels.constants import R_MOD
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
