"""The key that cannot be stored: before setup writes a proving key into the parameter cache, a
free-space probe (shutil.disk_usage, patched here) says whether it fits with a margin; when it
does not, the engine refuses in one line with free vs needed bytes, runs no setup and writes
nothing."""

from __future__ import annotations

import random
import shutil
from collections import namedtuple
from pathlib import Path

import pytest

from engine.groth16 import setup as setup_mod
from engine.groth16.keyfile import (
    KeyRoomError,
    check_room,
    key_file_size,
    read_header,
    room_needed,
)
from engine.pipeline import proving
from engine.pipeline.circuits import resolve

PRESET = "chain-64"
_Usage = namedtuple("_Usage", "total used free")


def _free(monkeypatch, free: int) -> list[str]:
    """Make shutil.disk_usage report ``free`` bytes; returns the folders it was asked about."""
    asked: list[str] = []

    def fake(path):
        asked.append(str(path))
        return _Usage(10 * free + 1, 9 * free + 1, free)

    monkeypatch.setattr(shutil, "disk_usage", fake)
    return asked


def _no_setup(monkeypatch) -> None:
    def refuse(*_a, **_k):
        raise AssertionError("setup ran although the key cannot be stored")

    monkeypatch.setattr(setup_mod, "setup", refuse)


def test_key_file_size_is_the_written_size(tmp_path: Path) -> None:
    circuit = resolve(PRESET)
    path, _ = proving.ensure_key(circuit, tmp_path)
    r = circuit.r1cs
    size = key_file_size(r.num_inputs, r.num_aux, r.num_constraints)
    assert size == path.stat().st_size == read_header(path)["file_size"]
    # the porep-32g figure of docs/PLAN-32G.md, from its counts
    assert key_file_size(274, 130_104_873, 130_987_381) == 75_335_409_664


@pytest.mark.parametrize("backend", ["cpu", "cuda"])
def test_no_room_refuses_in_one_line_before_setup(tmp_path: Path, monkeypatch, backend: str) -> None:
    circuit = resolve(PRESET)
    r = circuit.r1cs
    need = room_needed(key_file_size(r.num_inputs, r.num_aux, r.num_constraints))
    free = random.randrange(0, need)  # anything short of the key and its margin
    asked = _free(monkeypatch, free)
    _no_setup(monkeypatch)
    with pytest.raises(KeyRoomError) as info:
        proving.ensure_key(circuit, tmp_path / "cache", backend)
    msg = str(info.value)
    assert "\n" not in msg and f"{need} with the margin" in msg and f"{free} free" in msg
    assert "device-resident" in msg and "generates it in GPU memory" in msg
    if backend == "cuda":
        assert msg.endswith("generates it in GPU memory instead (a device-resident key); this command needs the key file")
    else:
        assert msg.endswith('the engine generates it in GPU memory on backend = "cuda"')
    assert asked == [str(tmp_path / "cache")]
    assert not any(p.suffix == ".pk" for p in (tmp_path / "cache").iterdir())


def test_room_exactly_enough_stores_the_key(tmp_path: Path, monkeypatch) -> None:
    """The negative case of the refusal: with exactly the needed bytes free, setup runs."""
    circuit = resolve(PRESET)
    r = circuit.r1cs
    need = room_needed(key_file_size(r.num_inputs, r.num_aux, r.num_constraints))
    _free(monkeypatch, need)
    path, vk = proving.ensure_key(circuit, tmp_path)
    assert path.exists() and vk is not None
    size = key_file_size(r.num_inputs, r.num_aux, r.num_constraints)
    check_room(tmp_path, size, "x", "y")  # exactly enough: no refusal
    # one byte less and the same probe refuses
    _free(monkeypatch, need - 1)
    with pytest.raises(KeyRoomError):
        check_room(tmp_path, size, "x", "y")


def test_a_stored_key_needs_no_room(tmp_path: Path, monkeypatch) -> None:
    """A key already in the cache is loaded whatever the disk says: the probe guards writes only."""
    circuit = resolve(PRESET)
    path, _ = proving.ensure_key(circuit, tmp_path)
    _free(monkeypatch, 0)
    assert proving.ensure_key(circuit, tmp_path)[0] == path


def test_the_engine_command_line_refuses_in_one_line(tmp_path: Path, monkeypatch, capsys) -> None:
    from engine.verbs import cli

    cfg = tmp_path / "e.toml"
    cfg.write_text(f'[engine]\nbackend = "cpu"\npartition_workers = 1\n[paths]\nparam_cache = "{tmp_path / "p"}"\n'
                   f'[jobs]\npreset = "{PRESET}"\npartitions = 1\n')
    _free(monkeypatch, 1000)
    _no_setup(monkeypatch)
    rc = cli.main(["run", "--config", str(cfg), "--jobs", "1"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc != 0
    assert any("cannot be stored" in line and "1000 free" in line for line in err), err
