"""The Engine's rooms on their own, without worker processes: the typed messages, the records,
the key registry's protocol and the supervisor's restart / give-up decisions (the end-to-end
behaviour is tests/test_pipeline*.py's)."""

from __future__ import annotations

import dataclasses
import pickle
import random
from types import SimpleNamespace

import pytest

from engine.pipeline import messages as m
from engine.pipeline.keys import KeyRegistry
from engine.pipeline.records import Job, JobRecord, Part, Records
from engine.pipeline.shm import SegmentSpec
from engine.pipeline.supervisor import MAX_PROVER_START_FAILURES, Supervisor, prover_name


def _key(rng: random.Random) -> m.PartKey:
    return m.PartKey(rng.randrange(1, 10**6), rng.randrange(64), rng.randrange(3))


def test_every_message_pickles_back_equal_and_is_frozen() -> None:
    rng = random.Random()
    k = _key(rng)
    segs = {"a": SegmentSpec(f"sealtop-1-{rng.getrandbits(32):x}a", (rng.randrange(1, 99), 4))}
    proof = rng.randbytes(192)
    msgs = [
        m.SynthTask(k, "tiny", "/c", rng.randrange(9), 4, segs, "gpu"),
        m.LoadKey(f"/keys/{rng.getrandbits(40):x}.key"),
        m.ProveTask(k, "tiny", "/keys/x.key", segs, "cpu"),
        m.Stop(),
        m.Ready("gpu0", "cuda"), m.Ready("synth-3"),
        m.WorkerFailed("gpu1", "no device"),
        m.SynthDone("synth-0", k, rng.random(), rng.random()),
        m.KeyLoaded("cpu0", "/k", rng.random() * 1e3, rng.randrange(2, 1 << 22)),
        m.KeyFailed("cpu0", "/k", "OSError: gone", rng.randrange(2, 1 << 22)),
        m.GpuDone("gpu0", k, {"ntt": rng.random(), "recv_mono": rng.random()}),
        m.AbcUnmapped("gpu0", k),
        m.Proved("gpu0", k, proof, rng.random()),
        m.TaskFailed("gpu0", k, "ValueError: bad"),
    ]
    for msg in msgs:
        back = pickle.loads(pickle.dumps(msg))
        assert back == msg and type(back) is type(msg)
        fields = dataclasses.fields(msg)
        if fields:
            with pytest.raises(dataclasses.FrozenInstanceError):
                setattr(msg, fields[0].name, None)
    assert k.tag() == f"j{k.job}p{k.index}a{k.attempt}"
    assert m.PartKey(1, 2, 0) != m.PartKey(1, 2, 1)  # another attempt is another key


def _record(rng: random.Random, jid: int, source: str) -> JobRecord:
    return JobRecord(jid, Job("tiny", 2, rng.randrange(9)), SimpleNamespace(), source, None, 0.0)


def test_records_find_a_partition_only_on_its_current_attempt() -> None:
    rec = Records()
    rng = random.Random()
    js = _record(rng, rec.next_id(), "/k")
    rec.add_job(js)
    p = Part(js.id, 1, "tiny", 3, 1000)
    rec.parts[(js.id, 1)] = p
    first = p.key
    assert rec.lookup(first) is p and rec.of_key(first) is p
    old_event = p.gpu_done
    p.next_attempt()
    assert rec.lookup(first) is None and rec.of_key(first) is None  # a late reply is dropped
    assert rec.lookup(p.key) is p and p.gpu_done is not old_event and p.gpu_result is None
    p.cancelled = True
    assert rec.lookup(p.key) is None and rec.of_key(p.key) is p
    p.wake()
    assert p.gpu_done.is_set() and p.proved.is_set() and p.abc_unmapped.is_set()
    assert not rec.all_finished()
    js.finished = True
    assert not rec.all_finished()  # finished, but its proof_done is not out yet
    js.announced = True
    assert rec.all_finished() and [j.id for j in rec.live()] == [js.id]


