"""Atomic file replacement: a half-written file never replaces a good one.

Every writer of a file an operator keeps (keys, verification keys, proofs, reports, configs)
goes through :func:`atomic_write`: it writes a temp file in the same folder, flushes it to disk,
and only then renames it over the target; on any failure the temp file is removed and the old
file is untouched.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any


@contextmanager
def atomic_write(path: str | os.PathLike, mode: str = "w", encoding: str | None = "utf-8") -> Iterator[IO[Any]]:
    """Yield a file open for writing; ``path`` is replaced only when the block ends normally."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent or ".")
    try:
        with os.fdopen(fd, mode, encoding=None if "b" in mode else encoding) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
