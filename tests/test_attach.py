"""Attaching to a running engine over its local socket: a late client sees the whole session,
commands reach the engine and refusals come back in one line, a slow client cannot hold the
stream up, and closing leaves no socket file."""

from __future__ import annotations

import json
import os
import random
import socket
import stat
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from engine.attach import AttachError, AttachServer, RemoteEngine, find_engine, live_sockets


class FakeEngine:
    """Stands in for the engine's control surface: records what it was told, refuses bad knobs
    the way the engine's validation does (ValueError with one line)."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def set_knob(self, name: str, value: Any) -> None:
        if name != "partition_workers" or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name}: must be an integer of at least 1, got {value!r}")
        self.calls.append(("set_knob", name, value))

    def pause(self) -> None:
        self.calls.append(("pause",))

    def resume(self) -> None:
        self.calls.append(("resume",))

    def submit(self, job: Any) -> None:
        self.calls.append(("submit", job))


def _drain(q: Any, n: int, timeout: float = 10.0) -> list[dict]:
    out: list[dict] = []
    end = time.monotonic() + timeout
    while len(out) < n and time.monotonic() < end:
        try:
            ev = q.get(timeout=0.1)
        except Exception:  # noqa: BLE001 - queue.Empty
            continue
        assert ev is not None, "stream ended early"
        out.append(ev)
    return out


def _event(i: int) -> dict:
    return {"t": i / 10, "kind": "knob", "name": "n", "old": i - 1, "new": i, "source": "config"}


def test_a_late_client_gets_the_whole_session_then_live_events(tmp_path: Path) -> None:
    srv = AttachServer(FakeEngine(), tmp_path / "e.sock")
    try:
        n_before = random.randint(1, 500)
        for i in range(n_before):
            srv.handle(_event(i))
        remote = RemoteEngine(srv.path)
        got = _drain(remote.subscribe(), n_before)
        n_after = random.randint(1, 200)
        for i in range(n_before, n_before + n_after):
            srv.handle(_event(i))
        got += _drain(remote.subscribe(), n_after)
        assert got == [_event(i) for i in range(n_before + n_after)]
        remote.stop()
    finally:
        srv.close()
    assert not (tmp_path / "e.sock").exists()


def test_commands_reach_the_engine_and_refusals_come_back(tmp_path: Path) -> None:
    eng = FakeEngine()
    srv = AttachServer(eng, tmp_path / "e.sock", make_job=lambda f: ("job", f["preset"], f["seed"]))
    remote = RemoteEngine(srv.path)
    try:
        remote.set_knob("partition_workers", 3)
        remote.pause()
        remote.resume()

        class J:
            preset, partitions, seed = "tiny", 1, 42

        remote.submit(J())
        with pytest.raises(ValueError) as exc:
            remote.set_knob("partition_workers", "abc")
        assert "\n" not in str(exc.value) and "partition_workers" in str(exc.value)
        assert eng.calls == [("set_knob", "partition_workers", 3), ("pause",), ("resume",),
                             ("submit", ("job", "tiny", 42))]
    finally:
        remote.stop()
        srv.close()


def test_garbage_on_the_socket_is_answered_not_fatal(tmp_path: Path) -> None:
    eng = FakeEngine()
    srv = AttachServer(eng, tmp_path / "e.sock")
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.connect(str(srv.path))
            s.sendall(b"not json\n[1,2]\n{\"id\": 5, \"cmd\": \"reboot\"}\n")
            f = s.makefile("rb")
            msgs = [json.loads(f.readline()) for _ in range(4)]
        replies = [m for m in msgs if m["type"] == "reply"]
        assert [r["ok"] for r in replies] == [False, False, False]
        assert "unknown command" in replies[2]["error"] and replies[2]["id"] == 5
        # The server still serves.
        remote = RemoteEngine(srv.path)
        remote.pause()
        remote.stop()
        assert eng.calls == [("pause",)]
    finally:
        srv.close()


def test_a_client_that_stops_reading_is_dropped_not_waited_for(tmp_path: Path, monkeypatch) -> None:
    import engine.attach as attach

    monkeypatch.setattr(attach, "CLIENT_QUEUE", 100)
    srv = AttachServer(FakeEngine(), tmp_path / "e.sock")
    try:
        stuck = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        stuck.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        stuck.connect(str(srv.path))
        deadline = time.monotonic() + 5
        while srv.clients == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        big = {"t": 0.0, "kind": "error", "where": "x", "message": "y" * 4000}
        t0 = time.monotonic()
        for _ in range(5000):
            srv.handle(big)
        assert time.monotonic() - t0 < 5.0, "the sink waited for a client that does not read"
        deadline = time.monotonic() + 5
        while srv.clients and time.monotonic() < deadline:
            time.sleep(0.01)
        assert srv.clients == 0
        stuck.close()
    finally:
        srv.close()


def test_socket_is_private_and_discovery_skips_dead_engines(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    with pytest.raises(AttachError, match="no running engine"):
        find_engine()
    srv = AttachServer(FakeEngine())
    try:
        assert stat.S_IMODE(os.stat(srv.path).st_mode) == 0o600
        # A socket left by an engine that died (a pid that is not running) is swept.
        dead = srv.path.parent / "engine-999999999-1.sock"
        dead.touch()
        assert live_sockets() == [srv.path]
        assert not dead.exists()
        assert find_engine() == srv.path
    finally:
        srv.close()
    with pytest.raises(AttachError, match="no engine socket"):
        find_engine(str(tmp_path / "nothing.sock"))


def test_the_stream_ends_when_the_engine_goes_away(tmp_path: Path) -> None:
    srv = AttachServer(FakeEngine(), tmp_path / "e.sock")
    remote = RemoteEngine(srv.path)
    srv.handle(_event(1))
    assert _drain(remote.subscribe(), 1) == [_event(1)]
    threading.Timer(0.2, srv.close).start()
    end = time.monotonic() + 10
    while time.monotonic() < end:
        if remote.subscribe().get(timeout=10) is None:
            break
    else:  # pragma: no cover - the assertion below reports it
        pytest.fail("no end of stream")
    with pytest.raises((AttachError, ValueError)):
        remote.pause()
    remote.stop()
