"""The CUDA headers built for the host: every tests/test_cuda_host_*.py compiles a source of
kernels/cuda (its includes inlined by kernels.cuda.source.assemble) with a plain C++ compiler
and calls it through ctypes. A source built with the same flags is built once per test process
(three test files read ff/host_selftest.cpp)."""

from __future__ import annotations

import ctypes
import shutil
import subprocess
from typing import Any

import numpy as np
import pytest

from kernels.cuda.source import assemble

CXX = shutil.which("g++") or shutil.which("c++") or shutil.which("clang++")
needs_cxx = pytest.mark.skipif(CXX is None, reason="no C++ compiler for the host build")
# The two builds of the field arithmetic: portable C++, and the PTX instruction sequences the GPU
# runs over ptx.cuh's host model of the carry flag.
BUILDS = ["portable", "ptx_model"]

_built: dict[tuple[str, tuple[str, ...]], ctypes.CDLL] = {}


def ptx_flag(build: str) -> str:
    """The define that picks one of BUILDS."""
    return "-DSEALTOP_PTX_FF=" + ("1" if build == "ptx_model" else "0")


def host_library(tmp_path_factory: pytest.TempPathFactory, relpath: str, *flags: str,
                 text: str | None = None) -> ctypes.CDLL:
    """kernels/cuda/<relpath> (or ``text``, a harness of its own) compiled with ``flags`` into a
    shared library, loaded."""
    key = (text if text is not None else relpath, flags)
    if key not in _built:
        assert CXX is not None
        d = tmp_path_factory.mktemp("host_build")
        src, so = d / "lib.cpp", d / "lib.so"
        src.write_text(text if text is not None else assemble(relpath))
        subprocess.run([CXX, *flags, "-shared", "-fPIC", "-o", str(so), str(src)], check=True)
        _built[key] = ctypes.CDLL(str(so))
    return _built[key]


def ctype_arg(a: Any) -> Any:
    """A kernel argument as ctypes passes it to a host-built kernel: an array by its address (C
    order), a numpy scalar by its width, as CuPy passes them to the driver."""
    if isinstance(a, np.ndarray):
        assert a.flags.c_contiguous
        return ctypes.c_void_p(a.ctypes.data)
    for t, c in ((np.uint32, ctypes.c_uint32), (np.uint64, ctypes.c_uint64), (np.int32, ctypes.c_int32)):
        if isinstance(a, t):
            return c(int(a))
    raise TypeError(f"kernel argument {a!r}: pass numpy scalars, as the driver does for CuPy")
