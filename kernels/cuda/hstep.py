"""The fused H step as a plan of NTT passes (kernels/cuda/ntt/ntt_pass.cuh), without CuPy.

Groth16's quotient, as engine/groth16/prove.py and kernels/cuda/poly.py's plain path compute it,
is h = iCoset(a' * b' - c'), with x' = Coset(INTT(x)) the evaluations of x's polynomial on the
coset g<w> (g = FR_COSET_SHIFT): seven NTTs. iCoset undoes Coset, so iCoset(c') = INTT(c) and

    h_k = n^-1 g^-k U(a' b')_k - n^-1 U(c)_k = g^-k (n^-1 U(a' b')_k - n^-1 g^k U(c)_k),

with U the unscaled inverse DFT (U(x)_k = sum_j x_j w^-jk): six transforms, c's coset NTT gone.
Every scale rides on a pass that runs anyway, and a, b, c are transformed in place:

1. a, b, c (one batch): inverse DIF, natural in and bit-reversed out; its last pass multiplies
   the slot of coefficient k by s_row g^k, s = (n^-1, n^-2, n^-1) for (a, b, c).
2. a, b (one batch): forward DIT from that bit-reversed order, natural out: n s_a a', n s_b b'.
3. h: inverse DIT of (n s_a a')(n s_b b') = n^-1 a' b' (s_a s_b = n^-3), the product taken as
   the first pass gathers its input at (n - bitrev(k)) mod n, into a new buffer; the last pass
   subtracts row c at bitrev(k) (n^-1 g^k U(c)_k) and multiplies by g^-k.

The result is h_k exactly (field arithmetic, canonical values), so bit for bit the plain path's.
GPU memory: the 3 x n input and h (16 GiB at 2^27), against two 3 x n batches (24 GiB) before.
:func:`h_plan` lists the launches; poly.py runs them with CuPy, tests/test_cuda_host_ntt.py with
the same pass code built for the host.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from kernels.constants import FR_COSET_SHIFT, R_MOD

Ref = tuple[str, int]  # (buffer name, first batch row)

# The passes' radix: 2 (ntt_dit / ntt_dif: one butterfly a thread a stage), 4 or 8 (ntt_dit4,
# ntt_dit8, ...: 2^K elements a thread, K stages between barriers; a pass of fewer than K stages
# takes the largest radix it has stages for). Bit for bit the same values
# (tests/test_cuda_host_ntt.py). SEALTOP_NTT_RADIX per process. Radix 4 by default: on an H100
# (2026-12-05, scripts/h_small_bench.py --what h4, the same inputs, outputs equal) the fused H
# step took 239.8 ms at 2^27 against 260.9 in radix 2 (27.0 against 27.3 at 2^24); radix 8 took
# 319.0 (114-126 registers a thread against radix 4's 64-72).
RADICES = (2, 4, 8)
RADIX = int(os.environ.get("SEALTOP_NTT_RADIX", "4"))
if RADIX not in RADICES:
    raise ValueError(f"SEALTOP_NTT_RADIX is {RADIX}: it is 2, 4 or 8")


@dataclass(frozen=True)
class Launch:
    """One pass over ``rows`` batch rows: kernel ntt_dit or ntt_dif of ntt.cu."""

    kind: str  # "dit" or "dif"
    rows: int
    log_n: int
    s0: int
    S: int
    src: Ref
    dst: Ref
    src2: Ref | None = None
    gather: int = 0  # DIT first pass: 0 at k, 1 at bitrev(k), 2 at (n - bitrev(k)) mod n
    inverse: int = 0  # DIF: inverse twiddles
    table: str | None = None  # scale table of the last pass: "fwd" or "inv" (see tables())
    sub: Ref | None = None  # DIT last pass: subtract this row at bitrev(k)
    radix: int = 2  # 4 or 8: the kernel's *4 or *8 form (S >= log2 radix)

    @property
    def kernel(self) -> str:
        return f"ntt_{self.kind}{self.radix}" if self.radix > 2 else f"ntt_{self.kind}"

    @property
    def grid(self) -> tuple[int, int]:
        return ((1 << self.log_n) >> self.S, self.rows)

    @property
    def threads(self) -> int:
        return 1 << (self.S - (self.radix.bit_length() - 1))

    @property
    def shared_bytes(self) -> int:
        return (1 << self.S) * 32


def tables(log_n: int) -> dict[str, tuple[int, tuple[int, ...]]]:
    """The scale tables by name: (base, per-row scales), value_row(k) = scales[row] * base^k."""
    n = 1 << log_n
    ninv = pow(n, -1, R_MOD)
    return {
        "fwd": (FR_COSET_SHIFT, (ninv, ninv * ninv % R_MOD, ninv)),
        "inv": (pow(FR_COSET_SHIFT, -1, R_MOD), (1,)),
    }


def stages_per_pass(radix2_stages: int, radix: int | None = None) -> int:
    """Stages a pass at most in ``radix`` (RADIX unless given), from radix 2's: log2(radix) - 1
    more, so that a block keeps radix 2's thread count (a pass of 7 stages in radix 8 would be
    16 threads, half a warp idle), at most 10 (32 KiB of shared memory, the most a launch gets
    without asking)."""
    r = radix or RADIX
    return min(10, radix2_stages + r.bit_length() - 2)


def h_plan(log_n: int, passes: list[tuple[int, int]], radix: int | None = None) -> list[Launch]:
    """The launches of the fused H step on buffers "abc" (uint64[3, n, 4], the evaluations,
    transformed in place) and "h" (uint64[n, 4], the result), for a pass schedule ``passes``
    ((first stage, stage count) from the low bits up, as ntt.pass_schedule gives), in ``radix``
    (RADIX unless given; a pass of S stages at most 2^S)."""
    if log_n < 1:
        raise ValueError("the fused H step needs a domain of at least 2")
    r = radix or RADIX

    def rx(S: int) -> int:
        return min(r, 1 << S)

    plan = [Launch("dif", 3, log_n, s0, S, ("abc", 0), ("abc", 0), inverse=1,
                   table="fwd" if s0 == 0 else None, radix=rx(S)) for s0, S in reversed(passes)]
    plan += [Launch("dit", 2, log_n, s0, S, ("abc", 0), ("abc", 0), radix=rx(S)) for s0, S in passes]
    for s0, S in passes:
        first, last = s0 == 0, s0 + S == log_n
        plan.append(Launch("dit", 1, log_n, s0, S, ("abc", 0) if first else ("h", 0), ("h", 0),
                           src2=("abc", 1) if first else None, gather=2 if first else 0,
                           table="inv" if last else None, sub=("abc", 2) if last else None, radix=rx(S)))
    return plan


def launch_args(launch: Launch, buf: Callable[[Ref], Any], table: Callable[[str], tuple[Any, Any, int]],
                twiddles: Any, null: Any, tab_bits: int) -> tuple[Any, ...]:
    """The kernel's arguments after the grid, integers as numpy scalars of the kernel's types:
    ``buf(ref)`` gives a buffer's pointer at a row, ``table(name)`` (lo, hi, hi_stride in
    32-bit words); the host harness takes the same order."""
    lo, hi, hs = table(launch.table) if launch.table else (null, null, 0)
    i32 = np.int32
    stride = np.uint64((1 << launch.log_n) * 8)  # 32-bit words between batch rows
    scale = (lo, hi, np.uint64(hs), i32(tab_bits))
    if launch.kind == "dif":
        return (buf(launch.dst), stride, twiddles, i32(launch.log_n), i32(launch.s0), i32(launch.S),
                i32(launch.inverse), *scale)
    return (buf(launch.src), buf(launch.src2) if launch.src2 else null, buf(launch.dst), stride, twiddles,
            i32(launch.log_n), i32(launch.s0), i32(launch.S), i32(launch.gather), *scale,
            buf(launch.sub) if launch.sub else null)
