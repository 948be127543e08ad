"""The "split" rows of the device a/b/c evaluation (kernels/cuda/abc/abc_rows.cuh: abc_rows_short,
abc_rows_long), built for the host with a C++ compiler (kernels/cuda/abc/host_abc.cpp runs the
kernels block by block) and checked against Python integers on random compact matrices with
short, long and empty rows; then abc.matvec's glue in split mode with those kernels. No GPU."""

from __future__ import annotations

import ctypes
import random
from typing import Any

import numpy as np
import pytest
from host_build import BUILDS, host_library, needs_cxx, ptx_flag

from kernels.constants import R_MOD
from kernels.cpu.convert import from_mont_fr, to_mont_fr

pytestmark = needs_cxx
P = ctypes.c_void_p
LONG = 32


@pytest.fixture(scope="module", params=BUILDS)
def lib(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> ctypes.CDLL:
    lib = host_library(tmp_path_factory, "abc/host_abc.cpp", "-O1", ptx_flag(request.param))
    lib.host_rows_short.argtypes = [P] * 8 + [ctypes.c_uint64, ctypes.c_uint32]
    lib.host_rows_long.argtypes = [P] * 9 + [ctypes.c_uint64]
    return lib


def random_system(rows: int, nvars: int) -> dict[str, Any]:
    """A compact matrix (lengths 0..3 mostly, some 33..300), its coefficient table (+1, -1, then
    random), and a witness of 0, 1 and general values as bitmaps plus z."""
    lens = [random.choice([0, 1, 1, 2, 3]) if random.random() > 0.03 else random.randrange(LONG + 1, 300)
            for _ in range(rows)]
    lens[0], lens[-1] = LONG, LONG + 1
    rowptr = np.concatenate([[0], np.cumsum(lens)]).astype(np.uint32)
    nnz = int(rowptr[-1])
    coef_vals = [1, R_MOD - 1] + [random.randrange(R_MOD) for _ in range(40)]
    cols = np.array([random.randrange(nvars) for _ in range(nnz)], np.int32)
    cidx = np.array([random.randrange(len(coef_vals)) for _ in range(nnz)], np.uint16)
    zv = [random.choice([0, 1, 1, random.randrange(2, R_MOD)]) for _ in range(nvars)]
    bits = np.packbits([v == 1 for v in zv], bitorder="little")
    general = np.packbits([v > 1 for v in zv], bitorder="little")
    want = [sum(coef_vals[cidx[k]] * zv[cols[k]] for k in range(rowptr[r], rowptr[r + 1])) % R_MOD for r in range(rows)]
    return {"rowptr": rowptr, "cols": cols, "cidx": cidx, "coefs": to_mont_fr(coef_vals), "bits": bits,
            "general": general, "z": to_mont_fr(zv), "want": want, "rows": rows}


def run_split(lib: ctypes.CDLL, s: dict[str, Any], skip_long: bool = False) -> list[int]:
    out = np.zeros((s["rows"], 4), np.uint64)
    args = [s[k].ctypes.data for k in ("rowptr", "cols", "cidx", "coefs", "bits", "general", "z")] + [out.ctypes.data]
    lib.host_rows_short(*args, s["rows"], LONG)
    lens = np.diff(s["rowptr"])
    long_rows = np.flatnonzero(lens > LONG).astype(np.uint32)
    if len(long_rows) and not skip_long:
        lib.host_rows_long(*args, long_rows.ctypes.data, len(long_rows))
    return from_mont_fr(out)


@pytest.mark.parametrize("rows", [1, 9, 600])
def test_split_rows_match_python(lib: ctypes.CDLL, rows: int) -> None:
    s = random_system(rows, 500)
    assert run_split(lib, s) == s["want"]


def test_long_rows_are_the_long_kernels(lib: ctypes.CDLL) -> None:
    """Without the long kernel the long rows stay unwritten: the short kernel leaves them."""
    s = random_system(200, 300)
    got = run_split(lib, s, skip_long=True)
    lens = np.diff(s["rowptr"])
    assert all(g == 0 for g, n in zip(got, lens) if n > LONG)
    assert any(w != 0 for w, n in zip(s["want"], lens) if n > LONG)
    assert [g for g, n in zip(got, lens) if n <= LONG] == [w for w, n in zip(s["want"], lens) if n <= LONG]


def test_matvec_split_glue(lib: ctypes.CDLL, monkeypatch: pytest.MonkeyPatch) -> None:
    """abc.matvec in split mode: the long rows found once and kept, both kernels launched with
    the matrix's arrays in order (the long kernel's grid covering every long row)."""
    from kernels.cuda import abc

    class Np:
        uint32, uint64 = np.uint32, np.uint64
        empty, flatnonzero = staticmethod(np.empty), staticmethod(np.flatnonzero)

        class cuda:  # noqa: N801 (CuPy's name)
            @staticmethod
            def get_current_stream() -> Any:
                return type("S", (), {"synchronize": lambda self: None})()

    def kern(module: str, fn: str) -> Any:
        def launch(grid: tuple[int, ...], block: tuple[int, ...], args: tuple[Any, ...]) -> None:
            conv = [a.ctypes.data if isinstance(a, np.ndarray) else int(a) for a in args]
            if fn == "abc_rows_long":
                assert grid[0] * block[0] // 32 >= int(args[-1]) and block == (abc.LONG_BLOCK,)
                lib.host_rows_long(*conv)
            else:
                assert fn == "abc_rows_short" and grid[0] * block[0] >= int(args[-2])
                lib.host_rows_short(*conv)

        return launch

    monkeypatch.setattr(abc, "kernel", kern)
    monkeypatch.setattr(abc, "_cp", lambda: Np)
    monkeypatch.setattr(abc, "ROWS", "split")
    s = random_system(400, 200)
    m = {"x_rowptr": s["rowptr"], "x_cols": s["cols"], "x_cidx": s["cidx"]}
    w = {"bits": s["bits"], "general": s["general"]}
    out = abc.matvec(m, "x", s["coefs"], w, s["z"])
    assert from_mont_fr(out) == s["want"]
    assert "x_long" in m and np.array_equal(m["x_long"], np.flatnonzero(np.diff(s["rowptr"]) > LONG))
    monkeypatch.setattr(abc, "ROWS", "diagonal")
    with pytest.raises(ValueError, match="unknown abc row mode"):
        abc.matvec(m, "x", s["coefs"], w, s["z"])
