"""The GPU turn (engine/pipeline/turn.py): one holder at a time, in the order asked, a ``first``
asker ahead of the plain ones; and the finalize thread's B2 MSM inside it with SEALTOP_B2=turn,
the proof's assembly after it outside."""

from __future__ import annotations

import queue
import random
import threading
import time
import types

import pytest

from engine.groth16 import prove
from engine.pipeline import workers
from engine.pipeline.turn import Turn


def _wait_for(cond, timeout: float = 5.0) -> None:
    end = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.001)


def test_the_turn_is_granted_in_order_asked_and_first_goes_ahead() -> None:
    turn = Turn()
    order: list[str] = []
    inside = 0
    most = 0
    lock = threading.Lock()
    release = threading.Event()

    def ask(name: str, first: bool) -> None:
        nonlocal inside, most
        with turn.hold(first):
            with lock:
                inside += 1
                most = max(most, inside)
            order.append(name)
            if name == "holder":
                release.wait(5)
            time.sleep(0.002)
            with lock:
                inside -= 1

    names = [f"plain{i}" for i in range(random.randint(2, 5))]
    firsts = [f"first{i}" for i in range(random.randint(1, 3))]
    threads = [threading.Thread(target=ask, args=("holder", False))]
    threads[0].start()
    _wait_for(lambda: order == ["holder"])
    asked = names[:1] + firsts[:1] + names[1:] + firsts[1:]  # plain and first interleaved
    for n, name in enumerate(asked):
        t = threading.Thread(target=ask, args=(name, name.startswith("first")))
        t.start()
        threads.append(t)
        _wait_for(lambda n=n: turn.waiting() == n + 1)
    assert turn.locked()
    release.set()
    for t in threads:
        t.join(5)
    assert order == ["holder", *firsts, *names]
    assert most == 1 and not turn.locked() and turn.waiting() == 0


def test_the_turn_is_given_back_when_the_holder_raises() -> None:
    turn = Turn()
    with pytest.raises(RuntimeError), turn.hold():
        raise RuntimeError("call failed")
    assert not turn.locked()
    with turn.hold(first=True):
        assert turn.locked()


@pytest.mark.parametrize("b2_turn", [False, True])
def test_finalize_runs_b2_inside_the_turn_only_when_asked(monkeypatch, b2_turn: bool) -> None:
    monkeypatch.setenv("SEALTOP_B2", "turn" if b2_turn else "beside")
    results: queue.Queue = queue.Queue()
    state = workers._ProverState(workers.ProverSpec("cpu0", "cpu", None, 1, queue.Queue(), results,
                                                    gpu_calls="serial"))
    turn = state.turn
    assert turn is not None  # serial slots share one
    seen: list[bool] = []
    monkeypatch.setattr(prove, "prove_b2", lambda handle: seen.append(turn.locked()) or "acc")
    monkeypatch.setattr(prove, "prove_finish", lambda handle, acc: seen.append(turn.locked()) or b"p")
    handle = types.SimpleNamespace(acc_b2=None, timings_ms={})  # B2 not made in the GPU call
    state.finalize_q.put(workers._Finish(workers.PartKey(1, 0, 0), handle, None, "gpu", None))
    state.finalize_q.put(None)
    workers._finalize_loop(state, 1)
    assert seen == [b2_turn, False] and not turn.locked()  # the assembly outside it
    reply = results.get_nowait()
    assert isinstance(reply, workers.Proved) and reply.proof == b"p"


def test_b2_made_in_the_call_reports_the_calls_b2_time(monkeypatch) -> None:
    """SEALTOP_B2=call: the finalize half has only the assembly left, and the partition's b2
    timer is the GPU call's B2 MSM (its device time), not the assembly's wall time."""
    monkeypatch.setenv("SEALTOP_B2", "call")
    results: queue.Queue = queue.Queue()
    state = workers._ProverState(workers.ProverSpec("cpu0", "cpu", None, 1, queue.Queue(), results,
                                                    gpu_calls="serial"))
    b2_ms = random.uniform(50.0, 90.0)
    monkeypatch.setattr(prove, "prove_b2", lambda handle: handle.acc_b2)  # made already: handed back
    monkeypatch.setattr(prove, "prove_finish", lambda handle, acc: b"p" if acc == "acc" else b"")
    handle = types.SimpleNamespace(acc_b2="acc", timings_ms={"b2": b2_ms})
    state.finalize_q.put(workers._Finish(workers.PartKey(1, 0, 0), handle, None, "gpu", None))
    state.finalize_q.put(None)
    workers._finalize_loop(state, 1)
    reply = results.get_nowait()
    assert isinstance(reply, workers.Proved) and reply.proof == b"p" and reply.b2_ms == b2_ms


def test_an_unknown_b2_mode_stops_the_prover_with_one_line(monkeypatch) -> None:
    monkeypatch.setenv("SEALTOP_B2", "sideways")
    with pytest.raises(ValueError, match="SEALTOP_B2 is 'sideways'; it takes one of beside, turn, call"):
        workers._ProverState(workers.ProverSpec("cpu0", "cpu", None, 1, queue.Queue(), queue.Queue()))


@pytest.mark.parametrize("mode,b_g2,want", [("call", "gpu", True), ("call", "cpu", False), ("beside", "gpu", False),
                                            ("turn", "auto", False)])
def test_only_b2_call_makes_b2_in_the_slot(monkeypatch, mode: str, b_g2: str, want: bool) -> None:
    monkeypatch.setenv("SEALTOP_B2", mode)
    state = workers._ProverState(workers.ProverSpec("cpu0", "cpu", None, 1, queue.Queue(), queue.Queue(),
                                                    gpu_calls="serial"))
    assert workers._b2_in_call(state, b_g2) is want
