"""The engine's parameter cache (engine.pipeline.proving.ensure_key): a damaged key is named and
kept, replaced only when the operator says so, and concurrent setups of one key are serialised
across processes so that two runs on one fresh cache do one setup."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from engine.groth16.keyfile import KeyFileError, load_proving_key, read_header
from engine.pipeline import proving
from engine.pipeline.circuits import resolve

ROOT = Path(__file__).resolve().parents[1]
PRESET = "chain-256"


def _damage(path: Path) -> bytes:
    """Flip one bit inside the key's data (the L query), in place; returns the damaged bytes."""
    _name, off, rows, cols = next(e for e in read_header(path)["sections"] if e[0] == "l")
    with open(path, "r+b") as f:
        f.seek(off + 8 * cols * (rows // 2) + 5)
        b = f.read(1)
        f.seek(-1, os.SEEK_CUR)
        f.write(bytes([b[0] ^ 0x20]))
    return path.read_bytes()


def test_a_damaged_key_is_named_and_kept_until_the_operator_says(tmp_path):
    circuit = resolve(PRESET)
    path, vk = proving.ensure_key(circuit, tmp_path)
    damaged = _damage(path)
    lines: list[str] = []
    with pytest.raises(KeyFileError) as info:
        proving.ensure_key(circuit, tmp_path, progress=lines.append)
    msg = str(info.value)
    assert "\n" not in msg and msg.startswith(f"checksum mismatch in {path}"), msg
    assert "damaged_key" in msg  # says how to have it made again
    assert path.read_bytes() == damaged, "the damaged key must not be replaced unasked"
    assert not any("running setup" in line for line in lines)
    # the operator's say: damaged_key = "regenerate"
    path2, vk2 = proving.ensure_key(circuit, tmp_path, progress=lines.append,
                                    damaged="regenerate")
    assert path2 == path and path.read_bytes() != damaged
    assert any("checksum mismatch" in line and "running setup again" in line for line in lines)
    load_proving_key(path, verify="always")  # sound again
    assert vk2.ic == vk.ic  # the same deterministic test parameters


_RACER = """
import sys, time
sys.path.insert(0, {root!r})
import engine.groth16.setup as setup_mod
from engine.pipeline import proving
from engine.pipeline.circuits import resolve

real = setup_mod.setup
go = __import__("pathlib").Path({go!r})
def slow_setup(*a, **k):
    print("SETUP", flush=True)
    # hold the lock until the test says the second run waits for it (a fixed sleep lost that
    # race whenever the second interpreter took longer to start under load)
    deadline = time.monotonic() + 120
    while not go.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    return real(*a, **k)
setup_mod.setup = slow_setup
path, vk = proving.ensure_key(resolve({preset!r}), __import__("pathlib").Path({cache!r}),
                              progress=lambda m: print(m, flush=True))
print("VK", vk.ic[0].hex(), flush=True)
"""


def test_two_runs_on_one_fresh_cache_do_one_setup(tmp_path):
    cache = tmp_path / "fresh"
    go = tmp_path / "go"
    code = _RACER.format(root=str(ROOT), preset=PRESET, cache=str(cache), go=str(go))
    first = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    out1: list[str] = []
    started = threading.Event()

    def read() -> None:
        for line in first.stdout:
            out1.append(line)
            if line.startswith("SETUP"):
                started.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    assert started.wait(120), "".join(out1) + first.stderr.read()
    second = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    out2: list[str] = []
    for line in second.stdout:  # the first holds the lock until the second says it waits
        out2.append(line.rstrip("\n"))
        if line.startswith("waiting for another process's setup"):
            break
    go.touch()
    out2 += second.stdout.read().splitlines()
    second.wait(300)
    first.wait(300)
    reader.join(10)
    assert first.returncode == 0 and second.returncode == 0, second.stderr.read()
    setups = sum(line.startswith("SETUP") for line in out1) + sum(
        line.startswith("SETUP") for line in out2)
    assert setups == 1, (out1, out2)
    assert any(line.startswith("waiting for another process's setup") and f"pid {first.pid}" in line
               for line in out2), out2
    vk1 = next(line for line in out1 if line.startswith("VK"))
    vk2 = next(line for line in out2 if line.startswith("VK"))
    assert vk1.strip() == vk2.strip()


def test_a_killed_setup_releases_the_lock(tmp_path):
    """flock belongs to the open file: a holder that is SIGKILLed mid-setup frees it, and the
    next run makes the key."""
    cache = tmp_path / "fresh"
    code = _RACER.format(root=str(ROOT), preset=PRESET, cache=str(cache), go=str(tmp_path / "go"))
    holder = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    line = ""
    deadline = time.monotonic() + 120
    while not line.startswith("SETUP") and time.monotonic() < deadline:
        line = holder.stdout.readline()
    holder.kill()
    holder.wait(10)
    lines: list[str] = []
    path, _ = proving.ensure_key(resolve(PRESET), cache, progress=lines.append)
    assert path.exists() and not any(x.startswith("waiting") for x in lines)
