"""The panels' grid (app/widgets/render.py) against Rich's Table.grid, which it replaces.

Rich is the oracle: random columns (fixed widths, ratios, left and right justified) and random
styled cells, rendered by both at random widths, must give the same segments; cells too long
for their column end in "…" as Rich's do."""

from __future__ import annotations

import random

from rich.console import Console
from rich.table import Table
from rich.text import Text

from app.widgets.render import Col, column_widths, grid, stack


def _render(renderable, width: int) -> str:
    console = Console(width=width, color_system="truecolor", force_terminal=True,
                      legacy_windows=False)
    with console.capture() as cap:
        console.print(renderable, end="")
    return cap.get().rstrip("\n")


def _random_case(rng: random.Random):
    width = rng.randint(24, 160)
    cols = []
    for _ in range(rng.randint(1, 7)):
        if rng.random() < 0.3:
            cols.append(Col(ratio=rng.randint(1, 3)))
        else:
            cols.append(Col(rng.randint(1, 14), justify=rng.choice(("left", "right"))))
    rows = [[Text("".join(rng.choice("ab▁█✓") for _ in range(rng.randint(0, 18))),
                  style=rng.choice(("", "bold", "reverse", "dim green")))
             for _ in cols] for _ in range(rng.randint(1, 4))]
    return width, cols, rows


def test_grid_renders_as_rich_table_grid() -> None:
    rng = random.Random()
    compared = 0
    while compared < 300:
        width, cols, rows = _random_case(rng)
        if sum(c.width + 1 if not c.ratio else 4 * c.ratio for c in cols) > width:
            continue  # too narrow: Rich would shrink columns; grid crops (the panels never are)
        table = Table.grid(padding=(0, 1), expand=True)
        for c in cols:
            table.add_column(width=c.width or None, ratio=c.ratio or None, justify=c.justify)
        for r in rows:
            table.add_row(*r)
        assert _render(grid(rows, cols, width), width) == _render(table, width), (width, cols)
        compared += 1


def test_grid_widths_and_crop() -> None:
    cols = [Col(4), Col(ratio=1), Col(ratio=1)]
    w = column_widths(cols, 30)
    assert sum(w) + len(cols) - 1 == 30 and w[0] == 4
    text = grid([["abcdefg", "x", "y"]], cols, 30)
    assert text.plain.startswith("abc… x")
    assert len(text.plain) == 30
    # a row wider than the width is cropped, never wrapped
    narrow = grid([["abcd", "efgh"]], [Col(4), Col(4)], 6)
    assert narrow.plain == "abcd e" and "\n" not in narrow.plain


def test_stack_one_line_each() -> None:
    s = stack([Text("a"), Text("b", style="bold"), grid([["c", "d"]], [Col(1), Col(1)], 3)])
    assert s.plain == "a\nb\nc d"
    assert _render(s, 10).count("\n") == 2
