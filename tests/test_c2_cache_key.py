"""The C2 circuit's cache key covers engine/c2's gadget code: a changed gadget is never served a
circuit cached before the change (the builder's own digest reads engine/circuit only)."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import pytest

import engine.c2.circuit as c2
from engine.seal.circuit_count import TEST_SHAPE

ENGINE = Path(c2.__file__).resolve().parent.parent


def _copy(tmp: Path) -> Path:
    for name in c2.SHAPE_SOURCES + ("c2/assign.py",):
        (tmp / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ENGINE / name, tmp / name)
    return tmp


def test_a_changed_gadget_changes_the_key(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    assert c2.gadget_digest(root) == c2.gadget_digest()
    # a module that only reads values is not the shape
    (root / "c2/assign.py").write_text((root / "c2/assign.py").read_text() + "\n# reads values\n")
    assert c2.gadget_digest(root) == c2.gadget_digest()
    name = random.choice(c2.SHAPE_SOURCES)
    (root / name).write_text((root / name).read_text() + "\n# another row\n")
    assert c2.gadget_digest(root) != c2.gadget_digest()


class _Captured(Exception):
    pass


def test_build_c2_keys_the_cache_by_the_gadgets(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    seen: list[dict] = []

    def fake_cached_build(family, params, build, cache_dir, progress):
        seen.append(params)
        raise _Captured

    monkeypatch.setattr(c2, "cached_build", fake_cached_build)
    with pytest.raises(_Captured):
        c2.build_c2(TEST_SHAPE, tmp_path)
    assert seen[0]["gadgets"] == c2.gadget_digest()
