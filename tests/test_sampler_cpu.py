"""Per-process CPU % in the sample event: None on a process's first sample, then the share of
one core it used since the previous one; the schema checks it."""

from __future__ import annotations

import os
import time

from engine.stream.schema import check_event, sample
from engine.telemetry.sampler import Sampler, cpu_seconds


def test_cpu_pct_of_a_busy_process():
    got: list[dict] = []
    s = Sampler(1.0, time.monotonic, got.append, lambda: [(os.getpid(), "engine")], lambda: 0,
                dict, [])
    first = s.sample_now()["processes"][0]
    assert first["cpu_pct"] is None and cpu_seconds(os.getpid()) > 0
    t0 = time.monotonic()
    while time.monotonic() - t0 < 0.4:  # busy: this process uses most of a core
        sum(range(1000))
    pct = s.sample_now()["processes"][0]["cpu_pct"]
    assert 1.0 < pct <= 120.0  # a loaded, shared machine gives it less than a core
    assert check_event(got[-1]) is None


def test_schema_refuses_a_cpu_pct_that_is_not_a_number():
    ev = sample(1.0, [{"pid": 1, "role": "engine", "rss_anon": 1, "cpu_pct": "lots"}], 0, {}, [])
    assert "cpu_pct" in (check_event(ev) or "")
