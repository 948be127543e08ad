"""gpu_calls: how a prover's slots share its GPU. With "serial" the slots take turns (one call at a
time per prover), with "parallel" their calls run side by side. Shown on the slot code itself
(two real slot threads, the call replaced by one that counts who is inside it), through the
engine on the cpu backend (two serial slots prove a job whose proofs verify), and in the device
room the engine asks a GPU for (device_bytes, check_device_room)."""

from __future__ import annotations

import queue
import random
import secrets
import threading
import time
from typing import Any

import numpy as np
import pytest
from engine_events import run_jobs

from engine.config import EngineConfig
from engine.groth16 import compact, resident
from engine.groth16.keyfile import KeyRoomError
from engine.pipeline import proving, workers
from engine.pipeline.circuits import resolve
from engine.pipeline.engine import Job
from engine.pipeline.messages import GpuDone, PartKey, ProveTask, Stop
from engine.pipeline.shm import SegmentSpec
from engine.stream import summary

HOLD_S = 0.25  # how long a call waits for a second slot to come in beside it


class _Inside:
    """A stand-in for proving.start: counts the calls running at once. Each call waits (up to
    HOLD_S) for a second one to join it, so slots that may overlap do, and ones that may not are
    seen not to."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.now = 0
        self.most = 0
        self.witnesses: list[Any] = []

    def __call__(self, pk, a, b, c, z, backend, compact=None, b2=False) -> object:
        with self.cond:
            self.now += 1
            self.most = max(self.most, self.now)
            self.cond.notify_all()
            self.cond.wait_for(lambda: self.now >= 2, timeout=HOLD_S)
            if compact is not None:
                self.witnesses.append(compact[1])
        time.sleep(0.01)
        with self.cond:
            self.now -= 1
        return object()


class _Mapped:
    """Attached's stand-in: the slot 'maps' a segment whose words are made up front."""

    words: dict[str, np.ndarray] = {}

    def __init__(self, spec: SegmentSpec) -> None:
        self.array = self.words.get(spec.name, np.zeros(spec.shape, np.uint64))

    def close(self) -> None:
        pass


