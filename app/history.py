"""The dashboard's long history: throughput, GPU busy, memory and per-stage counts per host.

A ring buffer of one point per STEP_S seconds of stream time, POINTS long (an hour and more),
kept per host: the key is an event's optional ``host`` field, "" for the local host, so the
cluster's hosts view can draw any host's history from the same state. Plain Python, folded from
events only (app/state.py calls it), so a replay ends with the history the live run had.
"""

from __future__ import annotations

import bisect
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from engine.stream.schema import ALL_STAGES

STEP_S = 2.0  # one point per this much stream time (the last sample in it wins)
POINTS = 1860  # 62 minutes of points
WINDOW_S = 60.0  # proofs/min over this trailing window
LOCAL = ""  # the key of the local host (events without a host field)


@dataclass
class Point:
    """One point of a host's history."""

    t: float  # the step's start (stream seconds)
    throughput: float  # proofs/min over the trailing WINDOW_S
    gpu_busy: float | None  # mean utilization % of the host's GPUs; None where it has none
    mem_bytes: int  # RSS of its processes plus shared memory
    stages: dict[str, int]  # partitions in each stage


@dataclass
class HostHistory:
    """The ring buffer of one host, with what it needs to make its points."""

    points: deque = field(default_factory=lambda: deque(maxlen=POINTS))
    done_times: list[float] = field(default_factory=list)
    stage_of: dict[tuple[int, int], str] = field(default_factory=dict)  # (job, partition) -> stage
    counts: dict[str, int] = field(default_factory=lambda: {s: 0 for s in ALL_STAGES})

    def throughput(self, t: float) -> float:
        start = max(0.0, t - WINDOW_S)
        span = t - start
        if span <= 0:
            return 0.0
        return (len(self.done_times) - bisect.bisect_left(self.done_times, start)) * 60.0 / span

    def series(self, name: str) -> list[float]:
        """One metric over the kept points: throughput, gpu_busy, mem_bytes or a stage name."""
        if name in ALL_STAGES:
            return [float(p.stages.get(name, 0)) for p in self.points]
        return [float(getattr(p, name) or 0.0) for p in self.points]

    def span_s(self) -> float:
        """Stream seconds the kept points cover."""
        return (self.points[-1].t - self.points[0].t + STEP_S) if self.points else 0.0


def host_key(ev: dict[str, Any]) -> str:
    h = ev.get("host")
    return h if isinstance(h, str) else LOCAL


def on_stage(histories: dict[str, HostHistory], ev: dict[str, Any]) -> None:
    """Keep the host's stage counts: a partition leaves its old stage for the new one."""
    h = histories.setdefault(host_key(ev), HostHistory())
    key = (int(ev["job"]), int(ev["partition"]))
    old = h.stage_of.get(key)
    if old is not None:
        h.counts[old] = h.counts.get(old, 0) - 1
    new = str(ev["stage"])
    h.stage_of[key] = new
    h.counts[new] = h.counts.get(new, 0) + 1


def on_proof_done(histories: dict[str, HostHistory], ev: dict[str, Any], t: float) -> None:
    h = histories.setdefault(host_key(ev), HostHistory())
    if ev.get("verified"):
        bisect.insort(h.done_times, t)


def on_sample(histories: dict[str, HostHistory], ev: dict[str, Any], t: float) -> None:
    """A sample makes (or overwrites) the host's point for its step."""
    h = histories.setdefault(host_key(ev), HostHistory())
    procs = ev.get("processes") or []
    mem = sum(int(p.get("rss_anon") or 0) for p in procs) + int(ev.get("shm_bytes") or 0)
    utils = [float(g["util"]) for g in ev.get("gpus") or [] if g.get("util") is not None]
    step = (t // STEP_S) * STEP_S
    point = Point(step, h.throughput(t), sum(utils) / len(utils) if utils else None, mem,
                  {s: n for s, n in h.counts.items() if n})
    if h.points and h.points[-1].t == step:
        h.points[-1] = point
    else:
        h.points.append(point)
