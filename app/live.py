"""The live side of the console: finding and building the embedded Engine, submitting jobs.

Everything here goes through the Engine API of design.md (Engine(config), start, submit,
subscribe, set_knob, pause, resume, stop). The engine package is imported lazily so that the
console still opens, with a clear notice, when the engine cannot be built.
"""

from __future__ import annotations

import importlib
from typing import Any, Callable

# Where the Engine class may live, in the order tried.
ENGINE_MODULES = ("engine.pipeline", "engine.pipeline.engine", "engine.engine")


class EngineUnavailable(Exception):
    """The embedded engine cannot be built; str() is one line for the console's notice."""


def find_engine_class() -> type:
    """The Engine class, or EngineUnavailable saying why not."""
    errors: list[str] = []
    for mod in ENGINE_MODULES:
        try:
            m = importlib.import_module(mod)
        except ModuleNotFoundError as exc:
            if exc.name and not mod.startswith(exc.name) and exc.name != mod:
                errors.append(f"{mod}: needs {exc.name}")
            continue
        except Exception as exc:  # noqa: BLE001 - a broken engine must not crash the console
            errors.append(f"{mod}: {type(exc).__name__}: {exc}")
            continue
        cls = getattr(m, "Engine", None)
        if cls is not None:
            return cls
    why = "; ".join(errors) if errors else "no Engine class in engine.pipeline yet"
    raise EngineUnavailable(f"embedded engine unavailable ({why})")


def load_config(path: str | None) -> Any:
    """The engine config from a TOML file, or the defaults; raises the engine's ConfigError."""
    from engine.config import EngineConfig, load_config as _load

    return _load(path) if path else EngineConfig()


def make_factory(config: Any) -> Callable[[], Any]:
    """A zero-argument builder for the engine, run in the bridge's thread (it may be slow)."""

    def build() -> Any:
        cls = find_engine_class()
        return cls(config)

    return build


def make_job(engine: Any, config: Any) -> Any:
    """A job for engine.submit, built the way the engine exposes it."""
    preset = getattr(config, "preset", None) or "tiny"
    partitions = getattr(config, "partitions", None) or 1
    for mod in ("engine.jobs", "engine.pipeline", "engine.pipeline.engine", "engine.job"):
        try:
            m = importlib.import_module(mod)
        except Exception:  # noqa: BLE001
            continue
        for name in ("make_job", "Job"):
            fn = getattr(m, name, None)
            if fn is None:
                continue
            try:
                return fn(preset=preset, partitions=partitions)
            except TypeError:
                try:
                    return fn(preset)
                except TypeError:
                    continue
    return {"preset": preset, "partitions": partitions}
