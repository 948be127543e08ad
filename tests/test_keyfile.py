"""The proving key file: round trip, memory mapping, and one-line errors for damaged files."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import numpy as np
import pytest

from engine.groth16 import keyfile
from engine.groth16.keyfile import (
    HEADER_SIZE,
    KeyFileError,
    ProvingKey,
    load_proving_key,
    save_proving_key,
)


def _random_key(rng: np.random.Generator, num_inputs: int = 2, num_aux: int = 13, log_n: int = 4) -> ProvingKey:
    """A key with the right shapes and random words (the file format does not interpret them)."""
    nv = num_inputs + num_aux
    rows = {"alpha_g1": 1, "beta_g1": 1, "beta_g2": 1, "gamma_g2": 1, "delta_g1": 1, "delta_g2": 1,
            "ic": num_inputs, "a": nv, "b_g1": nv, "b_g2": nv, "l": num_aux, "h": (1 << log_n) - 1}
    arrays = {k: rng.integers(0, 2**64, (r, keyfile.SECTIONS[k]), dtype=np.uint64) for k, r in rows.items()}
    return ProvingKey(num_inputs=num_inputs, num_aux=num_aux, num_constraints=num_aux + num_inputs,
                      log_n=log_n, digest=rng.bytes(32), insecure=True, **arrays)


@pytest.fixture
def key_path(tmp_path: Path) -> tuple[ProvingKey, Path]:
    pk = _random_key(np.random.default_rng())
    path = tmp_path / "k.pk"
    save_proving_key(pk, path)
    return pk, path


def test_round_trip_is_exact_and_memory_mapped(key_path) -> None:
    pk, path = key_path
    got = load_proving_key(path)
    for name in keyfile.SECTIONS:
        arr = getattr(got, name)
        assert np.array_equal(arr, getattr(pk, name)), name
        assert not arr.flags.writeable and not arr.flags.owndata  # a view of the mapping, no copy
    assert (got.num_inputs, got.num_aux, got.num_constraints, got.log_n) == (
        pk.num_inputs, pk.num_aux, pk.num_constraints, pk.log_n)
    assert got.digest == pk.digest and got.insecure
    header = keyfile.read_header(path)
    assert all(off % keyfile.ALIGN == 0 for _, off, _, _ in header["sections"])
    assert path.stat().st_size == header["file_size"]


def _one_line_error(path: Path, fragment: str) -> None:
    with pytest.raises(KeyFileError) as info:
        load_proving_key(path)
    msg = str(info.value)
    assert fragment in msg, msg
    assert "\n" not in msg


def test_bad_magic(key_path) -> None:
    _, path = key_path
    raw = bytearray(path.read_bytes())
    raw[0:8] = b"NOTAKEY!"
    path.write_bytes(bytes(raw))
    _one_line_error(path, "bad magic")


def test_wrong_version(key_path) -> None:
    _, path = key_path
    raw = bytearray(path.read_bytes())
    raw[8:12] = (keyfile.VERSION + 1).to_bytes(4, "little")
    path.write_bytes(bytes(raw))
    _one_line_error(path, "version")


@pytest.mark.parametrize("keep", [5, 10, HEADER_SIZE - 1, HEADER_SIZE + 100, -1])
def test_truncated(key_path, keep: int) -> None:
    _, path = key_path
    raw = path.read_bytes()
    path.write_bytes(raw[:keep] if keep >= 0 else raw[:-1])
    _one_line_error(path, "truncated")


def test_checksum_mismatch_anywhere(key_path) -> None:
    _, path = key_path
    raw = bytearray(path.read_bytes())
    size = len(raw)
    rng = np.random.default_rng()
    header = keyfile.read_header(path)
    name, off, rows, cols = header["sections"][int(rng.integers(len(header["sections"])))]
    pos = off + int(rng.integers(rows * cols * 8))
    raw[pos] ^= 1 << int(rng.integers(8))
    path.write_bytes(bytes(raw))
    assert path.stat().st_size == size
    _one_line_error(path, "checksum")
    # without the check the damaged key still maps (the caller asked for speed)
    assert load_proving_key(path, verify_checksum=False).num_aux > 0


def test_header_field_change_is_caught(key_path) -> None:
    _, path = key_path
    raw = bytearray(path.read_bytes())
    raw[30] ^= 0xFF  # inside the circuit digest
    path.write_bytes(bytes(raw))
    _one_line_error(path, "checksum")


def test_trailing_bytes(key_path) -> None:
    _, path = key_path
    with open(path, "ab") as f:
        f.write(b"extra")
    _one_line_error(path, "trailing")


def test_missing_or_empty_file(tmp_path: Path) -> None:
    with pytest.raises(KeyFileError, match="cannot read"):
        load_proving_key(tmp_path / "absent.pk")
    (tmp_path / "empty.pk").write_bytes(b"")
    with pytest.raises(KeyFileError, match="magic"):
        load_proving_key(tmp_path / "empty.pk")


def test_failed_write_leaves_the_old_file(key_path, monkeypatch) -> None:
    pk, path = key_path
    before = path.read_bytes()
    newer = _random_key(np.random.default_rng())

    class Boom(RuntimeError):
        pass

    real = np.ascontiguousarray
    calls = {"n": 0}

    def failing(a, *args, **kw):
        calls["n"] += 1
        if calls["n"] == 5:
            raise Boom("disk full")
        return real(a, *args, **kw)

    monkeypatch.setattr(keyfile.np, "ascontiguousarray", failing)
    with pytest.raises(Boom):
        save_proving_key(newer, path)
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert sorted(os.listdir(path.parent)) == [path.name]  # no temp file left behind


def test_wrong_shape_refused_before_writing(tmp_path: Path) -> None:
    pk = _random_key(np.random.default_rng())
    pk.h = pk.h[:-1]
    with pytest.raises(KeyFileError, match="section h"):
        save_proving_key(pk, tmp_path / "x.pk")
    assert not (tmp_path / "x.pk").exists()


# ---------------------------------------------------------------- the verified stamp
def _count_hashes(monkeypatch) -> dict:
    """Count full-file hashes by wrapping the module's checksum function."""
    calls = {"n": 0}
    real = keyfile._checksum

    def counting(buf):
        calls["n"] += 1
        return real(buf)

    monkeypatch.setattr(keyfile, "_checksum", counting)
    return calls


