"""POSIX shared-memory segments: the orchestrator creates and unlinks, workers only use them.

Large vectors (a, b, c and the witness z of each partition) move between processes through
these segments, never through pickling. The rules (design.md, "Processes and shared memory"):

* Only the orchestrator creates and unlinks. Names are ``sealtop-<orchestrator pid>-<tag>``, so a
  sweep can find everything of ours, and a later orchestrator can find what a crashed one left.
* Workers attach with shm_open and mmap directly (see Attached), or a GPU prover reads the
  file behind a segment (segment_path) without mapping it, so multiprocessing's resource
  tracker never hears of their segments. The tracker is shared by a spawn parent and
  its children, and on Python 3.11/3.12 it would unlink or warn about segments the worker does
  not own.
* The orchestrator keeps its own segments registered with the tracker while they are live and
  unregisters each as it unlinks it (release, sweep on stop), so the messages stay balanced.
  The registration is the net for a killed orchestrator: the tracker outlives it until the last
  worker holding its pipe has gone (workers die with their parent, see workers.py), then
  unlinks whatever is still registered. A registry made for another pid (tests) registers
  nothing.
* Semaphores: multiprocessing's queues hold named POSIX semaphores (``/dev/shm/sem.mp-*``)
  that the same tracker unlinks. If the tracker itself was killed they stay;
  :func:`sweep_stale_semaphores` removes the ones that no live process maps.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from multiprocessing import resource_tracker, shared_memory
from typing import Any

import numpy as np

try:  # the stdlib's own binding of shm_unlink(3); present on every POSIX CPython
    import _posixshmem
except ImportError:  # pragma: no cover - non-POSIX
    _posixshmem = None

PREFIX = "sealtop-"
SHM_DIR = "/dev/shm"


def segment_path(name: str) -> str:
    """The file behind a segment (Linux keeps POSIX shared memory under /dev/shm)."""
    return os.path.join(SHM_DIR, name)


def prefix_for(pid: int) -> str:
    """Name prefix of every segment created by the orchestrator with this pid."""
    return f"{PREFIX}{pid}-"


def _unlink_name(name: str) -> bool:
    """shm_unlink a segment by name (without leading slash); False if it was already gone."""
    try:
        if _posixshmem is not None:
            _posixshmem.shm_unlink("/" + name)
        else:  # pragma: no cover
            os.unlink(os.path.join(SHM_DIR, name))
        return True
    except FileNotFoundError:
        return False


@dataclass(frozen=True)
class SegmentSpec:
    """What a worker needs to attach: the name, and the array's shape (dtype is uint64)."""

    name: str
    shape: tuple[int, ...]

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape)) * 8


UNMAP_CHUNK = 64 << 20


def _libc() -> Any:
    import ctypes
    import ctypes.util

    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                          ctypes.c_long]
    libc.munmap.restype = ctypes.c_int
    libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    return libc


_LIBC: Any = None  # libc through ctypes, loaded by the first Attached


