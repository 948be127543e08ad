"""A console whose terminal goes away exits: its tty hung up (the pty master closed, as when a
tmux session is killed) or a SIGHUP, it stops its engine and exits 130 within seconds, leaving
no process of its session, no segment of its engine and none of the semaphores it held.

The console runs as a real process on the slave side of a pty (pty.fork: its session leader,
the pty its controlling terminal), as it does under tmux or ssh. Before the fix, a console that
got no SIGHUP (started under nohup, or a shell that does not forward it) lived on after the
master closed, its input thread spinning on end-of-file and its main thread blocked writing.
"""

from __future__ import annotations

import os
import pty
import select
import signal
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.processes import semaphores_mapped_by

pytest.importorskip("textual")

ROOT = Path(__file__).resolve().parents[1]
EXIT_BOUND_S = 20.0  # a loaded 2-core machine: the engine's stop and the session's end
START_BOUND_S = 150.0  # the console drawn and its engine's first child process started


def _stat(pid: int | str) -> list[str] | None:
    """The fields of /proc/PID/stat after the command name (state, ppid, pgrp, session, ...)."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return raw[raw.rfind(")") + 2:].split()


def _session(sid: int) -> list[int]:
    """Live (not zombie) processes of session ``sid``, the console's own pid excluded."""
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit() and int(d) != sid:
            st = _stat(d)
            if st is not None and st[0] != "Z" and int(st[3]) == sid:
                out.append(int(d))
    return out


def _engine_children(pid: int, workers_only: bool = False) -> list[int]:
    """The console's children that are its engine's workers or (unless ``workers_only``) its
    first-run compile, not multiprocessing's resource tracker."""
    out = []
    for p in _session(pid):
        st = _stat(p)
        try:
            cmd = Path(f"/proc/{p}/cmdline").read_bytes()
        except OSError:
            continue
        if st is None or int(st[1]) != pid or b"resource_tracker" in cmd:
            continue
        if not workers_only or b"spawn_main" in cmd:
            out.append(p)
    return out


class _Console:
    """``sealtop --config C`` on the slave side of a fresh pty; the master is drained by a
    thread (a console that cannot write would stall) until :meth:`close_master`."""

    def __init__(self, tmp_path: Path, ignore_hup: bool) -> None:
        cfg = tmp_path / "c.toml"
        cfg.write_text('[engine]\nbackend = "cpu"\npartition_workers = 1\ngpu_channel_capacity = 1\n'
                       f'[paths]\nparam_cache = "{tmp_path / "params"}"\n[jobs]\npreset = "chain-256"\n')
        # a fresh install's stamps (numba's own cache stays): the console's first-run compile
        # children are running, or have just handed over to the engine, when the terminal goes
        env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "80", "LINES": "24",
               "XDG_CACHE_HOME": str(tmp_path / "cache")}
        code = (f"import sys; sys.path.insert(0, {str(ROOT)!r}); from app.main import main; "
                "sys.exit(main(sys.argv[1:]))")
        argv = [sys.executable, "-c", code, "--config", str(cfg), "--no-attach"]
        pid, master = pty.fork()
        if pid == 0:  # the child: exec at once (this process has threads)
            try:
                os.chdir(tmp_path)
                if ignore_hup:  # as nohup starts it: a hang-up brings no signal
                    signal.signal(signal.SIGHUP, signal.SIG_IGN)
                os.execve(sys.executable, argv, env)
            finally:
                os._exit(127)
        self.pid, self.master = pid, master
        self.out = bytearray()
        self.status: int | None = None
        self._stop = threading.Event()
        self._reader = threading.Thread(target=self._drain, daemon=True)
        self._reader.start()

    def _drain(self) -> None:
        while not self._stop.is_set():
            r, _, _ = select.select([self.master], [], [], 0.1)
            if r:
                try:
                    chunk = os.read(self.master, 65536)
                except OSError:
                    return
                if not chunk:
                    return
                self.out += chunk

    def close_master(self) -> None:
        self._stop.set()
        self._reader.join(5)
        os.close(self.master)
        self.master = -1

    def wait(self, seconds: float) -> int | None:
        """The exit status once the console has exited within ``seconds``, else None."""
        end = time.monotonic() + seconds
        while self.status is None and time.monotonic() < end:
            done, st = os.waitpid(self.pid, os.WNOHANG)
            if done:
                self.status = os.waitstatus_to_exitcode(st)
            else:
                time.sleep(0.1)
        return self.status

    def kill_all(self) -> None:
        for p in [self.pid, *_session(self.pid)]:
            try:
                os.kill(p, signal.SIGKILL)
            except OSError:
                pass
        if self.status is None:
            self.wait(5)
        if self.master >= 0:
            self.close_master()


def _running(c: _Console) -> tuple[set[str], list[int]]:
    """Wait until the console has drawn and its engine has started a worker (after the
    first-run compile); the semaphores its processes hold then, and its children (the
    warm-up's background child among them, while it runs)."""
    deadline = time.monotonic() + START_BOUND_S
    kids: list[int] = []
    while time.monotonic() < deadline:
        kids = _engine_children(c.pid, workers_only=True)
        if b"\x1b[?1049h" in c.out and kids:
            break
        assert c.wait(0.2) is None, f"the console exited early ({c.status}): {bytes(c.out[-300:])!r}"
    assert kids, "the console never started its engine's first worker"
    time.sleep(1.0)  # its workers' queues made
    sems: set[str] = set()
    kids = _engine_children(c.pid)
    for p in [c.pid, *kids]:
        sems |= semaphores_mapped_by(p)
    return sems, kids


def _nothing_left(c: _Console, sems: set[str]) -> None:
    deadline = time.monotonic() + 10
    while _session(c.pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _session(c.pid) == [], "processes of the console's session outlived it"
    assert not [n for n in os.listdir("/dev/shm") if n.startswith(f"sealtop-{c.pid}-")]
    deadline = time.monotonic() + 5  # the resource tracker, last to go, unlinks what is left
    while time.monotonic() < deadline and any(os.path.exists(f"/dev/shm/{n}") for n in sems):
        time.sleep(0.1)
    assert [n for n in sems if os.path.exists(f"/dev/shm/{n}")] == []


@pytest.mark.parametrize("ignore_hup", [
    True,  # the case that outlived its terminal: fast, in every run
    pytest.param(False, marks=pytest.mark.slow),  # the kernel's SIGHUP comes too
], ids=["no-sighup", "sighup"])
def test_closing_the_terminal_ends_the_console(tmp_path: Path, ignore_hup: bool) -> None:
    c = _Console(tmp_path, ignore_hup)
    try:
        sems, _kids = _running(c)
        assert sems, "the running console held no semaphores (the check would prove nothing)"
        c.close_master()
        t0 = time.monotonic()
        status = c.wait(EXIT_BOUND_S)
        took = time.monotonic() - t0
        assert status == 130, f"exit {status} {took:.1f} s after the terminal went away"
        _nothing_left(c, sems)
    finally:
        c.kill_all()


@pytest.mark.slow
def test_sighup_with_the_terminal_open_ends_the_console(tmp_path: Path) -> None:
    c = _Console(tmp_path, ignore_hup=False)
    try:
        sems, _kids = _running(c)
        os.kill(c.pid, signal.SIGHUP)
        assert c.wait(EXIT_BOUND_S) == 130
        deadline = time.monotonic() + 2
        while b"\x1b[?1049l" not in c.out and time.monotonic() < deadline:
            time.sleep(0.1)
        assert b"\x1b[?1049l" in c.out, "the console left the terminal on its alternate screen"
        _nothing_left(c, sems)
    finally:
        c.kill_all()
