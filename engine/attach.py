"""Attaching to a running engine: the local socket it offers, and the proxy a console uses.

The engine side, ``AttachServer``, is one more sink of the event stream. It keeps every event of
the session, so a console that attaches late folds exactly the state of one that watched from the
start; it forwards each new event to every attached client; and it carries out the few commands a
client may send (a knob, pause, resume, submit) through the Engine API, answering each in one
line. A slow client never holds the engine up: its queue is bounded, and a client that falls that
far behind is dropped (it can attach again and gets the whole history).

The client side, ``RemoteEngine``, has the Engine API's shape (``subscribe``, ``start``,
``stop``, ``set_knob``, ``pause``, ``resume``, ``submit``), so the console runs on it as it runs
on an embedded engine; its ``stop`` only detaches.

The socket is a Unix-domain socket, mode 0600, in a per-user directory: whoever can connect is
the operator. Read-only is the client's side of the bargain (``serve`` without
``--allow-control`` never sends a command).
"""

from __future__ import annotations

import json
import os
import queue
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from engine.pipeline.shm import pid_alive
from kernels.textfmt import exc_line

PROTOCOL = 1
CLIENT_QUEUE = 50_000  # events buffered for one client before it is dropped
MAX_LINE = 1 << 20  # a command longer than this is refused


class AttachError(RuntimeError):
    """An engine that cannot be reached, or a command it refused (one line)."""


class Controllable(Protocol):
    def set_knob(self, name: str, value: Any) -> None: ...
    def pause(self) -> None: ...
    def resume(self) -> None: ...
    def submit(self, job: Any) -> Any: ...


def runtime_dir() -> Path:
    """Where engines of this user offer their sockets."""
    base = os.environ.get("XDG_RUNTIME_DIR")
    d = Path(base) / "sealtop" if base else Path(f"/tmp/sealtop-{os.getuid()}")
    d.mkdir(mode=0o700, parents=True, exist_ok=True)
    return d


_serial = iter(range(1, 1 << 62))


def default_socket_path() -> Path:
    """A fresh name for this process's next socket: engine-PID-N.sock (one process may run
    several engines, one after another or at once)."""
    return runtime_dir() / f"engine-{os.getpid()}-{next(_serial)}.sock"


def live_sockets() -> list[Path]:
    """Sockets of running engines (stale ones, whose engine died, are removed)."""
    out = []
    for p in sorted(runtime_dir().glob("engine-*.sock")):
        try:
            pid = int(p.stem.split("-")[1])
        except (IndexError, ValueError):
            continue
        if pid_alive(pid):
            out.append(p)
        else:
            p.unlink(missing_ok=True)
    return out


def find_engine(path: str | None = None) -> Path:
    """The socket named, or the one running engine's; one line when there is none or several."""
    if path:
        p = Path(path)
        if not p.exists():
            raise AttachError(f"no engine socket at {p}")
        return p
    found = live_sockets()
    if not found:
        raise AttachError("no running engine to attach to (start `sealtop` or `sealtop run` first)")
    if len(found) > 1:
        raise AttachError(f"{len(found)} engines are running; name one with --engine "
                          f"({', '.join(str(p) for p in found)})")
    return found[0]


def _line(obj: dict[str, Any]) -> bytes:
    return (json.dumps(obj, separators=(",", ":"), allow_nan=False) + "\n").encode()


@dataclass
class _Client:
    sock: socket.socket
    out: queue.Queue[bytes | None]
    dropped: bool = False


