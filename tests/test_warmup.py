"""The first-run compile stamp: a fresh cache dir means compile (with progress), then a stamp
makes the next start skip it; a change to a kernel source gives a new fingerprint."""

from __future__ import annotations

from engine import warmup


def test_warm_once_then_skip(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert not warmup.is_warm()
    lines: list[str] = []
    assert warmup.ensure_warm(lines.append) > 0
    assert any("compiling the CPU kernels" in m for m in lines)
    assert warmup.is_warm()
    lines.clear()
    assert warmup.ensure_warm(lines.append) == 0.0
    assert lines == []


def test_fingerprint_follows_sources(tmp_path, monkeypatch) -> None:
    before = warmup._fingerprint()
    fake_root = tmp_path / "root"
    for rel in warmup._SOURCES:
        src = warmup.ROOT / rel
        dst = fake_root / rel
        if src.is_dir():
            for f in src.rglob("*.py"):
                (dst / f.relative_to(src)).parent.mkdir(parents=True, exist_ok=True)
                (dst / f.relative_to(src)).write_bytes(f.read_bytes())
        else:
            dst.parent.mkdir(parents=True, exist_ok=True)
            dst.write_bytes(src.read_bytes())
    monkeypatch.setattr(warmup, "ROOT", fake_root)
    assert warmup._fingerprint() == before
    (fake_root / "kernels/cpu/fr.py").write_text("# changed\n")
    assert warmup._fingerprint() != before
