"""atomic_write: the target changes only when the write completes; a failure mid-write leaves
the old file as it was and no temp file behind."""

from __future__ import annotations

import pytest

from engine.atomic import atomic_write


def test_success_replaces_and_failure_keeps_the_old_file(tmp_path) -> None:
    target = tmp_path / "key.bin"
    with atomic_write(target, "wb") as f:
        f.write(b"good")
    assert target.read_bytes() == b"good"

    with pytest.raises(RuntimeError):
        with atomic_write(target, "wb") as f:
            f.write(b"half a new fi")
            raise RuntimeError("disk pulled")
    assert target.read_bytes() == b"good"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["key.bin"]

    with atomic_write(target) as f:
        f.write("text ✓")
    assert target.read_text(encoding="utf-8") == "text ✓"