class AttachServer:
    """The engine's socket: ``handle`` is the stream sink; commands go to ``engine``."""

    def __init__(self, engine: Controllable, path: str | os.PathLike[str] | None = None,
                 make_job: Callable[[dict[str, Any]], Any] | None = None) -> None:
        self.engine = engine
        self.path = Path(path) if path is not None else default_socket_path()
        self._make_job = make_job
        self._lock = threading.Lock()
        self._history: list[bytes] = []
        self._clients: list[_Client] = []
        self._closed = False
        self.path.unlink(missing_ok=True)
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old = os.umask(0o177)
        try:
            self._sock.bind(str(self.path))
        finally:
            os.umask(old)
        self._sock.listen(8)
        self._accept = threading.Thread(target=self._accept_loop, name="sealtop-attach",
                                        daemon=True)
        self._accept.start()

    # -- the sink ---------------------------------------------------------------------------

    def handle(self, ev: dict[str, Any]) -> None:
        data = _line({"type": "event", "event": ev})
        with self._lock:
            self._history.append(data)
            for c in self._clients:
                self._offer(c, data)

    __call__ = handle

    def _offer(self, c: _Client, data: bytes) -> None:
        if c.dropped:
            return
        try:
            c.out.put_nowait(data)
        except queue.Full:
            c.dropped = True
            try:
                c.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    # -- clients ----------------------------------------------------------------------------

    def _accept_loop(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            c = _Client(conn, queue.Queue(CLIENT_QUEUE))
            with self._lock:
                if self._closed:
                    conn.close()
                    return
                self._offer(c, _line({"type": "hello", "protocol": PROTOCOL, "pid": os.getpid()}))
                for data in self._history:
                    self._offer(c, data)
                self._clients.append(c)
            threading.Thread(target=self._writer, args=(c,), name="sealtop-attach-out",
                             daemon=True).start()
            threading.Thread(target=self._reader, args=(c,), name="sealtop-attach-in",
                             daemon=True).start()

    def _writer(self, c: _Client) -> None:
        try:
            while True:
                data = c.out.get()
                if data is None:
                    break
                c.sock.sendall(data)
        except OSError:
            pass
        finally:
            self._forget(c)

    def _reader(self, c: _Client) -> None:
        buf = b""
        try:
            while True:
                chunk = c.sock.recv(65536)
                if not chunk:
                    break
                buf += chunk
                if len(buf) > MAX_LINE and b"\n" not in buf:
                    break
                while b"\n" in buf:
                    raw, buf = buf.split(b"\n", 1)
                    reply = _line(self._command(raw))  # outside the lock: the engine emits
                    with self._lock:
                        self._offer(c, reply)
        except OSError:
            pass
        finally:
            c.out.put(None)

    def _forget(self, c: _Client) -> None:
        with self._lock:
            if c in self._clients:
                self._clients.remove(c)
        try:  # shutdown first: it sends the end of stream and wakes this client's reader
            c.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        c.sock.close()

    def _command(self, raw: bytes) -> dict[str, Any]:
        """Carry out one command line; the reply says ok or why not, in one line."""
        try:
            msg = json.loads(raw)
            if not isinstance(msg, dict):
                raise ValueError("a command is a JSON object")
        except ValueError as exc:
            return {"type": "reply", "id": None, "ok": False, "error": f"bad command: {exc}"}
        rid = msg.get("id")
        cmd = msg.get("cmd")
        try:
            if cmd == "set_knob":
                self.engine.set_knob(str(msg.get("name")), msg.get("value"))
            elif cmd == "pause":
                self.engine.pause()
            elif cmd == "resume":
                self.engine.resume()
            elif cmd == "submit" and self._make_job is not None:
                self.engine.submit(self._make_job(dict(msg.get("job") or {})))
            else:
                raise ValueError(f"unknown command {cmd!r}")
        except Exception as exc:  # noqa: BLE001 - the client gets the reason, the engine runs on
            return {"type": "reply", "id": rid, "ok": False, "error": exc_line(exc)}
        return {"type": "reply", "id": rid, "ok": True, "error": ""}

    @property
    def clients(self) -> int:
        with self._lock:
            return len(self._clients)

    def close(self) -> None:
        """Stop accepting, end every client's stream, and remove the socket file."""
        with self._lock:
            self._closed = True
            clients = list(self._clients)
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._sock.close()
        for c in clients:
            c.out.put(None)
        self.path.unlink(missing_ok=True)
        self._accept.join(timeout=5)


class RemoteEngine:
    """An attached engine with the Engine API's shape. Events arrive on ``subscribe()``'s queue
    (a ``None`` marks the end of the stream: the engine stopped or went away); commands wait for
    their reply and raise ``ValueError`` with the engine's reason when refused."""

    def __init__(self, path: str | os.PathLike[str], timeout_s: float = 10.0) -> None:
        self.path = Path(path)
        self.timeout_s = timeout_s
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self._sock.connect(str(self.path))
        except OSError as exc:
            self._sock.close()
            raise AttachError(f"cannot attach to {self.path}: {exc.strerror or exc}") from None
        self._events: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self._replies: dict[int, queue.Queue[dict[str, Any]]] = {}
        self._next = 0
        self._lock = threading.Lock()
        self.engine_pid: int | None = None
        self._reader = threading.Thread(target=self._read, name="sealtop-attached", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        buf = b""
        try:
            while True:
                chunk = self._sock.recv(1 << 20)
                if not chunk:
                    break
                buf += chunk
                while b"\n" in buf:
                    raw, buf = buf.split(b"\n", 1)
                    msg = json.loads(raw)
                    kind = msg.get("type")
                    if kind == "event":
                        self._events.put(msg["event"])
                    elif kind == "reply":
                        with self._lock:
                            waiter = self._replies.pop(msg.get("id"), None)
                        if waiter is not None:
                            waiter.put(msg)
                    elif kind == "hello":
                        self.engine_pid = msg.get("pid")
        except (OSError, ValueError):
            pass
        finally:
            self._events.put(None)
            with self._lock:
                waiters, self._replies = list(self._replies.values()), {}
            for w in waiters:
                w.put({"ok": False, "error": "the engine went away"})

    def _call(self, cmd: str, **fields: Any) -> None:
        with self._lock:
            self._next += 1
            rid = self._next
            waiter: queue.Queue[dict[str, Any]] = queue.Queue(1)
            self._replies[rid] = waiter
        try:
            self._sock.sendall(_line({"id": rid, "cmd": cmd, **fields}))
            reply = waiter.get(timeout=self.timeout_s)
        except OSError:
            raise AttachError("the engine went away") from None
        except queue.Empty:
            raise AttachError(f"the engine did not answer {cmd} in {self.timeout_s:g} s") from None
        if not reply.get("ok"):
            raise ValueError(reply.get("error") or f"{cmd} refused")

    # -- the Engine API's shape -------------------------------------------------------------

    def subscribe(self) -> queue.Queue[dict[str, Any] | None]:
        return self._events

    def start(self) -> None:
        """Already attached; nothing to start."""

    def stop(self, drain: bool = True) -> None:
        """Detach: the engine goes on."""
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._sock.close()
        self._reader.join(timeout=5)

    def set_knob(self, name: str, value: Any) -> None:
        self._call("set_knob", name=name, value=value)

    def pause(self) -> None:
        self._call("pause")

    def resume(self) -> None:
        self._call("resume")

    def submit(self, job: Any) -> None:
        fields = {k: getattr(job, k) for k in ("preset", "partitions", "seed") if hasattr(job, k)}
        self._call("submit", job=fields)
