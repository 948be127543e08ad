"""Compile every CPU kernel once so numba's on-disk cache is warm, and report how long it took.

The first JIT compilation is the slowest thing a fresh install does; CI runs this before the
tests so the cold-compile cost is printed once instead of being hidden inside the first test.
"""

from __future__ import annotations

import sys
import time

import numpy as np


def warm(log=print) -> float:
    """Run each CPU kernel on a tiny input; return the seconds it took. ``log`` gets a line per
    kernel group."""
    t0 = time.perf_counter()
    from kernels.constants import G1_GEN, G2_GEN
    from kernels.cpu.backend import CpuBackend
    from kernels.cpu.convert import g1_to_storage, g2_to_storage, to_mont_fr
    from kernels.cpu.msm import msm_g1, msm_g2

    be = CpuBackend()
    s = to_mont_fr([3, 5, 7, 11])
    # 2^15 takes the NTT's paths past its cache-sized blocks (the flat and paired stages); c=11
    # takes the MSM's batch-affine buckets, which real sizes use. Tiny inputs alone miss both.
    wide = np.tile(s, (1 << 13, 1))
    for step, fn in (
        ("fr vectors", lambda: (be.fr_add(s, s), be.fr_sub(s, s), be.fr_mul(s, s), be.fr_batch_inv(s))),
        ("ntt", lambda: (be.ntt(s), be.ntt(s, inverse=True), be.ntt(s, coset=True),
                         be.ntt(s, inverse=True, coset=True), be.ntt(wide))),
        ("g1", lambda: _msms(be.msm_g1, msm_g1, be.fixed_base_g1(g1_to_storage([G1_GEN])[0], s), s)),
        ("g2", lambda: _msms(be.msm_g2, msm_g2, be.fixed_base_g2(g2_to_storage([G2_GEN])[0], s), s)),
    ):
        t = time.perf_counter()
        fn()
        log(f"  {step:<10} {time.perf_counter() - t:6.1f} s")
    return time.perf_counter() - t0


def _msms(msm, msm_windows, points: np.ndarray, s: np.ndarray) -> None:
    """The backend's MSM, and the bucket kernels it picks at sizes past a few points."""
    msm(points, s)
    msm_windows(points, s, c=11, batch=256)
    msm_windows(points, s, c=11, batch=0)


def main(argv: list[str] | None = None) -> int:
    """`python -m kernels.warm`: compile the CPU kernels now and print how long it took."""
    from kernels.textfmt import OneLineParser

    OneLineParser(prog="python -m kernels.warm", description=(
        "Compile (or load from numba's cache) every CPU kernel, and print how long it "
        "took.")).parse_args(argv)
    secs = warm()
    print(f"numba cold compile: {secs:.1f} s (a second run loads the cache)")
    return 0


if __name__ == "__main__":
    np.seterr(all="ignore")
    sys.exit(main())
