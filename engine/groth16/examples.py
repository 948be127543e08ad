"""The built-in example circuits and the witness pre-check.

Two circuits let the whole path (setup, prove, verify, export) run from the shell:
- ``cubic``: x^3 + x + 5 = y, with y public and x private (the classic tutorial circuit);
- ``chain``: n multiplications w_i = w_{i-1} · x with w_0 = x and w_n = y public, i.e.
  y = x^(n+1). Its size is set by n, which is how benchmarks get 2^k-constraint circuits.

Both return R1CS with bellman's ``x_i · 0 = 0`` input constraints already appended, and build the
witness z = [1, public..., aux...] (Fr storage, Montgomery) from the private input x.

A porep preset (engine/circuit/porep.py) runs the same path as one partition of a synthetic
sector whose seed is x; its public-input file is then the statement (commitments and seeds,
engine/circuit/statement.py), from which a verifier derives every public input itself.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from engine.groth16.r1cs import CSR, R1CS, with_input_constraints
from engine.groth16.sparse import matvec
from kernels.constants import R_MOD
from kernels.cpu import fr_vec
from kernels.cpu.convert import from_mont_fr, to_mont_fr

ONE_MONT = to_mont_fr([1])[0]
CIRCUITS = ("cubic", "chain")


class WitnessError(ValueError):
    """The witness does not satisfy the constraint system (the message names the first bad row)."""


@dataclass(frozen=True)
class Circuit:
    """An example circuit: its R1CS and how to build a witness from the private input x."""

    name: str
    r1cs: R1CS
    make_witness: Callable[[int], np.ndarray]
    statement: Callable[[int], dict] | None = None  # porep: x → the public-input file's object

    def witness(self, x: int) -> np.ndarray:
        return self.make_witness(x)


def porep_circuit(preset: str) -> Circuit:
    """Partition 0 of a porep preset; the private input x is the synthetic sector's seed."""
    from engine.circuit.porep import build_porep, generate_partitions, porep_witness

    shape = build_porep(preset)

    def sector(x: int):
        return generate_partitions(preset, x % (1 << 64))

    def witness(x: int) -> np.ndarray:
        return porep_witness(shape, sector(x)[1][0])[1]

    def statement(x: int) -> dict:
        return sector(x)[0].statement(0).to_json(preset)

    return Circuit(preset, shape.r1cs, witness, statement)


def _csr(cols: np.ndarray, coeffs: np.ndarray | None = None) -> CSR:
    """A CSR matrix with one entry per row: column cols[i], coefficient coeffs[i] (default one)."""
    n = len(cols)
    data = np.tile(ONE_MONT, (n, 1)) if coeffs is None else coeffs
    return CSR(np.arange(n + 1, dtype=np.int64), cols.astype(np.int32), data.astype(np.uint64))


def _csr_rows(rows: list[list[tuple[int, int]]]) -> CSR:
    """A CSR matrix from rows of (column, integer coefficient)."""
    indptr = np.cumsum([0] + [len(r) for r in rows]).astype(np.int64)
    cols = np.array([c for r in rows for c, _ in r], np.int32)
    data = to_mont_fr([v for r in rows for _, v in r]).reshape(-1, 4)
    return CSR(indptr, cols, data)


def cubic_circuit() -> Circuit:
    """x^3 + x + 5 = y. Variables: [1, y | x, t1 = x·x, t2 = t1·x]."""
    one, y, x, t1, t2 = range(5)
    a = _csr_rows([[(x, 1)], [(t1, 1)], [(t2, 1), (x, 1), (one, 5)]])
    b = _csr_rows([[(x, 1)], [(x, 1)], [(one, 1)]])
    c = _csr_rows([[(t1, 1)], [(t2, 1)], [(y, 1)]])
    r1cs = with_input_constraints(R1CS(2, 3, a, b, c), ONE_MONT)

    def witness(xv: int) -> np.ndarray:
        xv %= R_MOD
        v1 = xv * xv % R_MOD
        v2 = v1 * xv % R_MOD
        return to_mont_fr([1, (v2 + xv + 5) % R_MOD, xv, v1, v2])

    return Circuit("cubic", r1cs, witness)


