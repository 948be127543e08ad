"""Checking circuits: place a template on free inputs (for gadget tests), and an independent
satisfaction check of an R1CS with Python ints (no numba, no Montgomery arithmetic)."""

from __future__ import annotations

import numpy as np

from engine.circuit.builder import CircuitBuilder, CircuitShape
from engine.circuit.template import Template
from engine.circuit.witness import fill_inputs, witness_numba
from engine.groth16.r1cs import CSR, R1CS
from kernels.constants import R_MOD
from kernels.cpu.convert import from_mont_fr


def place_on_free(tmpl: Template, rows: int) -> tuple[CircuitShape, list[np.ndarray]]:
    """A circuit with ``rows`` instances of ``tmpl`` whose inputs are one free region "in"."""
    cb = CircuitBuilder(tmpl.name, 0)
    ins = cb.free("in", (rows, tmpl.n_in))
    outs = cb.place(tmpl, ins)
    return cb.compile(), outs


def run(shape: CircuitShape, values) -> np.ndarray:
    z = fill_inputs(shape, [], {"in": values})
    return witness_numba(shape, z)


def _rows(m: CSR, z: list[int]) -> list[int]:
    coef = from_mont_fr(np.asarray(m.data))
    ind = np.asarray(m.indices).tolist()
    ptr = np.asarray(m.indptr).tolist()
    return [sum(coef[k] * z[ind[k]] for k in range(ptr[r], ptr[r + 1])) % R_MOD for r in range(len(ptr) - 1)]


def unsatisfied_rows_py(r: R1CS, z: list[int]) -> list[int]:
    """Rows where (A·z)(B·z) != C·z, computed with Python ints only (an independent oracle)."""
    a, b, c = _rows(r.A, z), _rows(r.B, z), _rows(r.C, z)
    return [i for i in range(len(a)) if a[i] * b[i] % R_MOD != c[i]]


def _columns(m: CSR) -> dict[int, list[tuple[int, int]]]:
    coef = from_mont_fr(np.asarray(m.data))
    ind = np.asarray(m.indices).tolist()
    ptr = np.asarray(m.indptr).tolist()
    cols: dict[int, list[tuple[int, int]]] = {}
    for r in range(len(ptr) - 1):
        for k in range(ptr[r], ptr[r + 1]):
            cols.setdefault(ind[k], []).append((r, coef[k]))
    return cols


def free_variables(r: R1CS, z: list[int], variables: list[int], deltas: list[int]) -> list[int]:
    """Of ``variables``, those that can change (by the matching delta) with every constraint
    still satisfied. ``z`` must satisfy ``r``; only the rows that use a variable can change, so
    each check touches those rows only (Python ints, exact)."""
    a, b, c = _rows(r.A, z), _rows(r.B, z), _rows(r.C, z)
    ca, cb, cc = _columns(r.A), _columns(r.B), _columns(r.C)
    free = []
    for v, d in zip(variables, deltas):
        da: dict[int, int] = {}
        db: dict[int, int] = {}
        dc: dict[int, int] = {}
        for cols, acc in ((ca, da), (cb, db), (cc, dc)):
            for row, k in cols.get(v, []):
                acc[row] = (acc.get(row, 0) + k * d) % R_MOD
        rows = set(da) | set(db) | set(dc)
        if all(
            (a[i] + da.get(i, 0)) * (b[i] + db.get(i, 0)) % R_MOD == (c[i] + dc.get(i, 0)) % R_MOD
            for i in rows
        ):
            free.append(v)
    return free
