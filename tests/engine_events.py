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



def run_engine(eng: Any, jobs: list[Any], timeout_s: float) -> list[dict]:
    """Start ``eng``, submit ``jobs``, wait until it is idle (an assertion after
    ``timeout_s``), stop it draining, and return its whole event stream."""
    q = eng.subscribe()
    eng.start()
    try:
        for job in jobs:
            eng.submit(job)
        assert eng.wait_idle(timeout_s), "the engine did not finish its jobs"
    finally:
        eng.stop(drain=True, timeout=timeout_s)  # after a failed wait: fail, do not hang
    return drain(q)


def run_jobs(cfg: Any, jobs: list[Any], timeout_s: float, say: Any = None) -> list[dict]:
    """run_engine on a new engine of ``cfg`` (its lines to ``say`` when given)."""
    from engine.pipeline.engine import Engine

    return run_engine(Engine(cfg, say) if say is not None else Engine(cfg), jobs, timeout_s)
