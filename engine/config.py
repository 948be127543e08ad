"""The engine's TOML configuration: reading, validation, and errors that name the key and line.

The settings, their tables, defaults and checks are declared once, in engine/settings.py; this
module reads a file against them. Its tables (every key optional; the defaults suit a CPU-only
laptop) are engine, paths, telemetry, jobs and cluster.

Unknown tables and keys are errors too: a misspelt knob silently falling back to its default is
the kind of mistake an operator cannot see. Every error is a :class:`ConfigError` whose message
is one line of the form ``FILE:LINE: table.key: what is wrong``.

Every way a value enters (this file, ``bench pipeline --set``, the console's prompts through
``Engine.set_knob``, a config built in code and handed to the Engine) goes through the same
per-key check, :func:`validate`; :func:`validate_config` runs it on every field of a config.
"""

from __future__ import annotations

import os
import re
import tomllib
from pathlib import Path
from typing import Any

from engine import settings
from engine.settings import (  # noqa: F401 - the names engine.config has always offered
    ABC_EVAL,
    B_G2,
    BACKENDS,
    DAMAGED_KEY,
    DEALLOC,
    NEEDS,
    NUMA_PLACEMENT,
    PERMIT_RELEASE,
    STALL_ACTIONS,
    EngineConfig,
    default_param_cache,
    format_size,
    parse_size,
)


class ConfigError(ValueError):
    """A config that cannot be used; str() is one line naming the file, line and key."""


def _layout() -> dict[str, tuple[str, ...]]:
    """table -> its keys, in the settings table's order."""
    out: dict[str, list[str]] = {}
    for s in settings.SETTINGS:
        out.setdefault(s.table, []).append(s.name)
    return {t: tuple(keys) for t, keys in out.items()}


def _keys() -> tuple[str, ...]:
    return tuple(s.name for s in settings.SETTINGS)


# derived from the settings table (engine/settings.py) when this module is imported
_LAYOUT: dict[str, tuple[str, ...]] = _layout()
KEYS: tuple[str, ...] = _keys()
KNOBS: tuple[str, ...] = settings.KNOBS


def validate(key: str, value: Any) -> Any:
    """The one check of a setting's value, wherever it comes from; returns the value in its
    stored form (a size string becomes bytes). ValueError with one line naming the key."""
    s = settings.find(key)
    if s is None:
        raise ValueError(f"unknown setting {key!r} (settings: {', '.join(_keys())})")
    try:
        return s.check(value)
    except ValueError as exc:
        raise ValueError(f"{key}: {str(exc).splitlines()[0]}") from None


def validate_config(cfg: EngineConfig) -> EngineConfig:
    """Check every field of a config built in code (or changed after loading); ConfigError
    naming the first bad key. Returns a copy holding the checked values."""
    values = {}
    for key in KEYS:
        try:
            values[key] = validate(key, getattr(cfg, key))
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
    return EngineConfig(**values)


# Policies the engine reads afresh for each partition it admits, so a benchmark may switch them
# between jobs in one engine that keeps its keys (Engine.set_policy); never while one is in flight.
POLICIES = ("permit_release", "dealloc")


def check_policy(name: str, value: Any) -> Any:
    """Validate a between-jobs policy value the same way the file is validated; ValueError if bad."""
    if name not in POLICIES:
        raise ValueError(f"unknown policy {name!r} (policies: {', '.join(POLICIES)})")
    return validate(name, value)


def check_knob(name: str, value: Any) -> Any:
    """Validate a live knob value the same way the file is validated; ValueError if bad."""
    knobs = settings.knob_names()
    if name not in knobs:
        raise ValueError(f"unknown knob {name!r} (knobs: {', '.join(knobs)})")
    return validate(name, value)


_HEADER_RE = re.compile(r"^\s*\[\s*([A-Za-z0-9_\-\.\"' ]+?)\s*\]\s*(#.*)?$")


def _line_of(text: str, table: str | None, key: str | None) -> int:
    """Best-effort line number (1-based) of ``key`` inside ``[table]`` (or of the header)."""
    current: str | None = None
    lines = text.splitlines()
    for i, line in enumerate(lines, 1):
        m = _HEADER_RE.match(line)
        if m:
            current = m.group(1).strip().strip("\"'")
            if key is None and current == table:
                return i
            continue
        if key is not None and current == table:
            if re.match(rf"^\s*[\"']?{re.escape(key)}[\"']?\s*=", line):
                return i
    # dotted forms such as `engine.partition_workers = 2` at top level
    if key is not None and table is not None:
        for i, line in enumerate(lines, 1):
            if re.match(rf"^\s*{re.escape(table)}\s*\.\s*{re.escape(key)}\s*=", line):
                return i
    return 0


def _fail(source: str, text: str, table: str | None, key: str | None, why: str) -> ConfigError:
    line = _line_of(text, table, key)
    where = f"{source}:{line}" if line else source
    name = ".".join(p for p in (table, key) if p)
    return ConfigError(f"{where}: {name}: {why}")


def parse_config(text: str, source: str = "<config>") -> EngineConfig:
    """Parse and validate TOML text. Raises ConfigError with one line naming file, line, key."""
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        msg = str(exc)
        m = re.search(r"\(at line (\d+), column (\d+)\)", msg)
        if m:
            reason = msg[: m.start()].strip()
            raise ConfigError(f"{source}:{m.group(1)}: not valid TOML: {reason}") from None
        raise ConfigError(f"{source}: not valid TOML: {msg.splitlines()[0]}") from None
    values: dict[str, Any] = {}
    layout = _layout()
    checks = {s.name: s.check for s in settings.SETTINGS}
    for table, body in doc.items():
        if table not in layout:
            raise _fail(
                source, text, table, None,
                f"unknown table (expected one of {', '.join('[' + t + ']' for t in layout)})",
            )
        if not isinstance(body, dict):
            raise _fail(source, text, None, table, "must be a table such as [" + table + "]")
        for key, value in body.items():
            if key not in layout[table]:
                raise _fail(
                    source, text, table, key,
                    f"unknown key (keys of [{table}]: {', '.join(layout[table])})",
                )
            try:
                values[key] = checks[key](value)
            except ValueError as exc:
                raise _fail(source, text, table, key, str(exc)) from None
    cfg = EngineConfig(**values)
    if cfg.backend == "cpu" and "devices" not in values:
        cfg.devices = []
    return cfg


def load_config(path: str | os.PathLike[str]) -> EngineConfig:
    """Read and validate a config file; ConfigError (one line) if unreadable or invalid."""
    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise ConfigError(f"{p}: cannot read config: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise ConfigError(f"{p}:{line}: not valid TOML: the file is not UTF-8") from None
    return parse_config(text, str(p))
