"""Compile and cache the CUDA modules (NVRTC through cupy.RawModule, sm_90 on the H200).

Each module is compiled once per process and kept; across processes CuPy's on-disk kernel cache
(``CUPY_CACHE_DIR``) keeps the compiled cubin, keyed by the full assembled source and options.
The first compilation of the MSM module takes tens of seconds; ``warm_up`` lets callers show
progress around it.
"""

from __future__ import annotations

import os
import threading
from typing import Any

from kernels.cuda.source import assemble

MODULES = {
    "field": "ff/field_kernels.cu",
    "ntt": "ntt/ntt.cu",
    "msm_g1": "msm/msm_g1.cu",
    "msm_g2": "msm/msm_g2.cu",
    "msm_scalars": "msm/scalars.cu",
    "abc": "abc/abc_eval.cu",
}
# SEALTOP_PTX_FF=0 in the environment builds the portable C++ field arithmetic instead of the
# PTX carry chains (ff/ptx.cuh): a fallback, and the baseline the PTX version is measured against.
# SEALTOP_CUDA_DEFINES="NAME=VALUE;NAME2=VALUE2" adds preprocessor definitions to every module, for
# measuring build variants (e.g. MSM_G1_ACC_BOUNDS, the G1 accumulation kernel's launch bounds) side by
# side; CuPy's cache keys on the options, so each variant is compiled and cached on its own.
OPTIONS = (
    ("--std=c++17",)
    + (("-DSEALTOP_PTX_FF=0",) if os.environ.get("SEALTOP_PTX_FF") == "0" else ())
    + tuple(f"-D{d.strip()}" for d in os.environ.get("SEALTOP_CUDA_DEFINES", "").split(";") if d.strip())
)


def define(name: str, default: int) -> int:
    """An integer build define's value from SEALTOP_CUDA_DEFINES (OPTIONS), else ``default``: for
    the host code that must agree with a define (a kernel's block size from its launch bounds)."""
    for opt in OPTIONS:
        if opt.startswith(f"-D{name}="):
            return int(opt.split("=", 1)[1])
    return default


_lock = threading.Lock()
_cache: dict[str, Any] = {}


def module(name: str) -> Any:
    """The loaded cupy.RawModule for one of MODULES (compiled on first use)."""
    with _lock:
        mod = _cache.get(name)
        if mod is None:
            import cupy

            mod = cupy.RawModule(code=assemble(MODULES[name]), options=OPTIONS)
            mod.compile()
            _cache[name] = mod
        return mod


def kernel(module_name: str, fn: str) -> Any:
    """One kernel (cupy.RawKernel-like callable) from a module."""
    return module(module_name).get_function(fn)


def _compile_in_child(name: str) -> str:
    module(name)
    return name


def warm_up(parallel: bool = True, progress: Any = None) -> None:
    """Compile (or load from CuPy's disk cache) every module now.

    With parallel=True the modules are first compiled in separate processes (NVRTC is
    single-threaded and the MSM modules take a minute or more each); they land in CuPy's disk
    cache, from which this process then loads them in milliseconds.
    """
    names = [n for n in MODULES if n not in _cache]
    if parallel and len(names) > 1:
        import multiprocessing as mp
        from concurrent.futures import ProcessPoolExecutor, as_completed

        with ProcessPoolExecutor(max_workers=len(names), mp_context=mp.get_context("spawn")) as ex:
            futs = [ex.submit(_compile_in_child, n) for n in names]
            for f in as_completed(futs):
                done = f.result()
                if progress is not None:
                    progress(done)
    for name in names:
        module(name)
