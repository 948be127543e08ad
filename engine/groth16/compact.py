"""Compact resident forms of the R1CS matrices and of a witness, and their reference evaluation.

The matrices A, B and C are the same for every partition of a circuit; only the witness changes.
A GPU prover keeps the matrices resident in the form below and receives only a compact witness,
instead of three 32-byte-per-row vectors a, b, c (4.2 GB each at 2^27).

Matrix (per A, B, C), built once per circuit from the CSR form (36 bytes per nonzero there):
- ``rowptr``: uint32[rows + 1] (the nonzero count of one matrix stays below 2^32);
- ``cols``: int32[nnz], the variable of each nonzero;
- ``cidx``: uint16[nnz], the coefficient of each nonzero as an index into ``coefs``;
- ``coefs``: uint64[k, 4] (Fr Montgomery), the distinct coefficients of all three matrices,
  shared; entry 0 is +1 and entry 1 is -1 (present or not), so an evaluator can add or subtract
  without a multiplication. A porep circuit has about 1,340 distinct coefficients.
That is 6 bytes per nonzero plus 4 per row.

Witness, per partition (a PoRep witness is about 99.9% 0/1):
- ``bits``: uint8[ceil(n / 8)], bit i is 1 where z_i == 1 (little-endian bit order in a byte);
- ``general``: uint8[ceil(n / 8)], bit i is 1 where z_i is neither 0 nor 1;
- ``gidx``: int32[g], the variables that are neither, ascending;
- ``gval``: uint64[g, 4], their values (Fr Montgomery).
That is n / 4 bytes plus 36 per general value, against 32 n for the plain witness. The device
expands it into the full z anyway (the MSMs read z), so ``gidx`` makes that a plain scatter.

:func:`evaluate_compact` is the CPU reference of the device evaluation: a numba kernel fed exactly
the arrays of :meth:`CompactR1CS.arrays` and :meth:`CompactWitness.arrays`, the ones uploaded.
Its result equals engine.synthesis.evaluate on the CSR form bit for bit (field sums of canonical
values do not depend on the order of the terms).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit, prange

from engine.groth16.r1cs import CSR, R1CS
from kernels.cpu.convert import to_mont_fr
from kernels.cpu.fr import FR_ONE, FR_ZERO, fr_add, fr_load, fr_mul, fr_store, fr_sub

ONE_MONT = np.array(FR_ONE, np.uint64)
NEG_ONE_MONT = to_mont_fr([-1])[0]
COEF_ONE, COEF_NEG_ONE = 0, 1  # fixed entries of every coefficient table
MAX_COEFS = 1 << 16  # cidx is uint16
PLAIN_BYTES_PER_NNZ = 36  # the CSR form: int32 column + 32-byte coefficient


class CompactError(ValueError):
    """A circuit or witness that does not fit the compact form (one line)."""


@dataclass(frozen=True)
class CompactMatrix:
    """One of A, B, C: row pointers, columns and coefficient indices (see the module doc)."""

    rowptr: np.ndarray  # uint32[rows + 1]
    cols: np.ndarray  # int32[nnz]
    cidx: np.ndarray  # uint16[nnz]

    @property
    def rows(self) -> int:
        return len(self.rowptr) - 1

    @property
    def nnz(self) -> int:
        return len(self.cols)

    def nbytes(self) -> int:
        return self.rowptr.nbytes + self.cols.nbytes + self.cidx.nbytes


@dataclass(frozen=True)
class CompactR1CS:
    """A, B and C in compact form sharing one coefficient table."""

    num_inputs: int
    num_vars: int
    coefs: np.ndarray  # uint64[k, 4], entry 0 = +1, entry 1 = -1
    A: CompactMatrix
    B: CompactMatrix
    C: CompactMatrix

    @property
    def num_constraints(self) -> int:
        return self.A.rows

    @property
    def nnz(self) -> int:
        return self.A.nnz + self.B.nnz + self.C.nnz

    def nbytes(self) -> int:
        return self.coefs.nbytes + sum(m.nbytes() for m in (self.A, self.B, self.C))

    def arrays(self) -> dict[str, np.ndarray]:
        """The exact contiguous arrays a device upload sends, by name."""
        out = {"coefs": self.coefs}
        for name, m in (("a", self.A), ("b", self.B), ("c", self.C)):
            out |= {f"{name}_rowptr": m.rowptr, f"{name}_cols": m.cols, f"{name}_cidx": m.cidx}
        return out


@dataclass(frozen=True)
class CompactWitness:
    """A witness as two bitmaps plus its general values (see the module doc)."""

    num_vars: int
    bits: np.ndarray  # uint8[ceil(n / 8)]
    general: np.ndarray  # uint8[ceil(n / 8)]
    gidx: np.ndarray  # int32[g]
    gval: np.ndarray  # uint64[g, 4]

    def nbytes(self) -> int:
        return self.bits.nbytes + self.general.nbytes + self.gidx.nbytes + self.gval.nbytes

    def arrays(self) -> dict[str, np.ndarray]:
        """The exact contiguous arrays a device upload sends, by name."""
        return {"bits": self.bits, "general": self.general, "gidx": self.gidx, "gval": self.gval}


def _coef_table(mats: tuple[CSR, ...]) -> tuple[np.ndarray, list[np.ndarray]]:
    """The shared table (+1, -1, then the other distinct values ascending) and, per matrix,
    each nonzero's index into it."""
    data = [np.ascontiguousarray(m.data, np.uint64).reshape(-1, 4) for m in mats]
    allv = np.concatenate(data) if data else np.zeros((0, 4), np.uint64)
    # one structured view per row so np.unique compares whole 32-byte values
    view = np.ascontiguousarray(allv).view(np.dtype((np.void, 32))).ravel()
    fixed = np.stack([ONE_MONT, NEG_ONE_MONT]).view(np.dtype((np.void, 32))).ravel()
    uniq, inverse = np.unique(np.concatenate([fixed, view]), return_inverse=True)
    # renumber so +1 -> 0 and -1 -> 1, the rest keep their (sorted) order after them
    order = np.concatenate([inverse[:2], np.setdiff1d(np.arange(len(uniq)), inverse[:2])])
    if len(order) > MAX_COEFS:
        raise CompactError(f"the circuit has {len(order)} distinct coefficients, the compact form holds {MAX_COEFS}")
    rank = np.empty(len(uniq), np.int64)
    rank[order] = np.arange(len(order))
    table = np.ascontiguousarray(uniq[order]).view(np.uint64).reshape(-1, 4)
    idx = rank[inverse[2:]].astype(np.uint16)
    parts, at = [], 0
    for d in data:
        parts.append(idx[at : at + len(d)])
        at += len(d)
    return table, parts


