"""Saving the live knobs (the settings table's, engine/settings.py) back into the operator's
TOML config with tomlkit, each into its own table.

tomlkit edits the parsed document in place, so comments, ordering, blank lines and the
operator's spelling of values (a size written as "8GiB" stays a size string) survive. The file
is replaced atomically so that a crash mid-write cannot leave half a config.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import tomlkit

from engine.atomic import atomic_write
from engine.settings import live_settings


def saved_knobs() -> tuple[str, ...]:
    """The knobs ctrl+s writes: every live knob of the settings table, in its order."""
    return tuple(s.name for s in live_settings())


class ConfigSaveError(Exception):
    """The config could not be written; str() is one line for the log."""


def _size_string(n: int) -> str:
    try:
        from engine.config import format_size

        s = format_size(n)
        return "0" if s == "unlimited" else s
    except ImportError:
        return str(n)


def names_jobs(path: str | os.PathLike[str]) -> bool:
    """Whether the TOML file at path chooses the jobs itself (a preset in [jobs]). A file that
    ctrl+s wrote for a plain `sealtop` holds only knobs: the console's default jobs (the tiny
    preset) still apply to it, as they did before the save."""
    import tomllib

    try:
        doc = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return True  # the engine's own reading of it says what is wrong
    jobs = doc.get("jobs")
    return isinstance(jobs, dict) and "preset" in jobs


def save_knobs(path: str | os.PathLike[str], knobs: dict[str, Any]) -> list[str]:
    """Write the knobs, each into its table (all in [engine] today), of the TOML file at path
    (created if absent). A size the file spells as a string stays a size string.

    Returns the names of the keys whose value changed.
    """
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8") if p.exists() else ""
        doc = tomlkit.parse(text)
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigSaveError(f"cannot read {p}: {exc}") from None
    except Exception as exc:  # tomlkit's parse errors
        raise ConfigSaveError(f"{p} is not valid TOML, not saving: {exc}") from None
    for setting in live_settings():  # the knobs' tables, made where the file has none
        if doc.get(setting.table) is None:
            doc[setting.table] = tomlkit.table()
    changed: list[str] = []
    for setting in live_settings():
        name = setting.name
        if name not in knobs or knobs[name] is None:
            continue
        table = doc[setting.table]
        value = knobs[name]
        old = table.get(name)
        if setting.unit == "bytes" and isinstance(old, str):
            value = _size_string(int(value))
        if old is not None and (old == value or str(old) == str(value)):
            continue
        table[name] = value
        changed.append(name)
    if not changed and p.exists():
        return changed
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        with atomic_write(p) as f:
            f.write(tomlkit.dumps(doc))
    except OSError as exc:
        raise ConfigSaveError(f"cannot write {p}: {exc.strerror or exc}") from None
    return changed