def _compact_words(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(z, the segment words of its compact form): z mixes zeros, Montgomery ones and values."""
    z = np.zeros((n, 4), np.uint64)
    z[rng.random(n) < 0.3] = compact.ONE_MONT
    general = rng.random(n) < 0.3
    z[general] = rng.integers(0, 2**62, (int(general.sum()), 4), dtype=np.uint64)
    layout = compact.WitnessLayout(n, n)
    words = np.zeros(layout.words, np.uint64)
    compact.write_compact(z, words, layout)
    return z, words


def _run_slots(monkeypatch, calls: str, abc_eval: str, parts: int = 4) -> tuple[_Inside, list[GpuDone], dict]:
    """Two slot threads of a cpu prover with ``gpu_calls = calls`` prove ``parts`` partitions
    whose call is :class:`_Inside`; (the call, the GpuDone replies, the witnesses by segment)."""
    inside = _Inside()
    monkeypatch.setattr(proving, "start", inside)
    monkeypatch.setattr(workers, "Attached", _Mapped)
    rng = np.random.default_rng(secrets.randbits(64))
    zs: dict[str, np.ndarray] = {}
    words: dict[str, np.ndarray] = {}
    tasks: queue.Queue = queue.Queue()
    for i in range(parts):
        if abc_eval == "gpu":
            name = f"w{i}"
            zs[name], words[name] = _compact_words(rng, 97 + i)
            segs = {"w": SegmentSpec(name, words[name].shape)}
        else:
            segs = {k: SegmentSpec(f"{k}{i}", (8, 4)) for k in ("a", "b", "c", "z")}
        tasks.put(ProveTask(PartKey(1, i, 0), "tiny", "key", segs, "auto", abc_eval))
    tasks.put(Stop())
    monkeypatch.setattr(_Mapped, "words", words)
    results: queue.Queue = queue.Queue()
    state = workers._ProverState(workers.ProverSpec("cpu0", "cpu", None, 2, tasks, results,
                                                    gpu_calls=calls))
    monkeypatch.setattr(state, "key", lambda _source: "pk")
    monkeypatch.setattr(state, "compact", lambda _preset, _cache: "matrices")
    slots = [threading.Thread(target=workers._slot_loop, args=(state, tasks, s)) for s in range(2)]
    for t in slots:
        t.start()
    for t in slots:
        t.join(timeout=60)
    replies = []
    while not results.empty():
        replies.append(results.get())
    assert all(isinstance(r, GpuDone) for r in replies), replies
    return inside, replies, zs


@pytest.mark.parametrize("abc_eval", ["cpu", "gpu"])
def test_serial_slots_take_turns_and_parallel_ones_do_not(monkeypatch, abc_eval: str) -> None:
    inside, replies, _ = _run_slots(monkeypatch, "parallel", abc_eval)
    assert len(replies) == 4 and inside.most == 2  # side by side: what serial must prevent
    inside, replies, zs = _run_slots(monkeypatch, "serial", abc_eval)
    assert len(replies) == 4 and inside.most == 1
    for r in replies:
        tm = r.timings
        around = (tm["sent_mono"] - tm["recv_mono"]) * 1000.0
        # the slot's time splits into its host work, its wait for the turn and the call
        assert tm["gpu_host"] >= 0 and tm["gpu_wait"] >= 0
        assert abs(tm["gpu_host"] + tm["gpu_wait"] + tm["gpu_call"] - around) < 1.0, tm
        assert tm["gpu_host"] < HOLD_S * 1000 / 2, tm  # the wait is not host time
    # a slot came to a busy GPU and waited for most of the other's call
    assert max(r.timings["gpu_wait"] for r in replies) > HOLD_S * 1000 / 2
    if abc_eval == "gpu":  # each call got its own partition's witness (placed: itself, on the cpu)
        assert len(inside.witnesses) == 4
        got = sorted((w.num_vars, compact.expand_witness(w).tobytes()) for w in inside.witnesses)
        assert got == sorted((len(z), z.tobytes()) for z in zs.values())


@pytest.mark.parametrize("calls", ["serial", "parallel"])
def test_a_key_load_takes_the_turn_and_its_stream_when_serial(monkeypatch, calls: str) -> None:
    """A LoadKey (the key and the compact matrices) runs holding the turn, inside the turn's
    stream, with "serial", so its freed blocks stay where the calls allocate and no call runs
    beside it; with "parallel" it takes neither; KeyLoaded either way."""
    results: queue.Queue = queue.Queue()
    state = workers._ProverState(workers.ProverSpec("cpu0", "cpu", None, 2, queue.Queue(), results,
                                                    gpu_calls=calls))
    seen: list[tuple[str, bool, bool]] = []
    in_stream = threading.Event()

    class _Stream:
        def __enter__(self) -> None:
            in_stream.set()

        def __exit__(self, *exc: object) -> None:
            in_stream.clear()

    def held() -> bool:
        return state.turn is not None and state.turn.locked()

    monkeypatch.setattr(state, "call_stream", _Stream)
    monkeypatch.setattr(state, "load", lambda path: seen.append(("load", held(), in_stream.is_set())) or 5.0)
    monkeypatch.setattr(state, "compact", lambda *a, **k: seen.append(("compact", held(), in_stream.is_set())))
    workers._load_task(state, workers.LoadKey("key-path", ("tiny", "cache")))
    serial = calls == "serial"
    assert seen == [("load", serial, True), ("compact", serial, True)]
    assert not held() and not in_stream.is_set()  # both given back
    reply = results.get_nowait()
    assert isinstance(reply, workers.KeyLoaded) and reply.source == "key-path"


def test_a_traced_slot_names_its_wait_for_the_turn(monkeypatch, capsys) -> None:
    """SEALTOP_PROVER_TRACE's line: the wait is its own step ("turn") before the call's."""
    import json

    from engine.pipeline import prover_trace

    monkeypatch.setattr(prover_trace, "ENABLED", True)
    _, replies, _ = _run_slots(monkeypatch, "serial", "cpu", parts=2)
    lines = [json.loads(ln.split(" ", 1)[1]) for ln in capsys.readouterr().err.splitlines()
             if ln.startswith("prover-trace ")]
    assert sorted(ln["key"] for ln in lines) == [[1, 0, 0], [1, 1, 0]]
    waited = max(r.timings["gpu_wait"] for r in replies)
    for ln in lines:
        assert list(ln["steps"])[-3:] == ["turn", "call", "sent"] and "gpu_span_ms" in ln
    assert max(ln["steps"]["turn"]["ms"] for ln in lines) >= waited - 0.01  # the trace rounds to 0.01 ms


def test_a_placed_witness_is_the_witness_itself_on_the_cpu_and_refused_beside_host_matrices() -> None:
    from kernels.backend import get_backend

    cpu = get_backend("cpu")
    rng = np.random.default_rng(secrets.randbits(64))
    z, words = _compact_words(rng, 130)
    w = compact.read_compact(words, compact.layout_of(words))
    assert resident.place_witness(w, cpu) is w
    rc = resident.ResidentCompact(130, 10, 0, host=object(), device=None)  # type: ignore[arg-type]
    placed = resident.PlacedWitness(130, w.nbytes(), {})
    with pytest.raises(compact.CompactError, match="placed on a device"):
        resident.abc_and_h(rc, placed, 16, cpu, [])
    with pytest.raises(compact.CompactError, match="131 values"):
        resident.abc_and_h(rc, resident.PlacedWitness(131, 0, {}), 16, cpu, [])


def test_a_turn_stream_is_one_stream_for_every_thread_inside_it(monkeypatch) -> None:
    """kernels/cuda/stream.py with a stand-in for CuPy: inside turn_stream every thread's
    thread_stream() is the one shared stream (so the pool's blocks freed by one call serve the
    next); outside, each thread has its own again."""
    from types import SimpleNamespace

    from kernels.cuda import stream

    made: list[object] = []
    dev = random.randrange(8)

    def new_stream(non_blocking: bool = False) -> object:
        made.append(object())
        return made[-1]

    fake = SimpleNamespace(cuda=SimpleNamespace(Device=lambda: SimpleNamespace(id=dev), Stream=new_stream))
    monkeypatch.setattr(stream, "cupy_module", lambda: fake)
    monkeypatch.setattr(stream, "_shared", {})
    seen: dict[str, tuple[object, object, object]] = {}
    turn = threading.Lock()
    name = f"t{secrets.randbits(32)}"

    def slot(me: str) -> None:
        own = stream.thread_stream()
        with turn, stream.turn_stream(name):
            inside = stream.thread_stream()
        seen[me] = (own, inside, stream.thread_stream())

    threads = [threading.Thread(target=slot, args=(f"s{i}",)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    (own0, in0, after0), (own1, in1, after1) = seen["s0"], seen["s1"]
    assert in0 is in1 and own0 is not own1  # one stream for the turn, each slot's own outside
    assert after0 is own0 and after1 is own1 and in0 not in (own0, own1)
    assert len(made) == 3


@pytest.mark.parametrize("b2", ["beside", "call"])
def test_two_serial_slots_prove_a_job_that_verifies(tmp_path, monkeypatch, b2: str) -> None:
    """Whichever thread makes B2 (SEALTOP_B2: the finalize thread, or the slot's call)."""
    monkeypatch.setenv("SEALTOP_B2", b2)  # the prover process is spawned with it
    cfg = EngineConfig(backend="cpu", devices=[], partition_workers=2, gpu_channel_capacity=2,
                       gpu_slots_per_device=2, gpu_calls="serial", param_cache=str(tmp_path),
                       sample_interval_s=0.05, abc_eval="gpu")
    evs = run_jobs(cfg, [Job("tiny", 3, seed=secrets.randbelow(2**31))], 300, lambda _line: None)
    start = next(e for e in evs if e["kind"] == "session_start")
    assert start["config"]["gpu_calls"] == "serial"
    done = [e for e in evs if e["kind"] == "proof_done"]
    assert len(done) == 1 and done[0]["verified"]
    recs = summary.partitions(evs).values()
    assert len(recs) == 3
    for r in recs:  # the wrapper's layers, the wait for the turn among them, add up
        m = r.ms
        parts = m["gpu_dispatch"] + m["gpu_host"] + m["gpu_wait"] + m["gpu_call"] + m["gpu_return"]
        assert abs(parts - m["gpu_wrapper"]) < 0.5, m
    assert "wait" in summary.gap_split(list(recs))


def test_the_supervisor_starts_each_prover_with_the_setting() -> None:
    from engine.pipeline.supervisor import Supervisor

    for calls in ("parallel", "serial"):
        sup = Supervisor(None, None, "cuda", 2, lambda: 1, lambda w: None, lambda w, why: None,
                         gpu_calls=calls)
        spec = sup.prover_spec(random.randrange(8), object())
        assert (spec.slots, spec.gpu_calls) == (2, calls)
    assert Supervisor(None, None, "cpu", 1, lambda: 1, lambda w: None,
                      lambda w, why: None).prover_spec(None, None).gpu_calls == "parallel"


def _circuit_with_capacity(cap: int | None) -> Any:
    c = resolve("tiny")
    return type("C", (), {"r1cs": c.r1cs, "name": c.name, "general_capacity": cap})()


def test_serial_counts_one_working_set_and_the_waiting_witnesses() -> None:
    circuit = resolve("tiny")
    r = circuit.r1cs
    key, one = proving.device_bytes(r, 1)
    assert proving.device_bytes(r, 1, "serial") == (key, one)  # one slot: nothing waits
    slots = random.randrange(2, 17)
    _, par = proving.device_bytes(r, slots, "parallel")
    _, ser = proving.device_bytes(r, slots, "serial")
    assert par == slots * one
    bound = compact.WitnessLayout(r.num_vars, r.num_vars).nbytes  # every value general
    assert ser == one + (slots - 1) * bound < par
    cap = random.randrange(0, r.num_vars + 1)
    waiting = proving.waiting_bytes(_circuit_with_capacity(cap))
    assert waiting == compact.WitnessLayout(r.num_vars, cap).nbytes <= bound
    assert proving.waiting_bytes(_circuit_with_capacity(None)) == bound
    assert proving.device_bytes(r, slots, "serial", waiting)[1] == one + (slots - 1) * waiting


def test_a_gpu_with_room_for_serial_slots_refuses_parallel_ones() -> None:
    circuit = resolve("tiny")
    key, ser = proving.device_bytes(circuit.r1cs, 2, "serial", proving.waiting_bytes(circuit),
                                    proving.kept_rows(circuit.r1cs))
    free = key + ser + proving.DEVICE_ALLOWANCE
    proving.check_device_room(circuit, [0, 1], 2, lambda _d: free, gpu_calls="serial")
    with pytest.raises(KeyRoomError, match=r"^GPU 0 cannot hold .* 2 slot\(s\), parallel calls"):
        proving.check_device_room(circuit, [0, 1], 2, lambda _d: free)
    with pytest.raises(KeyRoomError, match=r"^GPU 1 cannot hold .* serial calls"):
        proving.check_device_room(circuit, [0, 1], 2, lambda d: free - d, gpu_calls="serial")


def test_the_detail_view_shows_the_wait_only_where_a_session_recorded_it() -> None:
    from app.state import fmt_ms
    from app.widgets.gantt import kernel_split
    from app.widgets.render import Palette
    from engine.stream.fold import JobRecord, PartitionRecord

    job = JobRecord(job=1, preset="tiny", partitions=2, constraints=10, submitted=0.0)
    for i in range(2):
        job.parts[i] = PartitionRecord(job=1, index=i, ms={
            "gpu_dispatch": 1.0, "gpu_host": 2.0, "gpu_return": 3.0, "gpu_call": 9.0,
            "gpu_wrapper": 20.0})
    old = kernel_split(job, Palette(), 200).plain
    assert "prover host" in old and "turn wait" not in old  # an old session: not shown
    wait = random.uniform(1, 900)
    for p in job.parts.values():
        p.ms["gpu_wait"] = wait
    new = kernel_split(job, Palette(), 200).plain
    assert f"turn wait {fmt_ms(wait)}" in new

