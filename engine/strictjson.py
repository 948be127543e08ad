"""JSON as the engine's own files are read: a repeated key or a NaN/Infinity constant is an error,
not a silent last-one-wins, and every problem is one line naming the file (the C1 file, the
verifier's statement)."""

from __future__ import annotations

import gc
import json
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")


def json_kind(v: Any) -> str:
    """What a JSON value is, for an error line ("got an array")."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "a boolean"
    return {dict: "an object", list: "an array", str: "a string", int: "a number",
            float: "a number"}.get(type(v), type(v).__name__)


@contextmanager
def collector_paused() -> Iterator[None]:
    """No garbage collection inside: for reading a large document of small acyclic containers
    (a 32 GiB sector's C1 file is ~400 K lists), where the collector's passes over the young
    objects as they are made cost ~30 % of the read and free nothing."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()


def strict_loads(text: str | bytes, error: type[ValueError]) -> Any:
    """The JSON document in ``text``; ``error`` (one line, naming line and column) for anything
    that is not strict JSON."""

    def no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for k, v in pairs:
            if k in out:
                raise error(f"repeated field {k!r}")
            out[k] = v
        return out

    def no_constant(name: str) -> Any:
        raise error(f"{name} is not JSON")

    try:
        return json.loads(text, object_pairs_hook=no_duplicates, parse_constant=no_constant)
    except json.JSONDecodeError as exc:
        cut = exc.pos >= len(text.rstrip()) if isinstance(text, str) else False
        why = "cut short (truncated)" if cut else exc.msg
        raise error(f"not JSON: {why} at line {exc.lineno} column {exc.colno}") from None
    except RecursionError:
        raise error("not JSON: nested too deeply") from None


def read_strict(path: str | os.PathLike, what: str, noun: str, limit: int,
                parse: Callable[[str], T], error: type[ValueError]) -> T:
    """``parse`` of the UTF-8 text of the file at ``path`` (``what``: "C1 file"), at most
    ``limit`` bytes (larger is no ``noun``); ``error``, one line naming the file, for a file
    that cannot be read or parsed."""
    p = Path(path)
    try:
        if p.is_dir():
            raise error(f"{what} {p}: is a directory")
        size = p.stat().st_size
        if size > limit:
            raise error(f"{what} {p}: {size} bytes is larger than any {noun}")
        raw = p.read_bytes()
    except FileNotFoundError:
        raise error(f"{what} {p}: no such file") from None
    except PermissionError:
        raise error(f"{what} {p}: permission denied") from None
    except OSError as exc:
        raise error(f"{what} {p}: cannot read it ({exc.strerror or exc})") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise error(f"{what} {p}: not UTF-8 text (byte {exc.start})") from None
    if not text.strip():
        raise error(f"{what} {p}: empty")
    try:
        return parse(text)
    except error as exc:
        raise error(f"{what} {p}: {exc}") from None