def compact_r1cs(r: R1CS) -> CompactR1CS:
    """The compact form of ``r`` (once per circuit); CompactError if it does not fit."""
    r.check()
    if r.num_vars >= 1 << 31:
        raise CompactError(f"the circuit has {r.num_vars} variables, int32 columns hold fewer than 2^31")
    mats = (r.A, r.B, r.C)
    for name, m in zip("ABC", mats):
        if m.nnz >= 1 << 32:
            raise CompactError(f"matrix {name} has {m.nnz} nonzeros, uint32 row pointers hold fewer than 2^32")
    table, idx = _coef_table(mats)
    out = [
        CompactMatrix(
            np.ascontiguousarray(m.indptr, np.uint32),
            np.ascontiguousarray(m.indices, np.int32),
            np.ascontiguousarray(ix, np.uint16),
        )
        for m, ix in zip(mats, idx)
    ]
    return CompactR1CS(r.num_inputs, r.num_vars, table, *out)


@njit(cache=True, parallel=True)
def _classify(z, one, kind):
    """kind[i] = 0 if z_i == 0, 1 if z_i == 1, 2 otherwise."""
    for i in prange(z.shape[0]):
        if (z[i, 0] | z[i, 1] | z[i, 2] | z[i, 3]) == 0:
            kind[i] = 0
        elif z[i, 0] == one[0] and z[i, 1] == one[1] and z[i, 2] == one[2] and z[i, 3] == one[3]:
            kind[i] = 1
        else:
            kind[i] = 2


def compact_witness(z: np.ndarray) -> CompactWitness:
    """The compact form of a witness z (uint64[n, 4], Montgomery)."""
    if z.dtype != np.uint64 or z.ndim != 2 or z.shape[1] != 4:
        raise CompactError(f"a witness must be uint64[n, 4], got {z.dtype}{list(z.shape)}")
    if z.shape[0] >= 1 << 31:
        raise CompactError(f"the witness has {z.shape[0]} values, int32 indices hold fewer than 2^31")
    z = np.ascontiguousarray(z)
    kind = np.empty(z.shape[0], np.uint8)
    _classify(z, ONE_MONT, kind)
    gidx = np.flatnonzero(kind == 2).astype(np.int32)
    return CompactWitness(
        z.shape[0],
        np.packbits(kind == 1, bitorder="little"),
        np.packbits(kind == 2, bitorder="little"),
        gidx,
        np.ascontiguousarray(z[gidx]),
    )


def expand_witness(w: CompactWitness) -> np.ndarray:
    """The full witness back from its compact form (what the device scatter produces)."""
    n = w.num_vars
    z = np.zeros((n, 4), np.uint64)
    ones = np.unpackbits(w.bits, count=n, bitorder="little").astype(bool)
    z[ones] = ONE_MONT
    z[w.gidx] = w.gval
    return z


