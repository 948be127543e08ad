"""The switch interval the orchestrator and the provers run with (engine.pipeline.latency)."""

import sys

import pytest

from engine.pipeline import latency as handoff


@pytest.fixture
def restore_interval():
    before = sys.getswitchinterval()
    yield
    sys.setswitchinterval(before)


def test_default_is_short(monkeypatch, restore_interval):
    monkeypatch.delenv("SEALTOP_SWITCH_INTERVAL_MS", raising=False)
    sys.setswitchinterval(0.005)
    assert handoff.quicken_handoffs() == pytest.approx(handoff.SWITCH_INTERVAL_S)
    assert sys.getswitchinterval() < 0.005


def test_override_and_opt_out(monkeypatch, restore_interval):
    monkeypatch.setenv("SEALTOP_SWITCH_INTERVAL_MS", "1.5")
    assert handoff.quicken_handoffs() == pytest.approx(0.0015)
    sys.setswitchinterval(0.004)
    monkeypatch.setenv("SEALTOP_SWITCH_INTERVAL_MS", "0")  # leave the interpreter's own value
    assert handoff.quicken_handoffs() == pytest.approx(0.004)


def test_unreadable_override_keeps_the_default(monkeypatch, restore_interval):
    monkeypatch.setenv("SEALTOP_SWITCH_INTERVAL_MS", "fast")
    assert handoff.quicken_handoffs() == pytest.approx(handoff.SWITCH_INTERVAL_S)


def test_the_engine_puts_the_interval_back_when_it_stops(monkeypatch, restore_interval, tmp_path):
    from engine.config import EngineConfig
    from engine.pipeline import Engine

    monkeypatch.delenv("SEALTOP_SWITCH_INTERVAL_MS", raising=False)
    sys.setswitchinterval(0.003)
    eng = Engine(EngineConfig(backend="cpu", devices=[], partition_workers=1,
                              param_cache=str(tmp_path), sample_interval_s=0.05))
    eng.start()
    try:
        assert sys.getswitchinterval() == pytest.approx(handoff.SWITCH_INTERVAL_S)
    finally:
        eng.stop()
    assert sys.getswitchinterval() == pytest.approx(0.003)
