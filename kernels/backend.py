"""The Backend interface: the few bulk operations a Groth16 prover needs, over the shared layout.

Every array is in design.md's storage layout: Fr ``uint64[n, 4]``, G1 affine ``uint64[n, 12]``
(x then y, Fp Montgomery), G2 affine ``uint64[n, 24]`` (x.c0, x.c1, y.c0, y.c1); the point at
infinity is all zeros. Scalars are Fr in Montgomery form, exactly as stored, so a buffer moves
between backends without conversion and both backends give bit-identical results.

``cpu`` (numba) is always present; ``cuda`` (CuPy RawKernels) reports itself unavailable, with a
reason, where there is no GPU.

Beside the arithmetic, each backend says what it is, so that callers never test its name:
``unavailable_reason`` (why it cannot run here, or None; asked before it starts),
``is_device`` (it computes in a device's memory, so vectors are copied there), ``select_device``
(in a fresh process, before the backend starts: compute on that device only), ``synchronize``
(wait for queued device work, so a host timer covers it), ``release_pools`` (hand cached
device and pinned memory back) and ``memory_info`` (the device's free and total bytes). A new
vendor is a class that implements this Protocol plus one line in ``_CLASSES`` below.
"""

from __future__ import annotations

import importlib
from typing import Any, Protocol, cast

import numpy as np


class BackendUnavailable(RuntimeError):
    """Raised by get_backend when the named backend cannot run here; the message says why."""


class Backend(Protocol):
    name: str
    is_device: bool  # computes in a device's memory (vectors are copied to it), not the host's

    # None when the backend can run here, else one line saying why not (no library, no device);
    # asked before any instance exists, so it starts nothing. Static, as select_device.
    @staticmethod
    def unavailable_reason() -> str | None: ...

    # Compute on device ``device`` only (the system's numbering), in a process where the backend
    # has not started yet; a host backend ignores it. Static: it runs before any instance.
    @staticmethod
    def select_device(device: int) -> None: ...

    # Wait until the work queued on the device is done (no-op on a host backend).
    def synchronize(self) -> None: ...

    # Hand the memory the backend caches (device and pinned pools) back to the system.
    def release_pools(self) -> None: ...

    # (free, total) bytes of the current device's memory; None on a host backend.
    def memory_info(self) -> tuple[int, int] | None: ...

    # Fr vectors (elementwise; same shapes in and out)
    def fr_add(self, a: np.ndarray, b: np.ndarray) -> np.ndarray: ...
    def fr_sub(self, a: np.ndarray, b: np.ndarray) -> np.ndarray: ...
    def fr_mul(self, a: np.ndarray, b: np.ndarray) -> np.ndarray: ...
    def fr_sqr(self, a: np.ndarray) -> np.ndarray: ...
    def fr_batch_inv(self, a: np.ndarray) -> np.ndarray: ...

    # NTT over Fr, natural order in and out; n a power of two.
    # coset=True evaluates on FR_COSET_SHIFT·<omega> (forward) or interpolates from it (inverse).
    def ntt(self, a: np.ndarray, *, inverse: bool = False, coset: bool = False) -> np.ndarray: ...

    # Groth16's H before the 1/(g^n - 1) scale: from evaluations a, b, c on <omega> (each
    # uint64[<= n, 4], zero-padded to n), the inverse coset NTT of (A·B − C) on the coset.
    # One call so a device backend uploads a, b, c once and transforms them as a batch.
    def h_coefficients(self, a: np.ndarray, b: np.ndarray, c: np.ndarray, n: int) -> np.ndarray: ...

    # Keep a point table where the MSMs run (device memory for cuda; the array itself for cpu).
    # endo: the table's MSMs have mostly full-length scalars (H's), so a backend may keep what
    # an endomorphism split needs beside it (cuda: the G1 points' images, twice the memory).
    def resident(self, points: np.ndarray, endo: bool = False, pairs: bool = False) -> Any: ...

    # Move a vector to where the backend computes (one upload for cuda; as it is for cpu), and a
    # small result back to the host. ``place`` also takes a kernels.stored.StoredArray, read
    # from its file without mapping it (through pinned buffers for cuda; into memory for cpu). Operations given placed vectors return placed vectors, so a
    # prover uploads its inputs once and keeps intermediates (H's coefficients) on the device.
    def place(self, a: np.ndarray) -> Any: ...
    def fetch(self, a: Any) -> np.ndarray: ...

    # Results of MSMs this thread queued, read on another thread: ``detach`` hands over what
    # reading them must wait for (cuda: the MSM ends still running beside; cpu: None) and leaves
    # this thread none, and ``fetch_detached`` reads them on the calling thread once that is done.
    def detach(self) -> Any: ...
    def fetch_detached(self, pending: Any, xs: list[Any]) -> list[np.ndarray]: ...

    # A point on the backend's own timeline (a CUDA event on the calling thread's stream for
    # cuda; the host clock for cpu), and the milliseconds between two of them. Kernel-group
    # timings come from these, so they measure device time, not host time around a call.
    def mark(self) -> Any: ...
    def elapsed_ms(self, start: Any, end: Any) -> float: ...

    # Multi-scalar multiplication: sum_i scalars[i] * points[i], returned affine.
    def msm_g1(self, points: Any, scalars: np.ndarray) -> np.ndarray: ...
    def msm_g2(self, points: Any, scalars: np.ndarray) -> np.ndarray: ...

    # Fixed-base multiplication: out[i] = scalars[i] * base, affine (used by setup).
    def fixed_base_g1(self, base: np.ndarray, scalars: np.ndarray) -> np.ndarray: ...
    def fixed_base_g2(self, base: np.ndarray, scalars: np.ndarray) -> np.ndarray: ...