@njit(cache=True, inline="always")
def _bit(bitmap, i):
    return (bitmap[i >> 3] >> (i & 7)) & 1


@njit(cache=True, parallel=True)
def _scatter(gidx, gval, z):
    for j in prange(gidx.shape[0]):
        for w in range(4):
            z[gidx[j], w] = gval[j, w]


@njit(cache=True, parallel=True)
def _eval_rows(rowptr, cols, cidx, coefs, bits, general, z, out):
    """One row per iteration: a 0/1 variable adds its coefficient or nothing; a general one
    adds, subtracts, or multiplies by its coefficient."""
    for r in prange(rowptr.shape[0] - 1):
        acc = FR_ZERO
        for k in range(np.int64(rowptr[r]), np.int64(rowptr[r + 1])):
            col = cols[k]
            ci = np.int64(cidx[k])
            if _bit(general, col):
                v = fr_load(z, col)
                if ci == 0:
                    acc = fr_add(acc, v)
                elif ci == 1:
                    acc = fr_sub(acc, v)
                else:
                    acc = fr_add(acc, fr_mul(fr_load(coefs, ci), v))
            elif _bit(bits, col):
                acc = fr_add(acc, fr_load(coefs, ci))
        fr_store(out, r, acc)


def _check_uploads(cm: dict[str, np.ndarray], cw: dict[str, np.ndarray], num_vars: int) -> None:
    want = {"coefs": np.uint64, "bits": np.uint8, "general": np.uint8, "gidx": np.int32, "gval": np.uint64}
    for m in "abc":
        want |= {f"{m}_rowptr": np.uint32, f"{m}_cols": np.int32, f"{m}_cidx": np.uint16}
    arrays = cm | cw
    for name, dt in want.items():
        a = arrays.get(name)
        if a is None or a.dtype != dt or not a.flags.c_contiguous:
            raise CompactError(f"compact array {name} is missing, not {np.dtype(dt).name} or not contiguous")
    nb = (num_vars + 7) // 8
    if len(cw["bits"]) != nb or len(cw["general"]) != nb:
        raise CompactError(f"the witness bitmaps must hold {nb} bytes for {num_vars} variables")
    for m in "abc":
        if len(cm[f"{m}_cols"]) and int(cm[f"{m}_cols"].max()) >= num_vars:
            raise CompactError(f"matrix {m.upper()} refers to more variables than the witness has")
        if len(cm[f"{m}_cidx"]) and int(cm[f"{m}_cidx"].max()) >= len(cm["coefs"]):
            raise CompactError(f"matrix {m.upper()} refers to a coefficient outside the table")


def evaluate_compact(cm: CompactR1CS, w: CompactWitness) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """a = A·z, b = B·z, c = C·z from the uploaded arrays alone (the device's reference):
    the general values are scattered into a zeroed z as the device does, then each row reads
    the bitmaps, the table and that z."""
    if w.num_vars != cm.num_vars:
        raise CompactError(f"the witness has {w.num_vars} values, the circuit {cm.num_vars} variables")
    up_m, up_w = cm.arrays(), w.arrays()
    _check_uploads(up_m, up_w, cm.num_vars)
    z = np.zeros((cm.num_vars, 4), np.uint64)
    _scatter(up_w["gidx"], up_w["gval"], z)
    out = []
    for m in "abc":
        o = np.empty((len(up_m[f"{m}_rowptr"]) - 1, 4), np.uint64)
        _eval_rows(up_m[f"{m}_rowptr"], up_m[f"{m}_cols"], up_m[f"{m}_cidx"], up_m["coefs"],
                   up_w["bits"], up_w["general"], z, o)
        out.append(o)
    return out[0], out[1], out[2]


def sizes(cm: CompactR1CS, w: CompactWitness | None = None) -> dict[str, float]:
    """Bytes of the compact forms against the plain ones, for reports."""
    rows = cm.num_constraints
    plain_m = PLAIN_BYTES_PER_NNZ * cm.nnz + 3 * 8 * (rows + 1)
    out: dict[str, float] = {
        "nnz": cm.nnz,
        "coefs": len(cm.coefs),
        "matrix_bytes": cm.nbytes(),
        "matrix_bytes_plain": plain_m,
        "bytes_per_nnz": cm.nbytes() / max(cm.nnz, 1),
        "bytes_per_nnz_plain": plain_m / max(cm.nnz, 1),
    }
    if w is not None:
        out |= {
            "witness_bytes": w.nbytes(),
            "witness_bytes_plain": 32 * w.num_vars,
            "general_values": len(w.gidx),
        }
    return out
