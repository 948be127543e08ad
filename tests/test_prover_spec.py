"""A prover process is started with one frozen ProverSpec, built by the supervisor: what the
spec holds, that it cannot be changed after it is built, and that it crosses a real ``spawn``
into the process whole (its queues working on the far side)."""

from __future__ import annotations

import dataclasses
import multiprocessing
import os
import pickle
import random
from types import SimpleNamespace
from typing import Any

import pytest

from engine.pipeline.messages import LoadKey
from engine.pipeline.replies import Replies
from engine.pipeline.supervisor import Supervisor, WorkerMains, prover_name
from engine.pipeline.workers import ProverSpec, prover_main


class _FakeProcess:
    """A process that never runs; it keeps what it was built with."""

    def __init__(self, **kw: Any) -> None:
        self.kw = kw
        self.pid: int | None = None
        self.exitcode: int | None = None

    def start(self) -> None:
        self.pid = random.randrange(2, 1 << 22)

    def is_alive(self) -> bool:
        return self.pid is not None and self.exitcode is None


def _supervisor(ctx: Any, results: Any, backend: str, slots: int,
                mains: WorkerMains | None = None) -> Supervisor:
    return Supervisor(ctx, results, backend, slots, lambda: 1, lambda w: None,
                      lambda w, why: None, mains=mains)


def test_supervisor_starts_each_prover_with_one_spec_of_its_own() -> None:
    rng = random.Random()
    queues: list[object] = []

    def make_queue() -> object:
        q = object()
        queues.append(q)
        return q

    ctx = SimpleNamespace(Queue=make_queue, Process=lambda **kw: _FakeProcess(**kw))
    routes: list[object] = []

    def route() -> object:  # Replies.route's stand-in: a reply queue of its own each
        routes.append(object())
        return routes[-1]

    slots = rng.randrange(1, 5)
    sup = _supervisor(ctx, SimpleNamespace(route=route), "cuda", slots)
    sup.open()
    try:
        devs = [None, *rng.sample(range(8), 2)]
        for dev in devs:
            w = sup.spawn_prover(dev)
            kw = w.process.kw
            assert kw["target"] is prover_main and kw["name"] == w.name == prover_name(dev)
            (spec,) = kw["args"]  # one argument, nothing positional beside it
            assert isinstance(spec, ProverSpec)
            assert spec == ProverSpec(prover_name(dev), "cuda", dev, slots, queues[-1], routes[-1],
                                      os.getpid())
            assert spec.tasks is w.tasks is queues[-1] and spec.results is w.replies is routes[-1]
            with pytest.raises(dataclasses.FrozenInstanceError):
                spec.slots = slots + 1  # type: ignore[misc]
        specs = [w.process.kw["args"][0] for w in sup.provers.values()]
        assert len({id(s.tasks) for s in specs}) == len(devs)  # a task queue per prover
        assert len({id(s.results) for s in specs}) == len(devs)  # and a reply queue
    finally:
        sup.close([])


def test_a_spec_of_plain_values_pickles_back_equal() -> None:
    rng = random.Random()
    spec = ProverSpec(f"gpu{rng.randrange(64)}", rng.choice(["cpu", "cuda"]),
                      rng.choice([None, rng.randrange(64)]), rng.randrange(1, 9),
                      None, None, rng.randrange(2, 1 << 22))
    back = pickle.loads(pickle.dumps(spec))
    assert back == spec and back is not spec
    assert back != dataclasses.replace(spec, slots=spec.slots + 1)


def _echo_main(spec: ProverSpec) -> None:
    """A prover entry point that answers, on the spec's reply queue, with what it was given and
    the first task read from the spec's task queue."""
    task = spec.tasks.get(timeout=60)
    spec.results.put((spec.name, spec.backend, spec.device, spec.slots, spec.parent_pid,
                      os.getpid(), task))


def test_the_spec_crosses_a_spawn_whole() -> None:
    rng = random.Random()
    ctx = multiprocessing.get_context("spawn")
    replies = Replies(ctx)
    slots = rng.randrange(1, 5)
    dev = rng.randrange(8)
    sup = _supervisor(ctx, replies, "cpu", slots, WorkerMains(prover=_echo_main))
    sup.open()
    w = sup.spawn_prover(dev)
    try:
        task = LoadKey(f"/keys/{rng.getrandbits(40):x}.key")
        w.send(task)
        name, backend, device, got_slots, parent, child, got_task = replies.get(timeout=60)
        assert (name, backend, device, got_slots, parent) == (f"gpu{dev}", "cpu", dev, slots,
                                                              os.getpid())
        assert child == w.process.pid != os.getpid() and got_task == task
    finally:
        w.process.join(timeout=30)
        if w.process.is_alive():
            w.process.kill()
            w.process.join(timeout=5)
        sup.close([w])
        replies.close()
    assert w.process.exitcode == 0
