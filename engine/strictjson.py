"""JSON as the engine's own files are read: a repeated key or a NaN/Infinity constant is an error,
not a silent last-one-wins, and every problem is one line (the C1 file, the verifier's statement)."""

from __future__ import annotations

import json
from typing import Any


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
