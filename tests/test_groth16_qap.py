"""Sparse products, the Lagrange basis at tau and the example circuits, against Python integers."""

from __future__ import annotations

import secrets

import numpy as np
import pytest

from engine.groth16 import examples
from engine.groth16.qap import domain_log, lagrange_at, uvw_at
from engine.groth16.r1cs import CSR
from engine.groth16.sparse import matvec, matvec_transposed
from kernels.constants import R_MOD, root_of_unity
from kernels.cpu.convert import from_mont_fr, to_mont_fr


def _random_csr(rows: int, cols: int, rng: np.random.Generator) -> tuple[CSR, list[list[tuple[int, int]]]]:
    dense: list[list[tuple[int, int]]] = []
    for _ in range(rows):
        k = int(rng.integers(0, 4))
        picks = rng.choice(cols, size=k, replace=False)
        dense.append([(int(c), secrets.choice([1, R_MOD - 1, secrets.randbelow(R_MOD)])) for c in picks])
    indptr = np.cumsum([0] + [len(r) for r in dense]).astype(np.int64)
    indices = np.array([c for r in dense for c, _ in r], np.int32)
    data = to_mont_fr([v for r in dense for _, v in r]).reshape(-1, 4)
    return CSR(indptr, indices, data), dense


def test_matvec_and_transpose_match_python_ints() -> None:
    rng = np.random.default_rng()
    rows, cols = 37, 23
    m, dense = _random_csr(rows, cols, rng)
    z = [secrets.randbelow(R_MOD) for _ in range(cols)]
    want = [sum(v * z[c] for c, v in row) % R_MOD for row in dense]
    assert from_mont_fr(matvec(m, to_mont_fr(z))) == want
    x = [secrets.randbelow(R_MOD) for _ in range(rows)]
    want_t = [0] * cols
    for i, row in enumerate(dense):
        for c, v in row:
            want_t[c] = (want_t[c] + v * x[i]) % R_MOD
    assert from_mont_fr(matvec_transposed(m, to_mont_fr(x), cols)) == want_t


@pytest.mark.parametrize("log_n", [1, 3, 6])
def test_lagrange_basis_interpolates(log_n: int) -> None:
    n = 1 << log_n
    tau = secrets.randbelow(R_MOD)
    coeffs = [secrets.randbelow(R_MOD) for _ in range(n)]
    f = lambda x: sum(c * pow(x, i, R_MOD) for i, c in enumerate(coeffs)) % R_MOD  # noqa: E731
    w = root_of_unity(log_n)
    lag = from_mont_fr(lagrange_at(tau, log_n))
    assert sum(lag) % R_MOD == 1
    assert sum(l_i * f(pow(w, i, R_MOD)) for i, l_i in enumerate(lag)) % R_MOD == f(tau)


def test_tau_in_domain_is_refused() -> None:
    with pytest.raises(ValueError, match="domain"):
        lagrange_at(root_of_unity(3), 3)


def test_uvw_at_tau_matches_product_form_lagrange() -> None:
    """u_j(tau) = Σ_i A[i, j] L_i(tau), with L_i from the product formula in Python ints."""
    circuit = examples.cubic_circuit()
    r1cs = circuit.r1cs
    log_n = domain_log(r1cs.num_constraints)
    n = 1 << log_n
    w = root_of_unity(log_n)
    pts = [pow(w, i, R_MOD) for i in range(n)]
    tau = secrets.randbelow(R_MOD)
    lag = []
    for i in range(n):
        num = den = 1
        for k in range(n):
            if k != i:
                num = num * (tau - pts[k]) % R_MOD
                den = den * (pts[i] - pts[k]) % R_MOD
        lag.append(num * pow(den, -1, R_MOD) % R_MOD)
    got = [from_mont_fr(t) for t in uvw_at(r1cs, tau, log_n)]
    for m, vals in zip((r1cs.A, r1cs.B, r1cs.C), got):
        want = [0] * r1cs.num_vars
        coeffs = from_mont_fr(m.data)
        for row in range(m.rows):
            for k in range(m.indptr[row], m.indptr[row + 1]):
                want[m.indices[k]] = (want[m.indices[k]] + coeffs[k] * lag[row]) % R_MOD
        assert vals == want


def test_domain_log() -> None:
    assert [domain_log(c) for c in (1, 2, 3, 4, 5, 16, 17)] == [1, 1, 2, 2, 3, 4, 5]


def test_examples_satisfy_and_break() -> None:
    x = secrets.randbelow(R_MOD)
    cubic = examples.cubic_circuit()
    z = cubic.witness(x)
    examples.check_witness(cubic.r1cs, z)
    assert examples.public_inputs(cubic.r1cs, z) == [(x**3 + x + 5) % R_MOD]
    chain = examples.chain_circuit(17)
    z = chain.witness(x)
    examples.check_witness(chain.r1cs, z)
    assert examples.public_inputs(chain.r1cs, z) == [pow(x, 18, R_MOD)]
    assert examples.chain_for_constraints(64).r1cs.num_constraints == 64
    k = 3 + secrets.randbelow(chain.r1cs.num_vars - 3)
    z[k] = to_mont_fr([secrets.randbelow(R_MOD)])[0]
    with pytest.raises(examples.WitnessError, match="constraint"):
        examples.check_witness(chain.r1cs, z)
