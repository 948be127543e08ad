"""What the point kernels' host sides share: the words of a point in design.md's layout and the
launch shape (the MSM, kernels/cuda/msm.py, and the fixed-base multiplication,
kernels/cuda/fixed_base.py)."""

from __future__ import annotations

# uint64 words per affine point and per XYZZ point
AFFINE_U64 = {"g1": 12, "g2": 24}
XYZZ_U64 = {"g1": 24, "g2": 48}
BLOCK = 128


def grid(n: int, block: int = BLOCK) -> tuple[int]:
    """Blocks of ``block`` threads for n threads (at least one)."""
    return (max(1, (n + block - 1) // block),)