def chain_circuit(n: int) -> Circuit:
    """n multiplications w_i = w_{i-1} · x (w_0 = x, w_n = y public).

    Variables: [1, y | x, w_1, ..., w_{n-1}]; n constraints before the input constraints.
    """
    if n < 1:
        raise ValueError(f"a chain needs at least one multiplication, got n={n}")
    # index of w_i: w_0 = x is 2, w_i is 2 + i for 1 <= i < n, w_n = y is 1
    i = np.arange(1, n + 1)
    a_cols = i + 1  # w_{i-1}
    b_cols = np.full(n, 2)  # x
    c_cols = i + 2
    c_cols[-1] = 1
    r1cs = with_input_constraints(R1CS(2, n, _csr(a_cols), _csr(b_cols), _csr(c_cols)), ONE_MONT)

    def witness(xv: int) -> np.ndarray:
        xv %= R_MOD
        ws = [xv]
        for _ in range(n):
            ws.append(ws[-1] * xv % R_MOD)
        return to_mont_fr([1, ws[n], xv, *ws[1:n]])

    return Circuit(f"chain-{n}", r1cs, witness)


def chain_for_constraints(total: int) -> Circuit:
    """The chain whose R1CS has exactly ``total`` constraints (input constraints included)."""
    return chain_circuit(total - 2)


def build(name: str, n: int | None = None) -> Circuit:
    """The named example: ``cubic``, or ``chain`` with n multiplications."""
    if name == "cubic":
        return cubic_circuit()
    if name == "chain":
        if n is None:
            raise ValueError("the chain circuit needs --n (the number of multiplications)")
        return chain_circuit(n)
    raise ValueError(f"unknown circuit {name!r} (choose {', '.join(CIRCUITS)})")


def public_from_json(obj: object, where: str) -> list[int]:
    """The public inputs a verifier uses from a public-input file's JSON: a list of decimal
    strings as it is, or a porep statement, from which every input is derived (ValueError in one
    line when malformed)."""
    if isinstance(obj, dict):
        from engine.circuit.statement import statement_from_json

        return statement_from_json(obj, where)[1].public_inputs()
    if not isinstance(obj, list):
        raise ValueError(f"public inputs {where} must be a JSON list of decimal strings or a porep statement")
    out: list[int] = []
    for v in obj:
        n: int | None
        try:
            n = int(v) if isinstance(v, (int, str)) and not isinstance(v, bool) else None
        except ValueError:
            n = None
        if n is None:
            raise ValueError(f"public inputs {where}: {v!r} is not an integer")
        out.append(n)
    return out


def public_inputs(r1cs: R1CS, z: np.ndarray) -> list[int]:
    """The public inputs of a witness (z[1:num_inputs]) as integers."""
    return from_mont_fr(z[1 : r1cs.num_inputs]) if r1cs.num_inputs > 1 else []


def check_witness(r1cs: R1CS, z: np.ndarray) -> None:
    """Raise WitnessError unless (A·z) ∘ (B·z) = C·z and z[0] is one."""
    if z.shape != (r1cs.num_vars, 4):
        raise WitnessError(f"witness has shape {list(z.shape)}, the circuit needs [{r1cs.num_vars}, 4]")
    if not np.array_equal(z[0], ONE_MONT):
        raise WitnessError("witness value 0 (the constant one) is not one")
    check_evaluations(matvec(r1cs.A, z), matvec(r1cs.B, z), matvec(r1cs.C, z))


def check_evaluations(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> None:
    """Raise WitnessError unless a ∘ b = c row by row (a = A·z, b = B·z, c = C·z)."""
    bad = np.flatnonzero(np.any(fr_vec.mul(a, b) != c, axis=1))
    if bad.size:
        raise WitnessError(f"witness breaks constraint {int(bad[0])} ({bad.size} unsatisfied)")
