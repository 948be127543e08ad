"""Device evaluation of sparse Fr matrix-vector products from a compact resident form.

The arrays are the ones engine/groth16/compact.py builds and documents (``CompactR1CS.arrays()``
and ``CompactWitness.arrays()``): per matrix uint32 row pointers, int32 columns and uint16
coefficient indices into one shared table (entries 0 and 1 are +1 and -1); the vector as a value
bitmap, a "general" bitmap and the general entries' indices and values. This module knows
nothing of circuits: it uploads arrays by name and runs the kernels of abc/abc_eval.cu.
"""

from __future__ import annotations

import os
import threading
from typing import Any

import numpy as np

from kernels.cuda.module import kernel
from kernels.cuda.stream import cupy_module as _cp

BLOCK = 256
# How rows are spread over threads: "thread" (abc_rows: one thread a row, a warp as slow as its
# longest row) or "split" (abc_rows.cuh: rows of at most LONG_ROW nonzeros one thread each, the
# rest one warp each, 16-byte stores). SEALTOP_ABC_ROWS per process. "split" is the default: on
# the H200 (2026-12-04) a/b/c of 2^27 rows with medium's row lengths took 28.3 ms against 59.0.
ROWS = os.environ.get("SEALTOP_ABC_ROWS", "split")
LONG_ROW = 32
LONG_BLOCK = 256  # abc_rows_long: 8 warps, 8 rows a block
_long_lock = threading.Lock()
MATRIX_KEYS = ("rowptr", "cols", "cidx")
_DTYPES = {"rowptr": np.uint32, "cols": np.int32, "cidx": np.uint16, "coefs": np.uint64,
           "bits": np.uint8, "general": np.uint8, "gidx": np.int32, "gval": np.uint64}


def _grid(n: int) -> tuple[int]:
    return (max(1, (n + BLOCK - 1) // BLOCK),)


def upload(arrays: dict[str, np.ndarray]) -> dict[str, Any]:
    """Device copies of the named arrays, each checked for the dtype the kernels read
    (ValueError, one line, on a wrong one)."""
    for name, a in arrays.items():
        want = _DTYPES.get(name.rsplit("_", 1)[-1])
        if want is None:
            raise ValueError(f"unknown compact array {name!r}")
        if a.dtype != want:
            raise ValueError(f"compact array {name} must be {np.dtype(want).name}, got {a.dtype}")
    cp = _cp()
    return {name: cp.asarray(np.ascontiguousarray(a)) for name, a in arrays.items()}


def _rows_mode() -> str:
    if ROWS not in ("thread", "split"):
        raise ValueError(f"unknown abc row mode {ROWS!r} (thread or split)")
    return ROWS


def long_rows(m: dict[str, Any], prefix: str) -> Any:
    """The rows of matrix ``prefix`` with more than LONG_ROW nonzeros (device uint32), found
    once and kept in ``m`` (the circuit's resident arrays) as ``{prefix}_long``."""
    key = f"{prefix}_long"
    with _long_lock:
        if key not in m:
            cp = _cp()
            rp = m[f"{prefix}_rowptr"]
            m[key] = cp.flatnonzero((rp[1:] - rp[:-1]) > np.uint32(LONG_ROW)).astype(cp.uint32)
            cp.cuda.get_current_stream().synchronize()  # other threads' streams read it next
        return m[key]


def expand(w: dict[str, Any], n: int) -> Any:
    """The full vector z (device uint64[n, 4]) from its bitmaps and general entries."""
    cp = _cp()
    z = cp.empty((n, 4), dtype=cp.uint64)
    fn = "abc_expand16" if _rows_mode() == "split" else "abc_expand"
    kernel("abc", fn)(_grid(n), (BLOCK,), (w["bits"], z, np.uint64(n)))
    g = int(w["gidx"].shape[0])
    if g:
        kernel("abc", "abc_scatter")(_grid(g), (BLOCK,), (w["gidx"], w["gval"], z, np.uint64(g)))
    return z


def matvec(m: dict[str, Any], prefix: str, coefs: Any, w: dict[str, Any], z: Any, out: Any | None = None) -> Any:
    """M · z for the matrix whose arrays are ``{prefix}_rowptr``, ``_cols``, ``_cidx`` in ``m``;
    ``out`` may be a contiguous device view (e.g. rows of the zero-padded H input)."""
    cp = _cp()
    rows = int(m[f"{prefix}_rowptr"].shape[0]) - 1
    if out is None:
        out = cp.empty((rows, 4), dtype=cp.uint64)
    if out.shape != (rows, 4) or not out.flags.c_contiguous:
        raise ValueError(f"output must be a contiguous uint64[{rows}, 4] device array")
    mat = (m[f"{prefix}_rowptr"], m[f"{prefix}_cols"], m[f"{prefix}_cidx"], coefs, w["bits"], w["general"], z, out)
    if _rows_mode() == "thread":
        kernel("abc", "abc_rows")(_grid(rows), (BLOCK,), (*mat, np.uint64(rows)))
        return out
    kernel("abc", "abc_rows_short")(_grid(rows), (BLOCK,), (*mat, np.uint64(rows), np.uint32(LONG_ROW)))
    lr = long_rows(m, prefix)
    if int(lr.shape[0]):
        per = LONG_BLOCK // 32
        kernel("abc", "abc_rows_long")((-(-int(lr.shape[0]) // per),), (LONG_BLOCK,), (*mat, lr, np.uint64(lr.shape[0])))
    return out


def evaluate(m: dict[str, Any], w: dict[str, Any], n: int) -> tuple[Any, Any, Any, Any]:
    """(z, a, b, c) on the device from uploaded compact matrices ``m`` (keys a_*, b_*, c_*,
    coefs) and an uploaded compact witness ``w`` of n entries."""
    z = expand(w, n)
    a, b, c = (matvec(m, p, m["coefs"], w, z) for p in "abc")
    return z, a, b, c


def evaluate_abc(m: dict[str, Any], w: dict[str, Any], n: int, abc: Any) -> Any:
    """z (device uint64[n, 4]), with A·z, B·z and C·z written straight into rows of ``abc``,
    the zero-padded device uint64[3, domain, 4] array that the H step transforms (so a, b and
    c exist nowhere else). The rows past the constraints are left as they are: ``abc`` comes
    zeroed from the H step."""
    rows = int(m["a_rowptr"].shape[0]) - 1
    if abc.ndim != 3 or abc.shape[0] != 3 or abc.shape[2] != 4 or abc.shape[1] < rows \
            or not abc.flags.c_contiguous:
        raise ValueError(f"the H input must be a contiguous uint64[3, >= {rows}, 4] device array, "
                         f"got {tuple(abc.shape)}")
    z = expand(w, n)
    for i, p in enumerate("abc"):
        matvec(m, p, m["coefs"], w, z, abc[i, :rows])
    return z
