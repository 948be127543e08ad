"""The pair table of a query's points: P_2j + P_(2j+1) beside the points, so that the ones' sum
of an MSM whose scalars are mostly 0 and 1 adds one point where a pair of scalars is (1, 1).

Counted on real witnesses of sectors sealed with random data (scripts/ones_pairs.py), the ones'
list by pairs has 0.751-0.756 of the entries of the list by points, for A, B and L alike; at
porep-32g the ones' sums are ~91 ms of a partition's GPU time (A, B1, L and B2), for half a point
more a scalar in those tables. The table is the points followed by their pairs' sums, affine,
so the accumulation kernel reads either from one array (the ones' list names rows from
``len(points)`` on for pairs: msm/classify.cuh's compact_write_pairs); the sums come from
msm/fixed_base.cuh's pair_thread, K pairs a thread sharing one inversion.

On by default (SEALTOP_MSM_PAIRS=0 turns it off): on the H200 the pairs took ~15 ms off the four
witness MSMs of a porep-32g partition, and the pipeline with them, B2 in the call and the MSM ends
beside ran at 1.045 s a partition (docs/BENCHMARKS.md, thirteenth round).
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from kernels.cuda.module import kernel
from kernels.cuda.points import AFFINE_U64, BLOCK
from kernels.cuda.points import grid as _grid
from kernels.cuda.stream import cupy_module as _cp

PAIRS = os.environ.get("SEALTOP_MSM_PAIRS", "1") == "1"
# What a pair table or H's GLV images must leave free on the card: the prover's compact matrices
# (placed on its first partition: 5.5 GiB at porep-32g) and a call's working set beside the key
# (porep-32g on the H200, eleventh round: 107.6 GiB steady with a 70 GiB key and 12 GiB of GLV
# images, so ~26 GiB; on an H100, 2026-12-05, H's unsplit MSM asked for 10.6 GB of sorted
# entries with 19.7 GB of the call's buffers live), and an extra that would leave less is not
# made. On an H200 at porep-32g every extra is made; on an 80 GB card none is (the key leaves
# ~35 GiB). The key's room check (engine/pipeline/proving.py device_bytes) counts none of them.
PAIRS_RESERVE = int(os.environ.get("SEALTOP_MSM_PAIRS_RESERVE", str(40 << 30)))
PAIR_PER_THREAD = 32  # pairs a thread normalizes with one inversion
PAIR_CHUNK = 1 << 23  # pairs a launch: bounds the scratch (three field rows a pair)


def group_of(points: Any) -> str | None:
    """"g1" or "g2" from a table's row width (None for neither)."""
    width = int(points.shape[1]) if points.ndim == 2 else -1
    return next((g for g, w in AFFINE_U64.items() if w == width), None)


def leaves_room(nbytes: int) -> bool:
    """Whether ``nbytes`` more leave PAIRS_RESERVE bytes free on the card (the driver's free
    memory plus what CuPy's pool holds unused)."""
    cp = _cp()
    free = int(cp.cuda.runtime.memGetInfo()[0]) + int(cp.get_default_memory_pool().free_bytes())
    return free - nbytes >= PAIRS_RESERVE


def room_for(group: str, rows: int) -> bool:
    """Whether a pair table of ``rows`` points leaves PAIRS_RESERVE bytes free on the card."""
    return leaves_room(8 * AFFINE_U64[group] * (rows + rows // 2))


def pair_table(group: str, points: Any, per_thread: int = PAIR_PER_THREAD, chunk: int = PAIR_CHUNK) -> Any:
    """Device uint64[n + n // 2, words]: the n points, then P_2j + P_(2j+1) for j < n // 2
    (affine, infinity all zeros). per_thread and chunk for tests."""
    cp = _cp()
    aw = AFFINE_U64[group]
    points = cp.ascontiguousarray(points, dtype=cp.uint64)
    n = int(points.shape[0])
    npairs = n // 2
    ext = cp.empty((n + npairs, aw), dtype=cp.uint64)
    ext[:n] = points
    if npairs == 0:
        return ext
    fn = kernel(f"msm_{group}", f"{group}_pair_sums")
    step = max(1, min(chunk, npairs))
    scratch = cp.empty(3 * step * aw // 2, dtype=cp.uint64)  # ZZ, ZZZ and a running product a pair
    for lo in range(0, npairs, step):
        m = min(step, npairs - lo)
        threads = -(-m // per_thread)
        fn(_grid(threads), (BLOCK,), (points[2 * lo: 2 * (lo + m)], np.uint64(m), np.uint32(per_thread),
                                      ext[n + lo: n + lo + m], scratch))
    return ext