def _flip_in_place(path: Path) -> None:
    """Flip one bit inside the h section without replacing the file (same inode)."""
    _, off, _, _ = keyfile.read_header(path)["sections"][-1]
    with open(path, "r+b") as f:
        f.seek(off + 5)
        byte = f.read(1)[0]
        f.seek(off + 5)
        f.write(bytes([byte ^ 0x04]))


def test_stamp_written_after_first_load_and_second_load_skips_the_hash(key_path, monkeypatch) -> None:
    _, path = key_path
    calls = _count_hashes(monkeypatch)
    stamp = keyfile.stamp_path(path)
    assert not stamp.exists()
    load_proving_key(path)
    assert calls["n"] == 1
    fields = json.loads(stamp.read_text())
    st = path.stat()
    assert fields["st_size"] == st.st_size and fields["st_ino"] == st.st_ino
    assert fields["st_mtime_ns"] == st.st_mtime_ns and fields["st_dev"] == st.st_dev
    assert fields["checksum"] == keyfile.read_header(path)["checksum"].hex()
    got = load_proving_key(path)
    assert calls["n"] == 1  # the stamp matched: no second hash
    assert got.num_aux > 0
    assert sorted(os.listdir(path.parent)) == [path.name, stamp.name]  # no temp file left behind


def test_always_hashes_every_time(key_path, monkeypatch) -> None:
    _, path = key_path
    calls = _count_hashes(monkeypatch)
    load_proving_key(path)
    load_proving_key(path, verify="always")
    load_proving_key(path, verify="always")
    assert calls["n"] == 3
    with pytest.raises(ValueError, match="verify"):
        load_proving_key(path, verify="sometimes")


