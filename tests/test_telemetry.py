"""engine/telemetry: RssAnon, NVML with N/A, counters, timers, the sampler."""

from __future__ import annotations

import mmap
import os
import subprocess
import sys

from engine.telemetry import nvml
from engine.telemetry.counters import COUNTER_NAMES, Counters
from engine.telemetry.memory import host_info, rss_anon, total_memory
from engine.telemetry.sampler import Sampler
from engine.telemetry.timers import PartitionTimers, SessionClock


def test_rss_anon_tracks_anonymous_memory():
    """A private anonymous mapping, every page touched, shows up in RssAnon and leaves it when
    unmapped (an explicit mapping, so no allocator can serve it from memory it already holds)."""
    size = 64 * 2**20
    before = rss_anon(os.getpid())
    assert before is not None and before > 0
    block = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    page = mmap.PAGESIZE
    for off in range(0, size, page):
        block[off] = 1
    after = rss_anon(os.getpid())
    assert after - before >= 48 * 2**20
    block.close()
    assert rss_anon(os.getpid()) - before < 16 * 2**20


def test_rss_anon_of_a_gone_process_is_none():
    pid = int(subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                             capture_output=True, text=True).stdout)
    assert rss_anon(pid) is None
    assert rss_anon(-5) is None


def test_host_info_and_total():
    h = host_info()
    assert h["cpus"] >= 1 and h["ram_bytes"] > 2**20
    procs = [{"rss_anon": 10}, {"rss_anon": None}, {"rss_anon": 5}]
    assert total_memory(procs, 100) == 115


def test_nvml_readings_are_na_not_errors():
    gpus = nvml.gpu_list()
    assert isinstance(gpus, list)
    r = nvml.read_gpu(0)
    keys = {"index", "util", "mem_used", "mem_total", "power_w", "temp_c", "sm_clock_mhz"}
    assert set(r) == keys
    if not gpus:  # this machine: no GPU or no driver → every metric N/A
        assert all(r[k] is None for k in keys - {"index"})
    r = nvml.read_gpu(999)  # an index that does not exist is N/A too
    assert all(r[k] is None for k in keys - {"index"})


def test_nvml_swallows_a_failing_driver(monkeypatch):
    class Broken:
        NVML_TEMPERATURE_GPU = 0
        NVML_CLOCK_SM = 1

        def nvmlDeviceGetHandleByIndex(self, i):
            return object()

        def __getattr__(self, name):
            def fail(*a):
                raise RuntimeError("NVML_ERROR_NOT_SUPPORTED")

            return fail

    monkeypatch.setattr(nvml, "_nvml", lambda: Broken())
    r = nvml.read_gpu(0)
    assert r["index"] == 0 and r["util"] is None and r["power_w"] is None


def test_counters():
    c = Counters()
    assert set(c.snapshot()) == set(COUNTER_NAMES)
    c.add("holding_abc", 3)
    c.add("holding_abc", -2)
    assert c.get("holding_abc") == 1 and c.max_holding_abc == 3
    try:
        c.add("nope")
    except KeyError:
        pass
    else:
        raise AssertionError("unknown counter accepted")


def test_timers_and_clock():
    clk = SessionClock()
    t0 = clk.now()
    assert t0 >= 0 and clk.now() >= t0
    pt = PartitionTimers()
    pt.mark("gpu", 1.0)
    pt.span("gpu_wrapper", "gpu", 1.25)
    pt.span("queue", "never-marked", 2.0)
    pt.set("b2", None)
    pt.set("ntt", 3)
    assert pt.ms == {"gpu_wrapper": 250.0, "ntt": 3.0}


def test_sampler_emits_sample_events():
    got = []
    s = Sampler(0.02, lambda: 1.5, got.append, lambda: [(os.getpid(), "orchestrator")],
                lambda: 42, lambda: {"holding_abc": 0}, [0])
    ev = s.sample_now()
    assert ev["kind"] == "sample" and ev["shm_bytes"] == 42 and ev["t"] == 1.5
    assert ev["processes"][0]["rss_anon"] > 0 and ev["gpus"][0]["index"] == 0
    s.start()
    import time

    time.sleep(0.2)
    s.stop()
    assert len(got) >= 3
