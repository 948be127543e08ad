"""Arrays held in a file and read where they are needed, instead of memory-mapped.

The engine's partitions live in shared-memory segments (files under /dev/shm). A GPU prover
that maps a segment pays for it three times on the host: a page fault per 4 KiB page during
the upload, a munmap afterwards that clears every page-table entry, and, while either runs, the
process's memory-map lock, which stalls every other thread that maps or faults (measured on
the H200: the next partition's mmaps waited 15-45 ms behind an unmap). Reading the file with
pread into a buffer the backend owns costs one copy and none of that.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class StoredArray:
    """A uint64 array of ``shape`` stored from the start of the file at ``path``."""

    path: str
    shape: tuple[int, ...]

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape)) * 8

    def row_bytes(self) -> int:
        return int(np.prod(self.shape[1:])) * 8 if self.ndim > 1 else 8

    def read(self, start: int = 0, stop: int | None = None) -> np.ndarray:
        """Rows start..stop as a new array."""
        stop = self.shape[0] if stop is None else min(stop, self.shape[0])
        rows = max(0, stop - start)
        out = np.empty((rows, *self.shape[1:]), dtype=np.uint64)
        if out.size == 0:
            return out
        fd = os.open(self.path, os.O_RDONLY)
        try:
            read_exact(fd, out.reshape(-1).view(np.uint8).data, start * self.row_bytes())
        finally:
            os.close(fd)
        return out


def read_exact(fd: int, into: memoryview, offset: int) -> None:
    """Fill ``into`` from ``offset`` of ``fd`` (preadv may return fewer bytes than asked)."""
    done = 0
    while done < len(into):
        got = os.preadv(fd, [into[done:]], offset + done)
        if got <= 0:
            raise OSError(f"unexpected end of file at byte {offset + done}")
        done += got