# name → (module, class) of every backend; "auto" is not a backend but a choice among them.
_CLASSES = {"cpu": ("kernels.cpu.backend", "CpuBackend"),
            "cuda": ("kernels.cuda.backend", "CudaBackend")}


def backend_class(name: str) -> type[Backend]:
    """The class of backend ``name`` (``cpu`` or ``cuda``), without starting it: importing a
    backend's module touches no device, so its class attributes (``is_device``) and
    ``select_device`` are safe to use before the backend runs."""
    if name not in _CLASSES:
        raise BackendUnavailable(f"unknown backend {name!r} (choose {', '.join(_CLASSES)})")
    module, cls = _CLASSES[name]
    return cast("type[Backend]", getattr(importlib.import_module(module), cls))


def is_device_backend(name: str | None) -> bool:
    """Whether backend ``name`` (as a config or a recorded session names it) computes on a
    device; False for an unknown name or None (a session that did not say)."""
    try:
        return name is not None and backend_class(name).is_device
    except (BackendUnavailable, ImportError):
        return False


def unavailable_reason(name: str) -> str | None:
    """None when backend ``name`` can run here, else one line saying why not (its class's
    answer; BackendUnavailable for a name that is no backend)."""
    try:
        cls = backend_class(name)
    except ImportError as exc:  # the backend's own module is broken
        return f"{name} backend not importable ({type(exc).__name__}: {exc})".splitlines()[0]
    return cls.unavailable_reason()


def cuda_unavailable_reason() -> str | None:
    """None when the cuda backend can run here, else one line saying why not."""
    return unavailable_reason("cuda")


def pick_backend(requested: str) -> str:
    """The backend that ``requested`` (a backend's name or ``auto``) runs on here: ``auto`` is
    the first device backend that can run, else the host one. Raises BackendUnavailable with the
    reason when a named backend cannot run, or is none."""
    if requested != "auto":
        reason = unavailable_reason(requested)
        if reason is not None:
            raise BackendUnavailable(reason)
        return requested
    for name in _CLASSES:
        if is_device_backend(name) and unavailable_reason(name) is None:
            return name
    return next(n for n in _CLASSES if not is_device_backend(n))


def get_backend(name: str = "auto") -> Backend:
    """Start and return the backend :func:`pick_backend` picks for ``name`` (``auto``: a device
    backend where one can run, else the host one)."""
    if name != "auto" and name not in _CLASSES:
        raise BackendUnavailable(f"unknown backend {name!r} (choose {', '.join(_CLASSES)} or auto)")
    try:
        chosen = pick_backend(name)
    except BackendUnavailable as exc:
        raise BackendUnavailable(f"{name} backend unavailable: {exc}") from None
    return backend_class(chosen)()
