"""SIGTERM to the console under a pseudo-terminal: the app exits the normal way, so the
terminal's settings are what they were before it started, no worker is left, and the recorded
session is complete."""

from __future__ import annotations

import os
import pty
import select
import signal
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

pytest.importorskip("textual")

ROOT = Path(__file__).resolve().parents[1]


def _read_for(fd: int, seconds: float, until: bytes | None = None) -> bytes:
    out = b""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        r, _, _ = select.select([fd], [], [], 0.1)
        if r:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
            if until is not None and until in out:
                break
    return out


def test_sigterm_to_the_console_restores_the_terminal(tmp_path):
    params = tmp_path / "params"
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'[engine]\nbackend = "cpu"\npartition_workers = 1\ngpu_channel_capacity = 1\n'
                   f'[paths]\nparam_cache = "{params}"\n[jobs]\npreset = "chain-256"\n')
    rec = tmp_path / "console.jsonl"
    master, slave = pty.openpty()
    before = termios.tcgetattr(slave)
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "120", "LINES": "40"}
    proc = subprocess.Popen(
        [sys.executable, "-c", f"import sys; sys.path.insert(0, {str(ROOT)!r}); "
         "from app.main import main; sys.exit(main(sys.argv[1:]))",
         "--config", str(cfg), "--record", str(rec)],
        stdin=slave, stdout=slave, stderr=slave, env=env, start_new_session=True, cwd=tmp_path,
    )
    try:
        # wait until the app has put the terminal in raw mode and drawn, then a little longer so
        # the engine runs
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and termios.tcgetattr(slave) == before:
            _read_for(master, 0.2)
        assert termios.tcgetattr(slave) != before, "the console never took the terminal"
        # then until its engine has partitions in flight (the recording, flushed at least once
        # a second, holds a stage event): the signal must find work to cancel
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not (rec.exists() and b'"kind":"stage"' in rec.read_bytes()):
            _read_for(master, 0.2)
        assert b'"kind":"stage"' in rec.read_bytes(), "the engine never ran a partition"
        proc.send_signal(signal.SIGTERM)
        end = time.monotonic() + 60
        while proc.poll() is None and time.monotonic() < end:
            _read_for(master, 0.2)
        assert proc.returncode == 130, proc.returncode
        after = termios.tcgetattr(slave)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        os.close(master)
        os.close(slave)
    assert after == before
    assert not [n for n in os.listdir("/dev/shm") if n.startswith(f"sealtop-{proc.pid}-")]
    for _ in range(50):
        left = subprocess.run(["pgrep", "-s", str(proc.pid)], capture_output=True, text=True)
        if not left.stdout.split():
            break
        time.sleep(0.1)
    assert left.stdout.split() == [], left.stdout
    from engine.verbs.runner import replay_summary

    assert replay_summary(str(rec)) == 0
