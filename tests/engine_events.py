"""Reading an engine's event stream in tests."""

from __future__ import annotations

import queue
from typing import Any


def drain(q: queue.Queue[Any]) -> list[dict]:
    """Every event waiting in a subscription queue, without blocking (after a stop: the rest of
    the run's stream)."""
    out = []
    while True:
        try:
            out.append(q.get_nowait())
        except queue.Empty:
            return out
