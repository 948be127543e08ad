"""A C1 output file as the engine reads it: parsed once per process while the file is unchanged
(a 32 GiB sector's vanilla proofs are a large JSON file, and every synthesis worker needs them)."""

from __future__ import annotations

import functools
import os
from typing import Any


class C1JobError(ValueError):
    """A C1 job that cannot run (an unreadable file, ids missing or malformed); one line."""


@functools.lru_cache(maxsize=4)
def _read(path: str, size: int, mtime_ns: int) -> Any:
    from engine.seal.c1json import read_c1

    return read_c1(path)


def load_c1(path: str) -> Any:
    """The C1 output at ``path``, parsed once per process while the file is unchanged."""
    try:
        st = os.stat(path)
    except OSError as exc:
        raise C1JobError(f"cannot read C1 output {path}: {exc.strerror or exc}") from None
    return _read(os.path.abspath(path), st.st_size, st.st_mtime_ns)