def test_replaced_file_is_verified_again(key_path) -> None:
    """A corrupt file renamed over the key (new inode) does not inherit the old stamp."""
    _, path = key_path
    load_proving_key(path)
    raw = bytearray(path.read_bytes())
    raw[-1] ^= 0x01
    tmp = path.with_name("other.pk")
    tmp.write_bytes(bytes(raw))
    os.replace(tmp, path)
    assert keyfile.stamp_path(path).exists()
    _one_line_error(path, "checksum")


def test_rewrite_with_new_mtime_is_verified_again(key_path) -> None:
    _, path = key_path
    load_proving_key(path)
    st = path.stat()
    _flip_in_place(path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    assert path.stat().st_ino == st.st_ino
    _one_line_error(path, "checksum")


def test_in_place_write_with_restored_mtime_is_caught_by_ctime(key_path) -> None:
    """Restoring the mtime with os.utime still moves the ctime, which the stamp also records."""
    _, path = key_path
    load_proving_key(path)
    st = path.stat()
    time.sleep(0.05)  # past the filesystem's timestamp granularity
    _flip_in_place(path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    after = path.stat()
    assert (after.st_mtime_ns, after.st_size, after.st_ino) == (st.st_mtime_ns, st.st_size, st.st_ino)
    if after.st_ctime_ns == st.st_ctime_ns:
        pytest.skip("this filesystem does not move ctime")
    _one_line_error(path, "checksum")


@pytest.mark.parametrize("content", [b"{not json", b"\xff\xfe", b"[]", b'{"format": 1}', b""])
def test_garbled_stamp_means_a_full_verify(key_path, monkeypatch, content: bytes) -> None:
    _, path = key_path
    load_proving_key(path)
    keyfile.stamp_path(path).write_bytes(content)
    calls = _count_hashes(monkeypatch)
    load_proving_key(path)
    assert calls["n"] == 1
    load_proving_key(path)  # the full verify wrote a good stamp again
    assert calls["n"] == 1


def test_stamp_for_another_checksum_does_not_match(key_path, monkeypatch) -> None:
    _, path = key_path
    load_proving_key(path)
    stamp = keyfile.stamp_path(path)
    fields = json.loads(stamp.read_text())
    fields["checksum"] = "00" * 32
    stamp.write_text(json.dumps(fields))
    calls = _count_hashes(monkeypatch)
    load_proving_key(path)
    assert calls["n"] == 1


def test_unwritable_stamp_is_not_an_error(key_path, monkeypatch) -> None:
    _, path = key_path
    calls = _count_hashes(monkeypatch)

    def refuse(*args, **kw):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(keyfile, "atomic_write", refuse)
    assert load_proving_key(path).num_aux > 0
    assert load_proving_key(path).num_aux > 0
    assert calls["n"] == 2  # no stamp, so every load hashes
    assert not keyfile.stamp_path(path).exists()


def test_save_removes_a_stale_stamp(key_path, monkeypatch) -> None:
    _, path = key_path
    load_proving_key(path)
    assert keyfile.stamp_path(path).exists()
    newer = _random_key(np.random.default_rng())
    save_proving_key(newer, path)
    assert not keyfile.stamp_path(path).exists()
    calls = _count_hashes(monkeypatch)
    got = load_proving_key(path)
    assert calls["n"] == 1 and np.array_equal(got.h, newer.h)


def test_no_checksum_load_writes_no_stamp(key_path) -> None:
    _, path = key_path
    load_proving_key(path, verify_checksum=False)
    assert not keyfile.stamp_path(path).exists()
