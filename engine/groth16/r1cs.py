"""The R1CS type every circuit compiles to and every prover reads.

Variables are ordered z = [1, public inputs..., aux (private) wires...]; ``num_inputs`` counts
the constant one plus the public inputs (bellman's convention). A, B and C are CSR matrices with
one row per constraint; coefficients are Fr elements in the storage layout (Montgomery,
``uint64[nnz, 4]``). As bellman does, :func:`with_input_constraints` appends one constraint
``x_i · 0 = 0`` per input (the constant one included), which keeps the input polynomials
linearly independent.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Protocol

import numpy as np
from numba import njit, prange


@dataclass(frozen=True)
class CSR:
    """A sparse matrix in CSR form with Fr coefficients (Montgomery, uint64[nnz, 4])."""

    indptr: np.ndarray  # int64[rows + 1]
    indices: np.ndarray  # int32[nnz], column (variable) index
    data: np.ndarray  # uint64[nnz, 4]

    @property
    def rows(self) -> int:
        return len(self.indptr) - 1

    @property
    def nnz(self) -> int:
        return int(self.indptr[-1])

    def used_columns(self, num_cols: int, coefficients: bool = True) -> np.ndarray:
        """bool[num_cols]: the columns with an entry in some row. ``coefficients``: only entries
        whose coefficient is nonzero count (a matrix may store zeros); without, the indices
        alone are read (an upper bound, 4 bytes an entry instead of 36)."""
        used = np.zeros(num_cols, bool)
        cols = np.asarray(self.indices)
        used[cols[np.asarray(self.data).any(axis=1)] if coefficients else cols] = True
        return used

    def check(self, num_vars: int, name: str) -> None:
        if self.indptr.ndim != 1 or self.indptr[0] != 0:
            raise ValueError(f"R1CS matrix {name}: indptr is not a valid CSR row pointer")
        if self.indices.shape != (self.nnz,) or self.data.shape != (self.nnz, 4):
            raise ValueError(f"R1CS matrix {name}: indices/data do not match indptr")
        falls, outside = _faults(np.ascontiguousarray(self.indptr, np.int64),
                                 np.ascontiguousarray(self.indices, np.int32), num_vars)
        if falls:
            raise ValueError(f"R1CS matrix {name}: indptr is not a valid CSR row pointer")
        if outside:
            raise ValueError(f"R1CS matrix {name}: a column index is out of range")


_CHUNKS = 256


@njit(cache=True, parallel=True)
def _faults(indptr, indices, num_vars):
    """(row pointers that fall, column indices outside 0..num_vars - 1): one parallel pass over
    each, where numpy's min, max and diff took three serial ones (2.5 s of a 32 GiB key's start
    on the H200 host, 722 M indices)."""
    falls = 0
    outside = 0
    rows = indptr.shape[0] - 1
    step = (rows + _CHUNKS - 1) // _CHUNKS
    for c in prange(_CHUNKS):
        for i in range(c * step, min(rows, (c + 1) * step)):
            if indptr[i + 1] < indptr[i]:
                falls += 1
    n = indices.shape[0]
    step = (n + _CHUNKS - 1) // _CHUNKS
    for c in prange(_CHUNKS):
        for i in range(c * step, min(n, (c + 1) * step)):
            v = indices[i]
            if v < 0 or v >= num_vars:
                outside += 1
    return falls, outside


class _Sparse(Protocol):
    @property
    def rows(self) -> int: ...

    @property
    def nnz(self) -> int: ...


class ThreeMatrices:
    """What every form of A, B and C (CSR here, compact in engine/groth16/compact.py) counts
    the same way: the constraints are A's rows, the nonzeros the three matrices' together."""

    A: _Sparse
    B: _Sparse
    C: _Sparse

    @property
    def num_constraints(self) -> int:
        return self.A.rows

    @property
    def nnz(self) -> int:
        return self.A.nnz + self.B.nnz + self.C.nnz


@dataclass(frozen=True)
class R1CS(ThreeMatrices):
    """A rank-1 constraint system: (A·z) ∘ (B·z) = C·z over Fr."""

    num_inputs: int  # the constant one + public inputs
    num_aux: int
    A: CSR
    B: CSR
    C: CSR

    @property
    def num_vars(self) -> int:
        return self.num_inputs + self.num_aux

    def check(self) -> None:
        """Raise ValueError with one clear line if the shapes are inconsistent.

        Passing once is kept, as the digest is (the matrices are never changed after
        construction): setup and the compact form both check, and at porep-32g one check reads
        the 722 M column indices."""
        if self.__dict__.get("_checked"):
            return
        if self.num_inputs < 1:
            raise ValueError("R1CS must have at least the constant-one input")
        for name, m in (("A", self.A), ("B", self.B), ("C", self.C)):
            m.check(self.num_vars, name)
            if m.rows != self.A.rows:
                raise ValueError(f"R1CS matrix {name} has {m.rows} rows, A has {self.A.rows}")
        self.__dict__["_checked"] = True

    def digest(self) -> bytes:
        """SHA-256 over the shape and the three matrices: identifies the circuit in key files.

        Computed once per object and kept (the matrices are never changed after construction):
        at the `large` preset hashing them takes several seconds, and the engine asks for the
        digest on every job submission."""
        known = self.__dict__.get("_digest")
        if known is None:
            known = self.__dict__["_digest"] = self._hash()
        return known

    def known_digest(self, digest: bytes) -> None:
        """Adopt a digest computed earlier for these same matrices (a circuit cache entry)."""
        self.__dict__["_digest"] = bytes(digest)

    def _hash(self) -> bytes:
        h = hashlib.sha256()
        h.update(b"sealtop-r1cs-v1")
        h.update(np.array([self.num_inputs, self.num_aux, self.num_constraints], "<i8").tobytes())
        for m in (self.A, self.B, self.C):
            h.update(_buffer(m.indptr, "<i8"))
            h.update(_buffer(m.indices, "<i4"))
            h.update(_buffer(m.data, "<u8"))
        return h.digest()


def _buffer(a: np.ndarray, dtype: str) -> memoryview:
    """``a``'s bytes in ``dtype``'s layout: its own buffer where it has that layout already (as
    built or loaded, always), so that hashing porep-32g's matrices copies none of their 31 GB."""
    return np.ascontiguousarray(a, dtype).data


def _append_rows(m: CSR, rows: list[list[tuple[int, np.ndarray]]]) -> CSR:
    indptr = list(m.indptr)
    idx = [m.indices]
    dat = [m.data]
    for row in rows:
        indptr.append(indptr[-1] + len(row))
        if row:
            idx.append(np.array([c for c, _ in row], np.int32))
            dat.append(np.stack([v for _, v in row]).astype(np.uint64))
    return CSR(
        np.array(indptr, np.int64),
        np.concatenate(idx).astype(np.int32),
        np.concatenate(dat).reshape(-1, 4).astype(np.uint64),
    )


def with_input_constraints(r: R1CS, one_mont: np.ndarray) -> R1CS:
    """Append bellman's ``x_i · 0 = 0`` for every input i (the constant one included).

    one_mont: Fr one in Montgomery form, uint64[4].
    """
    a_rows = [[(i, one_mont)] for i in range(r.num_inputs)]
    empty: list[list[tuple[int, np.ndarray]]] = [[] for _ in range(r.num_inputs)]
    return R1CS(
        r.num_inputs,
        r.num_aux,
        _append_rows(r.A, a_rows),
        _append_rows(r.B, empty),
        _append_rows(r.C, empty),
    )
