"""The ``cpu`` Backend: the Backend interface (kernels/backend.py) over the numba kernels.

Field vectors go to kernels/cpu/fr_vec.py, NTTs to kernels/cpu/ntt.py, MSMs to kernels/cpu/msm.py
and fixed-base multiplication to kernels/cpu/fixed_base.py. The curve modules are imported
inside the methods, so that importing this backend (and compiling nothing) stays cheap and a
caller that needs only field work never loads the curve kernels.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from kernels.cpu import fr_vec
from kernels.cpu import ntt as _ntt
from kernels.stored import StoredArray


class CpuBackend:
    """Backend on this machine's cores; every buffer is a numpy array in the shared layout."""

    name = "cpu"
    is_device = False  # computes on host arrays (a shared-memory segment's mapping as it is)

    # --- capabilities (kernels/backend.py): a host backend has no device to wait for or free ---
    @staticmethod
    def unavailable_reason() -> str | None:
        """None: numba and this machine's cores are always there."""
        return None

    @staticmethod
    def select_device(device: int) -> None:
        """Nothing to select: every core of this machine is the cpu backend's."""

    def synchronize(self) -> None:
        """Nothing is queued: every operation has returned its result."""

    def release_pools(self) -> None:
        """Nothing is pooled: numpy hands memory back as arrays go."""

    def memory_info(self) -> tuple[int, int] | None:
        return None

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

    def h_coefficients(self, a: np.ndarray, b: np.ndarray, c: np.ndarray, n: int) -> np.ndarray:
        """Groth16's H (before the 1/(g^n - 1) scale) from evaluations on <omega>."""
        if n < 1 or n & (n - 1):
            raise ValueError(f"domain size must be a power of two, got {n}")
        coset = []
        for v in (a, b, c):
            if v.ndim != 2 or v.shape[1] != 4 or v.shape[0] > n:
                raise ValueError(f"evaluation vector has shape {list(v.shape)}, domain is {n}")
            padded = np.zeros((n, 4), np.uint64)
            padded[: v.shape[0]] = v
            coset.append(_ntt.ntt(_ntt.ntt(padded, inverse=True), coset=True))
        ab_c = fr_vec.sub(fr_vec.mul(coset[0], coset[1]), coset[2])
        del coset
        return _ntt.ntt(ab_c, inverse=True, coset=True)

    def resident(self, points: np.ndarray, endo: bool = False, pairs: bool = False) -> Any:
        """Host memory is where the CPU MSM runs, so the table is used as it is (endo and pairs,
        the GPU's GLV and pair tables, do not apply)."""
        return points

    def place(self, a: Any) -> np.ndarray:
        return a.read() if isinstance(a, StoredArray) else a

    def fetch(self, a: np.ndarray) -> np.ndarray:
        return np.asarray(a)

    def detach(self) -> None:
        return None  # the CPU's results are ready when its calls return

    def fetch_detached(self, pending: Any, xs: list[Any]) -> list[np.ndarray]:
        return [np.asarray(x) for x in xs]

    def mark(self) -> float:
        return time.perf_counter()

    def elapsed_ms(self, start: float, end: float) -> float:
        return (end - start) * 1e3

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
