"""The farm's command line without a farm: bad input is one line and exit 2, before any work;
a missing dask is one line naming the extra."""

from __future__ import annotations

import builtins
import subprocess
import sys
from pathlib import Path

import pytest

from engine.verbs.cli import main

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("argv, says", [
    (["cluster", "worker"], "no scheduler: give --scheduler ADDR"),
    (["cluster", "worker", "--scheduler", "nope"], "--cluster: expected an address"),
    (["cluster", "scheduler", "--port", "0"], "--port must be in 1..65535"),
    (["run", "--config", "x.toml", "--cluster", "tcp://h:99999"], "--cluster: expected an address"),
    (["bench", "pipeline", "--cluster", "tcp://127.0.0.1:1", "--matrix", "cuzk"],
     "--matrix runs on one machine"),
])
def test_bad_input_is_one_line(argv, says, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and says in err[0], err


def test_a_bad_worker_config_is_one_line(tmp_path, capsys):
    bad = tmp_path / "host.toml"
    bad.write_text('[cluster]\nscheduler = "nowhere"\n')
    assert main(["cluster", "worker", "--config", str(bad)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "cluster.scheduler: expected an address" in err[0]


def test_missing_dask_is_one_line(monkeypatch, capsys):
    real = builtins.__import__

    def no_dask(name, *a, **kw):
        if name.split(".")[0] in ("distributed", "dask"):
            raise ImportError(f"No module named {name!r}")
        return real(name, *a, **kw)

    monkeypatch.setattr(builtins, "__import__", no_dask)
    for mod in [m for m in sys.modules if m.split(".")[0] in ("distributed", "dask")]:
        monkeypatch.delitem(sys.modules, mod)
    assert main(["cluster", "scheduler", "--port", "8786"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "pip install 'sealtop[cluster]'" in err[0]


def test_the_config_names_the_scheduler(tmp_path):
    from engine.config import load_config

    f = tmp_path / "c.toml"
    f.write_text('[cluster]\nscheduler = "10.0.0.5:8786"\nhost_slots = 6\nneeds = "cuda"\n')
    cfg = load_config(f)
    assert (cfg.scheduler, cfg.host_slots, cfg.needs) == ("tcp://10.0.0.5:8786", 6, "cuda")


def test_a_stop_signal_closes_a_scheduler_cleanly(tmp_path):
    """SIGTERM: the scheduler closes and exits 0 (engine/signals.py's first-signal rule)."""
    pytest.importorskip("distributed")
    import signal
    import socket
    import time

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    p = subprocess.Popen([sys.executable, "-m", "engine", "cluster", "scheduler", "--host",
                          "127.0.0.1", "--port", str(port)], cwd=ROOT, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True)
    try:
        assert "scheduler at tcp://127.0.0.1:" in p.stdout.readline()
        p.send_signal(signal.SIGTERM)
        assert p.wait(20) == 0
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    # the port is free again: nothing left listening
    time.sleep(0.2)
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))


def test_a_pinned_worker_sizes_numba_to_its_cores(monkeypatch):
    import os

    from engine.cluster import serve

    # setenv first, so that monkeypatch records the variable's absence and restores it: a
    # NUMBA_NUM_THREADS left behind would size numba's pool in every later test of the run
    monkeypatch.setenv("NUMBA_NUM_THREADS", "1")
    monkeypatch.delenv("NUMBA_NUM_THREADS")
    monkeypatch.setattr(os, "cpu_count", lambda: 16)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3})
    assert serve.pin_threads() == 4 and os.environ["NUMBA_NUM_THREADS"] == "4"
    monkeypatch.setenv("NUMBA_NUM_THREADS", "2")  # an operator's own setting stays
    assert serve.pin_threads() == 4 and os.environ["NUMBA_NUM_THREADS"] == "2"
    monkeypatch.delenv("NUMBA_NUM_THREADS")
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(16)))
    assert serve.pin_threads() is None and "NUMBA_NUM_THREADS" not in os.environ
