"""The pipeline's pieces without worker processes: channel, admission, shared memory, and the
event-derived summaries (bound, maxima, counters)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

from engine.pipeline.channel import BoundedChannel, ChannelClosed
from engine.pipeline.scheduler import Admission, AdmissionClosed
from engine.pipeline.shm import (
    Attached,
    SegmentRegistry,
    list_ours,
    prefix_for,
    sweep_stale,
)
from engine.stream import schema as events
from engine.stream import summary

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_channel_blocks_when_full_and_resizes_without_dropping():
    ch = BoundedChannel(1)
    assert ch.put("a")
    entered = []
    t = threading.Thread(target=lambda: entered.append(ch.put("b", on_enter=entered.append)))
    t.start()
    time.sleep(0.05)
    assert entered == [] and len(ch) == 1  # blocked: full
    assert ch.get() == "a"
    t.join(2)
    assert entered == ["b", True]
    ch.resize(3)
    assert ch.put("c") and ch.put("d")
    assert ch.resize(1) == 3  # shrink below the current length: nothing is dropped
    assert len(ch) == 3
    assert not ch.put("e", cancelled=lambda: True)  # full under the new capacity
    assert [ch.get(), ch.get(), ch.get()] == ["b", "c", "d"]
    assert ch.get(timeout=0.01) is None
    ch.close()
    with pytest.raises(ChannelClosed):
        ch.get()
    with pytest.raises(ValueError):
        BoundedChannel(0)


def test_channel_on_leave_runs_under_lock():
    ch = BoundedChannel(2)
    ch.put(1)
    seen = []
    assert ch.get(on_leave=seen.append) == 1 and seen == [1]


def test_admission_permits_budget_pause_and_resize():
    adm = Admission(2, memory_budget=100)
    assert adm.acquire(40, timeout=0) and adm.acquire(40, timeout=0)
    assert not adm.acquire(10, timeout=0.01)  # no permit left
    adm.release_permit()
    assert not adm.acquire(30, timeout=0.01)  # permit free, but 80 + 30 > 100
    assert adm.acquire(20, timeout=0)  # 100 exactly fits
    adm.release_permit()
    adm.release_bytes(40)
    adm.pause()
    assert not adm.acquire(10, timeout=0.01)
    adm.resume()
    assert adm.acquire(10, timeout=0)
    assert adm.resize(3) == 2
    adm.release_bytes(70)
    assert adm.acquire(10, timeout=0)  # the third permit after the resize
    assert adm.max_held == 3 and adm.max_reserved == 100
    assert adm.fits(100) and not adm.fits(101)
    adm.set_budget(0)
    assert adm.fits(10**12)
    with pytest.raises(RuntimeError):
        Admission(1).release_permit()
    adm.close()
    with pytest.raises(AdmissionClosed):
        adm.acquire(1)


def test_admission_wakes_a_waiter_on_release():
    adm = Admission(1)
    adm.acquire(0)
    got = []
    t = threading.Thread(target=lambda: got.append(adm.acquire(0, timeout=5)))
    t.start()
    time.sleep(0.05)
    assert got == []
    adm.release_permit()
    t.join(5)
    assert got == [True]


def test_segments_create_attach_release_and_sweep():
    reg = SegmentRegistry()
    spec = reg.create("t", (8, 4))
    assert spec.name.startswith(prefix_for(os.getpid())) and spec.nbytes == 256
    assert reg.live_bytes() == 256 and spec.name in list_ours(reg.prefix)
    att = Attached(spec)
    att.array[:] = np.arange(32, dtype=np.uint64).reshape(8, 4)
    att.close()
    again = Attached(spec)
    assert int(again.array[7, 3]) == 31
    again.close()
    assert reg.release(spec) == 256 and reg.release(spec) == 0
    assert spec.name not in list_ours(reg.prefix) and reg.live_bytes() == 0
    reg.create("u", (1, 4))
    reg.create("v", (1, 4))
    assert len(reg.sweep()) == 2 and list_ours(reg.prefix) == []


def test_attach_in_child_process_leaves_no_tracker_warnings(tmp_path):
    """A spawn child attaches and unregisters; the parent unlinks: no resource_tracker noise."""
    code = f"""