def test_key_registry_asks_each_prover_once_and_tracks_what_it_holds() -> None:
    rng = random.Random()
    keys = KeyRegistry()
    sent: list[m.LoadKey] = []
    keys.add_prover("gpu0")
    a, b = f"/k/{rng.getrandbits(32):x}", f"/k/{rng.getrandbits(32):x}-b"
    ja, jb = _record(rng, 1, a), _record(rng, 2, b)
    assert keys.request("gpu0", a, "tiny", sent.append)
    assert not keys.request("gpu0", a, "tiny", sent.append)  # in flight: not again
    assert keys.request("gpu0", b, "small", sent.append)
    assert sent == [m.LoadKey(a), m.LoadKey(b)] and keys.loading("gpu0")
    assert not keys.holds_all("gpu0", [ja, jb])
    assert keys.settle(m.KeyLoaded("gpu0", a, 1.0, 7)) == "tiny"
    assert keys.holds("gpu0", a) and not keys.holds_all("gpu0", [ja, jb])
    assert keys.settle(m.KeyFailed("gpu0", b, "no room", 7)) == "small"
    assert not keys.holds("gpu0", b) and not keys.loading("gpu0")
    jb.key_error = "no room"  # a failed key needs no wait: its partitions fail
    assert keys.holds_all("gpu0", [ja, jb])
    assert not keys.request("gpu0", a, "tiny", sent.append)  # held: not again
    assert keys.request("gpu0", b, "small", sent.append)
    assert keys.forget("gpu0") is True  # died while loading
    assert not keys.holds("gpu0", a) and not keys.loading("gpu0")
    assert keys.request("gpu0", a, "tiny", sent.append)  # the restarted prover is asked again
    assert keys.forget("gpu0") is True and keys.forget("gpu0") is False


class _FakeProcess:
    """A worker process that never runs: start() records, the test sets its exit code."""

    def __init__(self, **kw: object) -> None:
        self.pid: int | None = None
        self.exitcode: int | None = None
        self.kw = kw

    def start(self) -> None:
        self.pid = random.randrange(2, 1 << 22)

    def is_alive(self) -> bool:
        return self.pid is not None and self.exitcode is None


def test_supervisor_restarts_a_dead_prover_then_gives_up() -> None:
    ctx = SimpleNamespace(Queue=lambda: SimpleNamespace(put=lambda t: None),
                          Process=lambda **kw: _FakeProcess(**kw))
    started: list[str] = []
    gave_up: list[tuple[str, str]] = []
    sup = Supervisor(ctx, None, "cpu", 1, lambda: 1, lambda w: started.append(w.name),
                     lambda w, why: gave_up.append((w.name, why)))
    sup.open()
    try:
        synth = sup.spawn_synth()
        w = sup.spawn_prover(None)
        assert w.name == prover_name(None) == "cpu0" and prover_name(2) == "gpu2"
        assert started == ["cpu0"] and sup.idle_synth[0] is synth
        sup.ready("cpu0", loading=False)
        w.process.exitcode = -9
        assert [d.name for d in sup.reap()] == ["cpu0"] and "cpu0" not in sup.provers
        assert w.how_it_died() == "signal 9"
        sup.after_death(w, was_loading=False)  # it had started well: restarted, no count
        assert started == ["cpu0", "cpu0"] and not gave_up
        for _ in range(MAX_PROVER_START_FAILURES):  # dies before it is ready, again and again
            w = sup.provers["cpu0"]
            w.process.exitcode = 1
            sup.reap()
            sup.after_death(w, was_loading=False)
        assert len(gave_up) == 1 and gave_up[0][0] == "cpu0"
        assert f"died {MAX_PROVER_START_FAILURES} times" in gave_up[0][1]
        assert "cpu0" in sup.broken and "cpu0" not in sup.provers
        assert started.count("cpu0") == 1 + MAX_PROVER_START_FAILURES  # not restarted again
        synth.process.exitcode = 0
        assert sup.reap() == [synth] and not sup.idle_synth and sup.live_synth() == 0
    finally:
        sup.close([])
