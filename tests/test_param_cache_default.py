"""The key cache's default follows the XDG base directory spec: $XDG_CACHE_HOME/sealtop/params
when XDG_CACHE_HOME is set (absolute), else ~/.cache/sealtop/params; a config's own
param_cache wins over both."""

from __future__ import annotations

import random
import string

from engine.config import EngineConfig, load_config


def _word() -> str:
    return "".join(random.choices(string.ascii_lowercase, k=random.randint(3, 10)))


def test_xdg_cache_home_is_the_default_when_set(tmp_path, monkeypatch):
    xdg = tmp_path / _word()
    monkeypatch.setenv("XDG_CACHE_HOME", str(xdg))
    assert EngineConfig().param_cache_path() == xdg / "sealtop" / "params"
    cfg = tmp_path / "c.toml"
    cfg.write_text('[engine]\nbackend = "cpu"\n')
    assert load_config(cfg).param_cache_path() == xdg / "sealtop" / "params"
    own = tmp_path / _word()
    cfg.write_text(f'[paths]\nparam_cache = "{own}"\n')
    assert load_config(cfg).param_cache_path() == own


def test_without_xdg_cache_home_or_with_a_relative_one_it_is_under_home(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    home_cache = tmp_path / ".cache" / "sealtop" / "params"
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    assert EngineConfig().param_cache_path() == home_cache
    monkeypatch.setenv("XDG_CACHE_HOME", "")
    assert EngineConfig().param_cache_path() == home_cache
    monkeypatch.setenv("XDG_CACHE_HOME", _word())  # relative: the spec says to ignore it
    assert EngineConfig().param_cache_path() == home_cache
