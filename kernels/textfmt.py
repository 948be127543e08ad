"""The one plain-text table, the one byte size formatter and the one error line of everything
sealtop prints, and the argument parser that reports a bad argument in that line.

The kernel benchmark (kernels/bench.py) prints a table and parses its arguments, and sits in the
bottom layer, so these live here where the engine's verbs and summaries, the console and the
scripts can all import them (layers point one way: app → engine → kernels).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Sequence
from typing import NoReturn

_BYTE_UNITS = ("B", "KiB", "MiB", "GiB", "TiB")


def fmt_bytes(n: int | float | None) -> str:
    """Binary units, three significant figures (whole numbers from 100): ``1.50 GiB``,
    ``768 MiB``, ``1023 KiB``, ``570 B``; ``N/A`` for None (a value the source could not read)."""
    if n is None:
        return "N/A"
    x = float(n)
    for unit in _BYTE_UNITS:
        if abs(x) < 1024 or unit == _BYTE_UNITS[-1]:
            if unit == "B":
                return f"{int(x)} B"
            # 100 and up as whole numbers: .3g would write 1000-1023 as "1e+03"
            return f"{x:.0f} {unit}" if abs(x) >= 100 else f"{x:.2f} {unit}"
        x /= 1024
    raise AssertionError("unreachable: the last unit returns")


def table(
    head: Sequence[str],
    body: Iterable[Sequence[str]],
    *,
    left: int = 0,
    sep: str = "  ",
    rule: bool = False,
    widths: Sequence[int] = (),
) -> list[str]:
    """Rows of cells as aligned text lines, the header first.

    Every column is as wide as its widest cell (and at least ``widths[i]`` where given); the
    first ``left`` columns are aligned left (names), the rest right (numbers). With ``rule`` a
    line of dashes under each header separates it from the rows. A row with another number of
    cells than the header is a ValueError: a silently shifted column reads as wrong numbers.
    """
    rows = [list(r) for r in body]
    for r in rows:
        if len(r) != len(head):
            raise ValueError(f"table: a row has {len(r)} cells for {len(head)} columns")
    w = [max(len(h), widths[i] if i < len(widths) else 0, *(len(r[i]) for r in rows))
         for i, h in enumerate(head)]

    def line(cells: Sequence[str]) -> str:
        return sep.join(c.ljust(w[i]) if i < left else c.rjust(w[i]) for i, c in enumerate(cells))

    out = [line(head)]
    if rule:
        out.append(sep.join("-" * x for x in w))
    out += [line(r) for r in rows]
    return out


def error_line(prog: str, message: str) -> str:
    """The one error style of every sealtop command: ``sealtop: VERB: message`` (the verb left
    out for the bare command), one line; another program name (``python -m kernels.bench``)
    leads its own message the same way."""
    first = message.strip().splitlines()
    text = first[0] if first else "failed"
    name, _, verb = prog.strip().partition(" ")
    if name != "sealtop":
        return f"{prog}: {text}"
    return f"sealtop: {verb}: {text}" if verb else f"sealtop: {text}"


def exc_line(exc: BaseException) -> str:
    """What a one-line report of ``exc`` says: the first line of its message, else (an empty
    message) its type's name."""
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


class OneLineParser(argparse.ArgumentParser):
    """argparse that reports a bad argument in one :func:`error_line` (``sealtop: VERB: what
    (see ...)``, exit 2) instead of its usage block and ``error:`` line."""

    def error(self, message: str) -> NoReturn:
        print(error_line(self.prog, f"{message} (see `{self.prog} --help`)"), file=sys.stderr)
        raise SystemExit(2)
