"""Arrays derived from a circuit's matrices, kept beside them in the circuit's cache entry.

A circuit cache entry (engine.circuit.cache.save_shape) holds each CSR array as a .npy file
that every process memory-maps; nothing changes them once the entry is written. What is derived
from them once per circuit and read by every later process (the compact form's coefficient
indices, engine/groth16/compact.py) is worth keeping there too: at porep-32g making it is one
serial pass over 722 M coefficients (23 GB), and reading it back is a memory map.

Each array is written whole under a temporary name and renamed, so a reader never sees half a
file; a reader that finds a name missing or not the expected shape makes them all again. A
matrix that is not a mapped file (a circuit built in memory, the examples) has no entry: the
arrays are made and not kept.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import numpy as np

from engine.groth16.r1cs import CSR


def entry_of(m: CSR) -> Path | None:
    """The cache entry (a directory) ``m``'s coefficients are mapped from, or None."""
    filename = getattr(m.data, "filename", None)
    return Path(filename).parent if filename else None


def kept(
    entry: Path | None,
    names: list[str],
    make: Callable[[], list[np.ndarray]],
    valid: Callable[[list[np.ndarray]], bool],
) -> list[np.ndarray]:
    """The arrays ``names`` (``<name>.npy`` in ``entry``), memory-mapped when all are there and
    ``valid``; otherwise ``make()``'s, written there for the next reader (not kept when the
    entry cannot be written: a read-only cache still works)."""
    if entry is None:
        return make()
    try:
        found = [np.load(entry / f"{n}.npy", mmap_mode="r") for n in names]
        if valid(found):
            return found
    except (OSError, ValueError):  # not made yet (or unreadable): make them
        pass
    made = make()
    for n, a in zip(names, made):
        path = entry / f"{n}.npy"
        tmp = path.with_name(f"{path.name}.tmp{os.getpid()}")
        try:
            with open(tmp, "wb") as f:
                np.save(f, a)
            os.replace(tmp, path)
        except OSError:
            tmp.unlink(missing_ok=True)
            break
    return made
