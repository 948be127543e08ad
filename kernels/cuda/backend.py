"""The ``cuda`` Backend: the Backend interface (kernels/backend.py) over CuPy RawKernels.

Host arrays in, host arrays out, in design.md's layout, bit-identical to the cpu backend. Each
method also accepts CuPy device arrays (and then returns device arrays), so a prover can keep
vectors on the GPU between calls. ``resident(points)`` uploads a point table once and returns a
handle that the MSMs use without copying it again (the proving key stays on the device).

Each calling thread gets its own CUDA stream (kernels/cuda/stream.py). Two prover slots in one
process therefore overlap: one slot's kernels run while the other is in host code (Python,
transfers, the host finish of an MSM), and the CUDA events of ``mark`` time each slot's own
work. Results come back to the host through ``to_host``, which lets the stream settle first.
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from kernels.cuda import msm as _msm
from kernels.cuda import msm_ends as _ends
from kernels.cuda import ntt as _ntt
from kernels.cuda import pairs as _pairs
from kernels.cuda.fixed_base import FixedBase
from kernels.cuda.module import kernel
from kernels.cuda.stream import cupy_module as _cp
from kernels.cuda.stream import thread_stream, to_host
from kernels.cuda.upload import upload_stored
from kernels.stored import StoredArray


@dataclass
class ResidentPoints:
    """A point table held in device memory (uint64[n, 12] for G1, [n, 24] for G2); ``endo``, when
    made (G1), the table's 2n rows of points and their endomorphism images (msm.endo_table),
    of which ``data`` is the first half; ``pairs``, when made, the n points and then their pairs'
    sums (kernels/cuda/pairs.py), of which ``data`` is the first n rows."""

    data: Any
    endo: Any = None
    pairs: Any = None

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.data.shape)

    def __len__(self) -> int:
        return int(self.data.shape[0])


def _is_device(x: Any) -> bool:
    cp = _cp()
    return isinstance(x, (cp.ndarray, ResidentPoints))


def _dev(x: Any) -> Any:
    cp = _cp()
    if isinstance(x, ResidentPoints):
        return x.data
    if isinstance(x, StoredArray):
        return upload_stored(x)
    return cp.ascontiguousarray(cp.asarray(x, dtype=cp.uint64))


def _back(x: Any, like_device: bool) -> Any:
    return x if like_device else to_host(x)


_OPS = {"add": 0, "sub": 1, "mul": 2, "sqr": 3, "inv": 4}
F = TypeVar("F", bound=Callable[..., Any])


def _on_stream(fn: F) -> F:
    @functools.wraps(fn)
    def run(*args: Any, **kw: Any) -> Any:
        with thread_stream():
            return fn(*args, **kw)

    return run  # type: ignore[return-value]


class CudaBackend:
    """Backend on the current CUDA device (CuPy's current device and stream)."""

    name = "cuda"
    is_device = True  # computes in GPU memory: vectors are uploaded, point tables kept resident

    def __init__(self) -> None:
        self._fixed: dict[tuple[str, bytes], FixedBase] = {}
        self._local = threading.local()  # per thread: its MSMs' ends not yet joined

    # --- capabilities (kernels/backend.py) ------------------------------------------------------
    @staticmethod
    def unavailable_reason() -> str | None:
        """None where CuPy imports and sees a CUDA device, else which of the two is missing."""
        try:
            import cupy
        except Exception as exc:  # ImportError, or a broken CUDA install
            return f"cupy is not importable ({type(exc).__name__}: {exc})".splitlines()[0]
        try:
            n = cupy.cuda.runtime.getDeviceCount()
        except Exception as exc:
            return f"no usable CUDA driver ({type(exc).__name__})"
        if n == 0:
            return "no CUDA device present"
        return None

    @staticmethod
    def select_device(device: int) -> None:
        """Make GPU ``device`` the only one this process sees, before CUDA starts here: CuPy's
        current device is per thread, so selecting it in one thread would leave the others on
        device 0; hiding the rest covers every thread. ``device`` counts the GPUs this process
        was allowed to see (CUDA_VISIBLE_DEVICES, when set, maps it to the system's number)."""
        seen = [d.strip() for d in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")
                if d.strip()]
        os.environ["CUDA_VISIBLE_DEVICES"] = seen[device] if device < len(seen) else str(device)

    def synchronize(self) -> None:
        _cp().cuda.Device().synchronize()

    def release_pools(self) -> None:
        cp = _cp()
        cp.get_default_memory_pool().free_all_blocks()
        cp.get_default_pinned_memory_pool().free_all_blocks()

    def memory_info(self) -> tuple[int, int] | None:
        free, total = _cp().cuda.runtime.memGetInfo()
        return int(free), int(total)

    # --- Fr vectors ---------------------------------------------------------------------------
    @_on_stream
    def _fr_op(self, op: str, a: Any, b: Any | None) -> Any:
        cp = _cp()
        dev = _is_device(a)
        A = _dev(a)
        if A.ndim != 2 or A.shape[1] != 4:
            raise ValueError(f"expected an Fr vector uint64[n, 4], got shape {tuple(A.shape)}")
        B = A if b is None else _dev(b)
        if B.shape != A.shape:
            raise ValueError("Fr vectors differ in length")
        out = cp.empty_like(A)
        n = int(A.shape[0])
        if n:
            kernel("field", "fr_binop")(((n + 255) // 256,), (256,), (np.int32(_OPS[op]), A, B, out, np.uint64(n)))
        return _back(out, dev)

    def fr_add(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return self._fr_op("add", a, b)

    def fr_sub(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return self._fr_op("sub", a, b)

    def fr_mul(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return self._fr_op("mul", a, b)

    def fr_sqr(self, a: np.ndarray) -> np.ndarray:
        return self._fr_op("sqr", a, None)

    def fr_batch_inv(self, a: np.ndarray) -> np.ndarray:
        """Elementwise inverse (Fermat, one per thread); zeros map to zero, as on the cpu."""
        return self._fr_op("inv", a, None)

    # --- NTT ----------------------------------------------------------------------------------
    @_on_stream
    def ntt(self, a: np.ndarray, *, inverse: bool = False, coset: bool = False) -> np.ndarray:
        dev = _is_device(a)
        return _back(_ntt.ntt(_dev(a), inverse=inverse, coset=coset), dev)

    @_on_stream
    def h_coefficients(self, a: Any, b: Any, c: Any, n: int) -> Any:
        """Groth16's H coefficients (before the 1/(g^n - 1) scale) with a, b, c uploaded once
        and transformed as one batch; equals the engine's sequence of ntt/fr_mul/fr_sub calls."""
        from kernels.cuda.poly import h_coefficients

        dev = _is_device(a)
        return _back(h_coefficients(a, b, c, n), dev)

    # --- placement and timing -------------------------------------------------------------------
    @_on_stream
    def place(self, a: Any) -> Any:
        """One upload on this thread's stream (a StoredArray is read from its file through
        pinned buffers; a numpy array is a pageable copy); device arrays pass through."""
        return _dev(a)

    @_on_stream
    def fetch(self, a: Any) -> np.ndarray:
        # after the thread's MSM ends still beside (none with SEALTOP_MSM_ENDS=inline)
        return self.fetch_detached(self._ends(), [a])[0]

    def detach(self) -> Any:
        """This thread's MSM ends not yet joined (msm_ends.Ends), handed over; the thread starts
        a new list."""
        got = self._ends()
        self._local.ends = _ends.Ends()
        return got

    @_on_stream
    def fetch_detached(self, pending: Any, xs: list[Any]) -> list[np.ndarray]:
        """Device results read on this thread's stream after it waited for ``pending`` (another
        thread's detached MSM ends); their kept blocks go once the copies have synchronized."""
        held = pending.join() if pending is not None else []
        out = [to_host(x) if _is_device(x) else np.asarray(x) for x in xs]
        del held
        return out

    def mark(self) -> Any:
        ev = _cp().cuda.Event()
        ev.record(thread_stream())
        return ev

    def elapsed_ms(self, start: Any, end: Any) -> float:
        end.synchronize()
        return float(_cp().cuda.get_elapsed_time(start, end))

    # --- points -------------------------------------------------------------------------------
    @_on_stream
    def resident(self, points: np.ndarray, endo: bool = False, pairs: bool = False) -> ResidentPoints:
        """Upload a point table once; MSMs given the handle read it in place. endo (a G1 table of
        at least msm.GLV_MIN_TAIL rows): keep the points' endomorphism images beside them, so that
        an MSM with mostly full-length scalars (H's) can split them GLV-wise; twice the memory,
        made only where it leaves pairs.PAIRS_RESERVE free (not on an 80 GB card at porep-32g).
        pairs (a table whose MSMs' scalars are mostly 0 and 1: A, B and L's): with
        SEALTOP_MSM_PAIRS=1, keep the sums of its points' pairs beside them (kernels/cuda/pairs.py),
        so that the ones' sums add one point a pair of ones; half as much memory again, made only
        where it leaves pairs.PAIRS_RESERVE free (the calls' room)."""
        if isinstance(points, ResidentPoints):
            return points
        dev = _dev(points)
        table = ResidentPoints(dev)
        if (endo and dev.ndim == 2 and dev.shape[1] == _msm.AFFINE_U64["g1"] and dev.shape[0] >= _msm.GLV_MIN_TAIL
                and _pairs.leaves_room(dev.nbytes)):
            try:
                ext = _msm.endo_table(dev)
            except _cp().cuda.memory.OutOfMemoryError:
                pass  # no room for the images: the MSMs run unsplit on the plain table
            else:
                del dev
                table = ResidentPoints(ext[: ext.shape[0] // 2], ext)
        elif (pairs and _pairs.PAIRS and dev.ndim == 2 and dev.shape[0] >= 2 and (group := _pairs.group_of(dev))
              and _pairs.room_for(group, int(dev.shape[0]))):
            try:
                ext = _pairs.pair_table(group, dev)
            except _cp().cuda.memory.OutOfMemoryError:
                pass  # no room for the pairs: the ones are listed one by one
            else:
                n = dev.shape[0]
                del dev
                table = ResidentPoints(ext[:n], pairs=ext)
        thread_stream().synchronize()  # other threads' streams read it next
        return table

    @_on_stream
    def _msm(self, group: str, points: Any, scalars: Any) -> Any:
        dev = _is_device(scalars)
        P, S = _dev(points), _dev(scalars)
        width = _msm.AFFINE_U64[group]
        if P.ndim != 2 or P.shape[1] != width:
            raise ValueError(f"points must be uint64[n, {width}], got shape {tuple(P.shape)}")
        if S.ndim != 2 or S.shape[1] != 4:
            raise ValueError(f"scalars must be uint64[n, 4], got shape {tuple(S.shape)}")
        if S.shape[0] > P.shape[0]:
            raise ValueError(f"{P.shape[0]} points but {S.shape[0]} scalars")
        held = points if isinstance(points, ResidentPoints) else ResidentPoints(None)
        # a device result is read through fetch(), which joins the ends queued beside
        ends = self._ends() if dev and _ends.ENDS == "side" else None
        out = _msm.msm(group, P, S, endo=held.endo, pairs=held.pairs, ends=ends)[0]
        return _back(out, dev)

    def _ends(self) -> Any:
        """The calling thread's MSMs whose ends run on its side stream (msm_ends.Ends), not yet joined."""
        got = getattr(self._local, "ends", None)
        if got is None:
            got = self._local.ends = _ends.Ends()
        return got

    def msm_g1(self, points: Any, scalars: np.ndarray) -> np.ndarray:
        return self._msm("g1", points, scalars)

    def msm_g2(self, points: Any, scalars: np.ndarray) -> np.ndarray:
        return self._msm("g2", points, scalars)

    # --- fixed base (setup) ---------------------------------------------------------------------
    @_on_stream
    def fixed_base(self, group: str, base: Any, scalars: Any, out: Any | None = None) -> Any:
        """scalars[i] * base for every i; device arrays in give device arrays out (keys can be
        generated straight into GPU memory by passing a device ``out``)."""
        dev = _is_device(scalars) or out is not None
        b = np.ascontiguousarray(to_host(_dev(base)) if _is_device(base) else np.asarray(base, dtype=np.uint64))
        key = (group, b.tobytes())
        fb = self._fixed.get(key)
        if fb is None:
            fb = FixedBase(group, b)
            thread_stream().synchronize()  # the table is shared with other threads' streams
            if len(self._fixed) > 16:
                self._fixed.clear()
            self._fixed[key] = fb
        return _back(fb.mul(_dev(scalars), out), dev)

    def fixed_base_g1(self, base: np.ndarray, scalars: np.ndarray) -> np.ndarray:
        return self.fixed_base("g1", base, scalars)

    def fixed_base_g2(self, base: np.ndarray, scalars: np.ndarray) -> np.ndarray:
        return self.fixed_base("g2", base, scalars)
