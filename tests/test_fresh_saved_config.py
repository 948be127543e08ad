"""ctrl+s in a plain `sealtop` writes ./sealtop.toml with the knobs; the next plain `sealtop`
there reads it. The saved file plus the defaults must give the same jobs as before the save:
it used to become the whole config, so the console's default preset (tiny) was skipped and the
engine's own default (chain-64) was proven instead."""

from __future__ import annotations

import random
import tomllib

import pytest

pytest.importorskip("textual")

from app.live import make_job  # noqa: E402
from app.main import DEFAULT_CONFIG, build_app  # noqa: E402
from tests.app_pilot import wait_for  # noqa: E402
from tests.test_app_fakes import FakeEngine  # noqa: E402


def _jobs(app) -> tuple:
    job = make_job(None, app.config)
    return job.preset, job.partitions, job.seed


async def test_saved_knobs_keep_the_plain_consoles_jobs(tmp_path, monkeypatch):
    from app.console import SealtopApp

    monkeypatch.chdir(tmp_path)
    first = build_app([])
    before = _jobs(first)
    assert first.config_path is None and before[0] == "tiny"
    eng = FakeEngine()
    workers = random.randint(3, 9)
    app = SealtopApp("live", engine_factory=lambda: eng, config=first.config, config_path=None,
                     autofeed=0)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.engine is not None and app.state.started)
        app.source.set_knob("partition_workers", workers)
        await wait_for(pilot, lambda: app.state.knobs.get("partition_workers") == workers)
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: any("saved knobs to" in e.text for e in app.state.log))
    saved = tomllib.loads((tmp_path / DEFAULT_CONFIG).read_text())
    assert saved["engine"]["partition_workers"] == workers and "jobs" not in saved
    again = build_app([])
    assert again.config_path == DEFAULT_CONFIG
    assert _jobs(again) == before  # the same jobs as before the save ...
    assert again.config.partition_workers == workers  # ... with the saved knobs


def test_a_sealtop_toml_that_names_its_jobs_keeps_them(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    preset = random.choice(["chain-64", "chain-256"])
    (tmp_path / DEFAULT_CONFIG).write_text(f'[engine]\npartition_workers = 3\n[jobs]\npreset = "{preset}"\n')
    assert _jobs(build_app([]))[0] == preset


def test_an_explicit_config_keeps_the_engines_default_preset(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cfg = tmp_path / "mine.toml"
    cfg.write_text("[engine]\npartition_workers = 3\n")
    from engine.config import EngineConfig

    assert _jobs(build_app(["--config", str(cfg)]))[0] == EngineConfig().preset