import multiprocessing as mp, sys
sys.path.insert(0, {str(ROOT)!r})
from engine.pipeline.shm import SegmentRegistry, Attached
def child(spec):
    a = Attached(spec); a.array[0, 0] = 7; a.close()
if __name__ == "__main__":
    reg = SegmentRegistry()
    spec = reg.create("x", (2, 4))
    p = mp.get_context("spawn").Process(target=child, args=(spec,)); p.start(); p.join()
    a = Attached(spec); v = int(a.array[0, 0]); a.close()
    reg.release(spec)
    print(v)
"""
    script = tmp_path / "attach_child.py"
    script.write_text(code)
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         timeout=120, cwd=os.getcwd())
    assert out.stdout.strip() == "7", out.stderr
    assert "leaked" not in out.stderr and "Traceback" not in out.stderr, out.stderr


def test_sweep_stale_removes_dead_orchestrators_segments():
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True).stdout.strip()
    reg = SegmentRegistry(pid=int(dead))
    spec = reg.create("stale", (1, 4))
    assert spec.name in sweep_stale()
    assert list_ours(reg.prefix) == []


def _st(t, job, part, stage):
    return events.stage(t, job, part, stage, "w")


def test_bound_and_maxima_on_a_handmade_stream():
    evs = [events.job_submitted(0, 1, "p", 3, 10)]
    t = 0.0
    for p in range(3):
        evs.append(_st(t := t + 1, 1, p, "queued"))
    for p in range(3):
        evs.append(_st(t := t + 1, 1, p, "synthesizing"))
    evs.append(_st(t := t + 1, 1, 0, "waiting_gpu"))
    evs.append(_st(t := t + 1, 1, 0, "gpu"))
    evs.append(_st(t := t + 1, 1, 0, "deallocating"))
    evs.append(_st(t := t + 1, 1, 0, "finalizing"))
    evs.append(_st(t := t + 1, 1, 1, "failed"))
    evs.append(_st(t := t + 1, 1, 0, "done"))
    assert summary.max_concurrent(evs, {"synthesizing"}) == 3
    assert summary.max_concurrent(evs, summary.HOLDING) == 3
    assert summary.bound_excess(evs, 1, 1, 1) == 0  # 3 holding <= 1 + 1 + 1
    assert summary.bound_excess(evs, 1, 0, 1) == 1
    counts = summary.stage_counts(evs)
    assert counts["done"] == 1 and counts["failed"] == 1 and counts["synthesizing"] == 1
    assert sum(counts.values()) == 3
    rec = summary.partitions(evs)[(1, 0)]
    assert rec.interval("gpu") == (8.0, 9.0) and rec.total_ms == (12.0 - 1.0) * 1000


def test_run_summary_numbers():
    evs = [
        events.job_submitted(0.0, 1, "p", 2, 100),
        _st(0.0, 1, 0, "queued"), _st(0.0, 1, 1, "queued"),
        events.stage(1.0, 1, 0, "gpu", "gpu0/0"),
        events.stage(1.0, 1, 1, "gpu", "gpu0/1"),
        _st(2.0, 1, 0, "done"), _st(3.0, 1, 1, "done"),
        events.partition_timings(2.0, 1, 0, {"gpu_wrapper": 500.0, "ntt": 100.0, "msm_h": 300.0}, 1),
        events.partition_timings(3.0, 1, 1, {"gpu_wrapper": 1000.0, "ntt": 200.0}, 1),
        events.proof_done(4.0, 1, "00", True, 4000.0),
        events.sample(4.0, [{"pid": 1, "role": "o", "rss_anon": 10}], 5, {}, []),
    ]
    s = summary.run_summary(evs)
    assert s.partitions_done == 2 and s.jobs_done == 1 and s.jobs_verified == 1
    assert s.wall_s == 4.0 and s.s_per_proof == 2.0 and s.constraints_per_s == 50.0
    assert s.gpu_busy_pct == {"gpu0": 100.0}  # [1, 2) ∪ [1, 2) over [1, 2)
    assert s.kernel_busy_pct == {"gpu0": 60.0}  # 400 + 200 ms of kernels over the 1 s window
    assert s.wrapper_ms == 1500.0 and s.kernel_ms == 600.0
    assert s.peak_total == 15 and s.peak_shm == 5
    out = summary.render_all(evs)
    assert "seconds per proof: 2.000" in out and "yes" in out


def test_b2_on_the_cpu_from_a_gpu_backend_handle(tmp_path):
    """b_g2 = "cpu": the finalize half swaps to the CPU backend and the key's mapped G2 table;
    the proof still verifies. A delegating backend stands in for a device backend."""
    from engine.pipeline import proving
    from engine.pipeline.circuits import resolve
    from kernels.backend import get_backend

    class Named:
        name = "cuda"
        is_device = True

        def __init__(self, inner):
            self._inner = inner

        def __getattr__(self, attr):
            return getattr(self._inner, attr)

    c = resolve("cubic")
    path, vk = proving.ensure_key(c, tmp_path)
    be = Named(get_backend("cpu"))
    key = proving.load_key(str(path), be)
    z = c.witness(3, 0, 1)
    from engine.synthesis import evaluate

    a, b, cc = evaluate(c.r1cs, z)
    for b_g2 in ("cpu", "gpu"):
        h = proving.start(key, a, b, cc, z, be)
        assert set(proving.kernel_timings(h)) >= {"ntt", "msm_h", "msm_a", "msm_b1", "msm_l"}
        proof = proving.finish(h, b_g2, key)
        assert proving.verify(vk, proving.public_inputs(c.r1cs.num_inputs, z), proof)
    assert key.cpu_b2 is not None  # the CPU query was built for the swap
    bad = bytes([proof[0] ^ 1]) + proof[1:]
    assert not proving.verify(vk, proving.public_inputs(c.r1cs.num_inputs, z), bad)
    assert not hasattr(proving, "pin")  # no per-partition page-locking (it sat in the wrapper)


def test_upload_is_a_kernel_group_and_missing_groups_count_zero():
    assert events.KERNEL_KEYS[0] == "upload" and "upload" in events.TIMER_KEYS
    evs = [
        events.job_submitted(0.0, 1, "p", 2, 100),
        _st(0.0, 1, 0, "queued"), _st(0.0, 1, 1, "queued"),
        events.stage(1.0, 1, 0, "gpu", "gpu0/0"),
        events.stage(2.0, 1, 1, "gpu", "gpu0/0"),
        _st(2.0, 1, 0, "done"), _st(3.0, 1, 1, "done"),
        events.partition_timings(
            2.0, 1, 0, {"gpu_wrapper": 900.0, "upload": 50.0, "ntt": 100.0, "msm_h": 300.0}, 1
        ),
        events.partition_timings(3.0, 1, 1, {"gpu_wrapper": 800.0, "ntt": 200.0}, 1),  # no upload
        events.proof_done(4.0, 1, "00", True, 4000.0),
    ]
    s = summary.run_summary(evs)
    assert s.kernel_ms == 650.0
    table = summary.render_table(evs).splitlines()
    assert table[2].split()[7] == "450.0" and table[3].split()[7] == "200.0"


def _sample(t, rss, shm=0):
    procs = [{"pid": i, "role": f"w{i}", "rss_anon": r} for i, r in enumerate(rss)]
    return events.sample(t, procs, shm, {}, [])


def test_baseline_is_the_last_sample_before_the_first_synthesis():
    evs = [
        _sample(0.0, [10, 5, None]),  # workers just spawned
        _sample(0.5, [100, 200, 300], shm=7),  # started and warm: shm is not part of it
        events.job_submitted(0.6, 1, "p", 2, 100),
        _st(0.6, 1, 0, "queued"), _st(0.6, 1, 1, "queued"),
        _sample(0.7, [90, 190, 290]),  # after submission, still before synthesis
        _st(0.8, 1, 0, "synthesizing"),
        _sample(0.9, [1000, 2000, 3000], shm=10**6),
        _st(1.0, 1, 1, "synthesizing"),
        _sample(1.1, [50, 50, 50]),
    ]
    assert summary.baseline_rss_anon(evs) == 570
    assert summary.run_summary(evs).baseline_rss_anon == 570
    # no sample before the first synthesis: the smallest sampled total
    assert summary.baseline_rss_anon(evs[6:]) == 150
    assert summary.baseline_rss_anon(evs[2:5]) == 0  # no samples at all
    assert "baseline 570 B" in summary.render_summary(evs)


def test_memory_model_terms():
    from engine.verbs.bench_pipeline import memory_model

    cpu = memory_model(1000, 4, 10, 500, "cpu")
    assert cpu["model_peak_bytes"] == 1000 + 40 + 500
    assert cpu["partition_term_bytes"] == 40 and cpu["key_term_counted"] is True
    gpu = memory_model(1000, 4, 10, 500, "cuda")
    assert gpu["model_peak_bytes"] == 1040 and gpu["key_term_bytes"] == 0
    assert gpu["key_term_counted"] is False and "GPU memory" in gpu["key_term_basis"]


def test_steady_interval_is_the_mean_gap_between_completions() -> None:
    from engine.stream.summary import PartitionRecord, steady_interval

    def rec(i: int, t_done: float) -> PartitionRecord:
        return PartitionRecord(1, i, stages=[(0.0, "queued", "s"), (t_done, "done", "f")])

    # a slow start (first completion at 10 s), then one completion every 2 s
    recs = [rec(0, 10.0), rec(1, 12.0), rec(2, 14.0), rec(3, 16.0)]
    assert steady_interval(recs) == 2.0
    assert steady_interval(recs[:2]) is None  # too few completions for a rate


def test_attached_unmaps_in_pieces_and_never_under_a_live_view(monkeypatch):
    from engine.pipeline import shm as shm_mod

    reg = SegmentRegistry()
    spec = reg.create("t", (3 << 16, 4))  # 6 MiB
    try:
        monkeypatch.setattr(shm_mod, "UNMAP_CHUNK", 1 << 20)
        calls = []
        lib = shm_mod._libc()

        class Spy:
            mmap = lib.mmap

            def munmap(self, addr, size):
                calls.append(size)
                return lib.munmap(addr, size)

        att = Attached(spec)
        att.array[-1, -1] = 11
        monkeypatch.setattr(shm_mod, "_LIBC", Spy())
        att.close()
        assert len(calls) == 6 and sum(calls) == spec.nbytes  # six 1 MiB pieces
        assert att.array is None

        calls.clear()
        att = Attached(spec)
        view = att.array[2:]  # still in use by someone: the mapping must stay
        att.close()
        assert calls == [] and int(view[-1, -1]) == 11
        del view
    finally:
        reg.release(spec)


def test_gap_split_names_where_the_wrapper_went() -> None:
    from engine.stream.summary import PartitionRecord, gap_split

    def rec(sync: bool) -> PartitionRecord:
        # dealloc 40 ms, inside the wrapper when sync
        ms = {"gpu_wrapper": 540.0 if sync else 500.0, "gpu_dispatch": 5.0, "gpu_host": 7.0,
              "gpu_call": 480.0, "gpu_return": 8.0, "ntt": 100.0, "msm_h": 370.0, "dealloc": 40.0}
        return PartitionRecord(1, 0, ms=ms)

    asyn = gap_split([rec(False)])
    assert asyn == {"dispatch": 5.0, "host": 7.0, "return": 8.0, "call - kernels": 10.0, "other": 0.0}
    sync = gap_split([rec(True)], dealloc_in_wrapper=True)
    assert sync["dealloc"] == 40.0 and abs(sync["other"]) < 1e-9
    assert gap_split([PartitionRecord(1, 0)]) == {}  # nothing recorded, nothing claimed


def test_a_gpu_slot_reads_segments_and_a_cpu_slot_maps_them():
    """Which inputs a prover slot reads from their file (kernels/stored.py) and which it maps:
    a GPU slot reads all four, except z when B2 runs on the cpu (that finalize half reads z
    after the unlink); a cpu slot maps all four, its backend computes on them in place."""
    from types import SimpleNamespace

    from engine.pipeline.workers import _reads_segment

    gpu = SimpleNamespace(backend=SimpleNamespace(is_device=True))
    cpu = SimpleNamespace(backend=SimpleNamespace(is_device=False))
    for b_g2 in ("gpu", "auto", "cpu"):
        assert [_reads_segment(cpu, k, b_g2) for k in "abcz"] == [False] * 4
        want_z = b_g2 != "cpu"
        assert [_reads_segment(gpu, k, b_g2) for k in "abcz"] == [True, True, True, want_z]
