"""The ``cpu`` Backend: the Backend interface (kernels/backend.py) over the numba kernels.

Field vectors go to kernels/cpu/fr_vec.py, NTTs to kernels/cpu/ntt.py, MSMs to kernels/cpu/msm.py
and fixed-base multiplication to kernels/cpu/fixed_base.py. The curve modules are imported
inside the methods, so that importing this backend (and compiling nothing) stays cheap and a
caller that needs only field work never loads the curve kernels.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from kernels.cpu import fr_vec
from kernels.cpu import ntt as _ntt


class CpuBackend:
    """Backend on this machine's cores; every buffer is a numpy array in the shared layout."""

    name = "cpu"

    def fr_add(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return fr_vec.add(a, b)

    def fr_sub(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return fr_vec.sub(a, b)

    def fr_mul(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return fr_vec.mul(a, b)

    def fr_sqr(self, a: np.ndarray) -> np.ndarray:
        return fr_vec.sqr(a)

    def fr_batch_inv(self, a: np.ndarray) -> np.ndarray:
        return fr_vec.batch_inv(a)

    def ntt(self, a: np.ndarray, *, inverse: bool = False, coset: bool = False) -> np.ndarray:
        return _ntt.ntt(a, inverse=inverse, coset=coset)

    def resident(self, points: np.ndarray) -> Any:
        """Host memory is where the CPU MSM runs, so the table is used as it is."""
        return points

    def msm_g1(self, points: Any, scalars: np.ndarray) -> np.ndarray:
        from kernels.cpu.msm import msm_g1

        return msm_g1(points, scalars)

    def msm_g2(self, points: Any, scalars: np.ndarray) -> np.ndarray:
        from kernels.cpu.msm import msm_g2

        return msm_g2(points, scalars)

    def fixed_base_g1(self, base: np.ndarray, scalars: np.ndarray) -> np.ndarray:
        from kernels.cpu.fixed_base import fixed_base_g1

        return fixed_base_g1(base, scalars)

    def fixed_base_g2(self, base: np.ndarray, scalars: np.ndarray) -> np.ndarray:
        from kernels.cpu.fixed_base import fixed_base_g2

        return fixed_base_g2(base, scalars)
