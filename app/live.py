"""The live side of the console: building the embedded Engine and its jobs.

Everything here goes through the Engine API of design.md (Engine(config), start, submit,
subscribe, set_knob, pause, resume, stop). The engine package is imported lazily so that the
console still opens, with a clear notice, when the engine cannot be built (a broken install,
a missing compiled dependency).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class EngineUnavailable(Exception):
    """The embedded engine cannot be built; str() is one line for the console's notice."""


def find_engine_class() -> type:
    """The Engine class, or EngineUnavailable saying why it cannot be imported."""
    try:
        from engine.pipeline import Engine
    except Exception as exc:  # noqa: BLE001 - a broken engine must not crash the console
        first = (str(exc).splitlines() or [""])[0]
        raise EngineUnavailable(f"embedded engine unavailable ({type(exc).__name__}: {first})") from None
    return Engine


def load_config(path: str | None) -> Any:
    """The engine config from a TOML file, or the defaults; raises the engine's ConfigError."""
    from engine.config import EngineConfig
    from engine.config import load_config as _load

    return _load(path) if path else EngineConfig()


def make_factory(config: Any) -> Callable[[], Any]:
    """A zero-argument builder for the engine, run in the bridge's thread (it may be slow)."""

    def build() -> Any:
        return find_engine_class()(config)

    return build


def make_job(engine: Any, config: Any) -> Any:
    """The job the console submits: the config's C1 output when it names one (``[jobs] c1``),
    else its preset and partitions (tiny × 1 by default)."""
    from engine.pipeline import Job

    if getattr(config, "c1", ""):
        from engine.c2.job import config_job

        return config_job(config, 0)
    return Job(preset=getattr(config, "preset", None) or "tiny",
               partitions=getattr(config, "partitions", None) or 1,
               seed=getattr(config, "seed", None) or 1)
