"""`sealtop run --config sample-configs/single-h200.toml` on a machine where the cuda backend
cannot run is refused at once: one line naming the backend, exit 2, no circuit built, nothing
written (it used to build the `large` circuit for minutes and write GBs before the refusal)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
import tomlkit

from kernels.backend import unavailable_reason

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(unavailable_reason("cuda") is None,
                                reason="the cuda backend runs here: nothing to refuse")


def _config(tmp_path: Path) -> tuple[Path, Path]:
    """The sample H200 config with its parameter cache moved under tmp_path."""
    doc = tomlkit.parse((ROOT / "sample-configs" / "single-h200.toml").read_text())
    params = tmp_path / "params"
    doc["paths"]["param_cache"] = str(params)  # type: ignore[index]
    cfg = tmp_path / "h200.toml"
    cfg.write_text(tomlkit.dumps(doc))
    return cfg, params


def test_run_refuses_an_unavailable_backend_before_building(tmp_path, monkeypatch, capsys):
    import engine.pipeline.circuits as circuits
    from engine.verbs.cli import main

    built: list[str] = []

    def resolve(preset, cache_dir=None):  # the oracle: any build at all is the defect
        built.append(preset)
        raise AssertionError(f"built the {preset} circuit before checking the backend")

    monkeypatch.setattr(circuits, "resolve", resolve)
    cfg, params = _config(tmp_path)
    rec = tmp_path / f"run-{random.randrange(1 << 30)}.jsonl"
    code = main(["run", "--config", str(cfg), "--jobs", str(random.randint(1, 5)),
                 "--record", str(rec)])
    out, err = capsys.readouterr()
    assert code == 2
    assert built == []
    assert err.count("\n") == 1 and err.startswith("sealtop: run: "), err
    assert 'backend = "cuda"' in err and unavailable_reason("cuda") in err
    assert out == ""
    assert not params.exists() and not rec.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["h200.toml"]


def test_an_available_backend_still_goes_on_to_the_preset(tmp_path, capsys):
    """The check refuses only what cannot run: the cpu backend with an unknown preset gets to
    the preset's own refusal."""
    from engine.verbs.cli import main

    cfg = tmp_path / "c.toml"
    cfg.write_text(f'[engine]\nbackend = "cpu"\n[paths]\nparam_cache = "{tmp_path / "p"}"\n'
                   '[jobs]\npreset = "no-such-preset"\n')
    assert main(["run", "--config", str(cfg)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("sealtop: run: ") and "no-such-preset" in err and "backend" not in err