class Attached:
    """A worker's view of one segment, as a uint64 array. close() drops the mapping.

    The segment is mapped with libc's mmap rather than Python's mmap so that close() can unmap
    it in 64 MiB pieces. munmap holds the process's memory-map lock for its whole length (about
    40 ms per GB of touched pages): in one piece it stalls every other thread of the process
    that takes a page fault meanwhile, such as a cpu prover slot mapping its next partition. In
    pieces, such a stall is under a millisecond (measured with a thread faulting in fresh pages
    during the unmap of 1 GB: 40 ms in one piece, 0.9 ms in 64 MiB pieces).
    """

    def __init__(self, spec: SegmentSpec):
        import ctypes
        import mmap

        global _LIBC
        if _LIBC is None:
            _LIBC = _libc()
        self.spec = spec
        if _posixshmem is not None:
            fd = _posixshmem.shm_open("/" + spec.name, os.O_RDWR, mode=0o600)
        else:  # pragma: no cover
            fd = os.open(os.path.join(SHM_DIR, spec.name), os.O_RDWR)
        try:
            size = os.fstat(fd).st_size
            addr = _LIBC.mmap(None, size, mmap.PROT_READ | mmap.PROT_WRITE, mmap.MAP_SHARED, fd, 0)
        finally:
            os.close(fd)
        if addr in (None, ctypes.c_void_p(-1).value):
            raise OSError(ctypes.get_errno(), f"mmap of shared-memory segment {spec.name} failed")
        if size < spec.nbytes:
            _LIBC.munmap(addr, size)
            raise ValueError(f"segment {spec.name} holds {size} bytes, {spec.nbytes} expected")
        self._addr: int | None = addr
        self._size = size
        raw: Any = (ctypes.c_char * size).from_address(addr)  # a buffer numpy reads in place
        self._flat = np.frombuffer(raw, dtype=np.uint64, count=spec.nbytes // 8)
        self.array = self._flat.reshape(spec.shape)

    def close(self) -> None:
        import sys

        self.array = None  # type: ignore[assignment]
        if self._addr is None:
            return
        if sys.getrefcount(self._flat) > 2:
            # a view is still held somewhere: keep the mapping (it goes with the process) rather
            # than leave that view pointing at unmapped memory
            return
        addr, self._addr = self._addr, None
        self._flat = None  # type: ignore[assignment]
        for off in range(0, self._size, UNMAP_CHUNK):
            _LIBC.munmap(addr + off, min(UNMAP_CHUNK, self._size - off))


class SegmentRegistry:
    """The orchestrator's live segments and their total size (counted once, whoever maps them)."""

    def __init__(self, pid: int | None = None):
        self.pid = os.getpid() if pid is None else pid
        self.prefix = prefix_for(self.pid)
        self._lock = threading.Lock()
        self._live: dict[str, int] = {}
        self._seq = 0
        self._pool: ThreadPoolExecutor | None = None
        self._swept = False  # after the final sweep, releases run in the caller's thread
        self._track = self.pid == os.getpid()  # registered with the resource tracker

    def create(self, tag: str, shape: tuple[int, ...]) -> SegmentSpec:
        """Create a zero-filled segment for a uint64 array of ``shape`` and return its spec."""
        with self._lock:
            self._seq += 1
            name = f"{self.prefix}{tag}-{self._seq}"
        spec = SegmentSpec(name, tuple(int(s) for s in shape))
        if self._track:
            # Registered before it exists: SharedMemory registers only after shm_open, ftruncate
            # and mmap, and an orchestrator killed in between left a segment the tracker never
            # heard of. The tracker keeps a set, so SharedMemory's own registration adds nothing.
            resource_tracker.register("/" + name, "shared_memory")
        try:
            shm = shared_memory.SharedMemory(name=name, create=True, size=max(spec.nbytes, 1))
        except BaseException:
            self._untrack(name)
            raise
        if not self._track:
            resource_tracker.unregister(shm._name, "shared_memory")  # type: ignore[attr-defined]
        shm.close()
        with self._lock:
            self._live[name] = spec.nbytes
        return spec

    def release(self, spec: SegmentSpec) -> int:
        """Unlink one segment; returns the bytes released (0 if it was not live)."""
        with self._lock:
            nbytes = self._live.pop(spec.name, None)
        if nbytes is None:
            return 0
        _unlink_name(spec.name)
        self._untrack(spec.name)
        return nbytes

    def _untrack(self, name: str) -> None:
        if self._track:
            try:
                resource_tracker.unregister("/" + name, "shared_memory")
            except Exception:  # the tracker is gone (interpreter shutdown): nothing to balance
                pass

    def release_many(self, specs: list[SegmentSpec]) -> int:
        """Unlink several segments at once, one thread each (unlinking is where the kernel frees
        a segment's pages: 105-135 ms for a 1.84 GB `large` partition on the H200 host, one
        segment after another; shm_unlink releases the GIL);
        returns the bytes released."""
        with self._lock:
            if self._pool is None and not self._swept and len(specs) > 1:
                self._pool = ThreadPoolExecutor(4, thread_name_prefix="sealtop-unlink")
            pool = self._pool
        if pool is not None:
            try:
                return sum(pool.map(self.release, specs))
            except RuntimeError:  # shut down by a sweep meanwhile: release what is left here
                pass
        return sum(self.release(s) for s in specs)

    def live_bytes(self) -> int:
        with self._lock:
            return sum(self._live.values())

    def sweep(self) -> list[str]:
        """Unlink every segment with our prefix in /dev/shm, live-tracked or not; returns names."""
        with self._lock:
            pool, self._pool = self._pool, None
            self._swept = True
        if pool is not None:
            pool.shutdown(wait=True)
        with self._lock:
            live = list(self._live)
            self._live.clear()
        removed = sweep_prefix(self.prefix)
        for name in live:
            self._untrack(name)
        return removed


def list_ours(prefix: str = PREFIX) -> list[str]:
    """Names in /dev/shm that start with ``prefix``."""
    try:
        return sorted(n for n in os.listdir(SHM_DIR) if n.startswith(prefix))
    except FileNotFoundError:  # pragma: no cover - no /dev/shm
        return []


def sweep_prefix(prefix: str) -> list[str]:
    """Unlink all segments whose name starts with ``prefix``; returns the names removed."""
    removed = []
    for name in list_ours(prefix):
        if _unlink_name(name):
            removed.append(name)
    return removed


def sweep_stale() -> list[str]:
    """Unlink segments left by orchestrators that no longer run (a crash leaves them behind)."""
    removed = []
    for name in list_ours(PREFIX):
        try:
            pid = int(name[len(PREFIX):].split("-", 1)[0])
        except ValueError:
            continue
        if pid == os.getpid() or pid_alive(pid):
            continue
        if _unlink_name(name):
            removed.append(name)
    return removed


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid exists (one we may not signal counts as alive).

    A thread's id is not a process: kill(2) accepts one, so a dead engine's pid taken by a
    thread of another process read as alive, and its socket (attach: "2 engines are running")
    was never swept. Where /proc says the id is a thread of another process, it is not alive."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("Tgid:"):
                    return int(line.split()[1]) == pid
    except (OSError, ValueError):
        pass
    return True


SEM_PREFIX = "sem.mp-"  # multiprocessing's named semaphores, as glibc files them in /dev/shm
SEM_MIN_AGE_S = 5.0  # never touch a semaphore younger than this (it may be being set up)


def _mapped_semaphores() -> set[int] | None:
    """Inodes of /dev/shm files that some process we can see maps (glibc maps a named
    semaphore for as long as it is open, under the temporary name it was created with, so
    the inode is what identifies it). None if /proc cannot be read at all."""
    try:
        pids = [d for d in os.listdir("/proc") if d.isdigit()]
    except OSError:  # pragma: no cover - no /proc
        return None
    inodes: set[int] = set()
    marker = SHM_DIR + "/"
    for pid in pids:
        try:
            with open(f"/proc/{pid}/maps", encoding="utf-8", errors="replace") as f:
                for line in f:
                    if marker in line:
                        parts = line.split(None, 5)
                        if len(parts) >= 5 and parts[4].isdigit():
                            inodes.add(int(parts[4]))
        except OSError:  # gone meanwhile, or not ours to read (then not ours to sweep either)
            continue
    return inodes


def sweep_stale_semaphores(now: float | None = None) -> list[str]:
    """Unlink multiprocessing semaphores left by dead processes: ours (same uid), older than
    SEM_MIN_AGE_S, and mapped by no live process, so another live program's semaphore is never
    touched. Returns the names removed."""
    import time

    now = time.time() if now is None else now
    try:
        names = [n for n in os.listdir(SHM_DIR) if n.startswith(SEM_PREFIX)]
    except OSError:  # pragma: no cover
        return []
    if not names:
        return []
    mapped = _mapped_semaphores()
    if mapped is None:
        return []
    removed = []
    uid = os.getuid()
    for name in names:
        path = os.path.join(SHM_DIR, name)
        try:
            st = os.stat(path)
        except OSError:
            continue
        if st.st_uid != uid or now - st.st_mtime < SEM_MIN_AGE_S or st.st_ino in mapped:
            continue
        try:
            os.unlink(path)
            removed.append(name)
        except OSError:
            continue
    return removed
