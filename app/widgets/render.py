"""Small rendering helpers shared by the panels: palette, sparklines and bars.

They turn numbers into Rich Text. The palette comes from the active Textual theme's variables
(themes/), so a live theme switch recolours everything; in the no-colour theme, styles collapse
to bold/reverse and stages are told apart by glyph.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from rich._ratio import ratio_distribute
from rich.text import Text

SPARK = "▁▂▃▄▅▆▇█"
# Glyphs for stacked-bar segments and Gantt stages: distinct without colour.
SEG_GLYPH = {"queue": "·", "synth": "▒", "channel": "░", "gpu": "█", "finalize": "▓", "dealloc": "▁"}
STAGE_GLYPH = {
    "queued": "·",
    "synthesizing": "▒",
    "synthesized": "▚",
    "waiting_gpu": "░",
    "gpu": "█",
    "finalizing": "▓",
    "deallocating": "▁",
    "done": " ",
    "failed": "✗",
    "cancelled": "⊘",
}


@dataclass
class Palette:
    """Rich styles for the current theme."""

    ok: str = "green"
    bad: str = "bold red"
    warn: str = "yellow"
    accent: str = "cyan"
    dim: str = "dim"
    title: str = "bold"
    mono: bool = False
    stage: dict[str, str] = field(default_factory=dict)
    seg: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_theme(cls, theme) -> Palette:
        """Build from a textual Theme (or None for plain defaults)."""
        if theme is None:
            return cls()
        v = getattr(theme, "variables", {}) or {}
        if v.get("mono") == "yes":
            return cls(ok="bold", bad="bold reverse", warn="bold", accent="bold", dim="",
                       title="bold underline", mono=True)
        stage = {k[6:]: c for k, c in v.items() if k.startswith("stage-")}
        seg = {k[4:]: c for k, c in v.items() if k.startswith("seg-")}
        return cls(
            ok=theme.success or "green",
            bad=f"bold {theme.error or 'red'}",
            warn=theme.warning or "yellow",
            accent=theme.primary or "cyan",
            dim="dim",
            stage=stage,
            seg=seg,
        )

    def stage_style(self, stage: str) -> str:
        return self.stage.get(stage, "")

    def seg_style(self, seg: str) -> str:
        return self.seg.get(seg, "")


def spark(values: Iterable[float], width: int, hi: float | None = None) -> str:
    """A sparkline of the last `width` values, scaled to hi (default: their max)."""
    vals = list(values)[-width:] if width > 0 else []
    if not vals:
        return " " * max(width, 0)
    top = hi if hi and hi > 0 else max(vals)
    if top <= 0:
        line = SPARK[0] * len(vals)
    else:
        line = "".join(SPARK[min(len(SPARK) - 1, max(0, int(v / top * (len(SPARK) - 1) + 0.5)))]
                       for v in vals)
    return line.rjust(width)


def meter(frac: float | None, width: int, style: str = "", empty: str = "dim") -> Text:
    """A horizontal gauge [████░░░░] for a fraction in 0..1 (N/A when None)."""
    if frac is None:
        return Text("N/A".center(width), style="dim")
    frac = max(0.0, min(1.0, frac))
    full = int(round(frac * width))
    t = Text()
    t.append("█" * full, style=style)
    t.append("░" * (width - full), style=empty)
    return t


def stacked_bar(parts: Sequence[tuple[str, float]], scale: float, width: int, pal: Palette) -> Text:
    """A stacked bar of (segment, ms) scaled so that `scale` ms fills `width` cells."""
    t = Text()
    if scale <= 0:
        return Text(" " * width)
    used = 0
    acc = 0.0
    for seg, ms in parts:
        if not ms or ms <= 0:
            continue
        acc += ms
        end = min(width, int(round(acc / scale * width)))
        n = max(0, end - used)
        if n:
            # Distinct glyphs as well as colours: readable in the mono theme and in plain text.
            t.append(SEG_GLYPH.get(seg, "█") * n, style=pal.seg_style(seg))
            used += n
    if used < width:
        t.append(" " * (width - used))
    return t


@dataclass(frozen=True)
class Col:
    """A column of grid(): a fixed width, or a share (ratio) of what the fixed ones leave."""

    width: int = 0
    ratio: int = 0
    justify: str = "left"  # left | right


def column_widths(cols: Sequence[Col], width: int) -> list[int]:
    """The cells each column's content gets in `width`, as Rich's Table.grid(padding=(0, 1),
    expand=True) sizes them: one blank after every column but the last, the flexible columns
    sharing what the fixed ones leave by ratio, and with none flexible the spare cells shared
    in proportion to the widths."""
    last = len(cols) - 1
    pads = [1 if j < last else 0 for j in range(len(cols))]
    alloc = [0 if c.ratio else c.width + pads[j] for j, c in enumerate(cols)]
    flex = [j for j, c in enumerate(cols) if c.ratio]
    if flex:
        shares = ratio_distribute(max(0, width - sum(alloc)), [cols[j].ratio for j in flex],
                                  [1 + pads[j] for j in flex])
        for j, share in zip(flex, shares):
            alloc[j] = share
    elif 0 < sum(alloc) < width:
        alloc = [a + p for a, p in zip(alloc, ratio_distribute(width - sum(alloc), alloc))]
    return [max(0, a - p) for a, p in zip(alloc, pads)]


def grid(rows: Iterable[Sequence[Text | str]], cols: Sequence[Col], width: int) -> Text:
    """One-line rows laid out in columns, as one Text of lines.

    What the panels drew with Rich's Table.grid, at a fraction of its cost (a Table measures
    every cell each time it renders, and the panels render every refresh); a Text is also cheap
    to compare, so a panel whose text did not change is not repainted (StatePanel.show). A cell
    too long for its column ends in "…"; a row wider than `width` is cropped."""
    widths = column_widths(cols, width)
    out = Text(no_wrap=True, overflow="crop", end="")
    for i, row in enumerate(rows):
        if i:
            out.append("\n")
        line = Text(no_wrap=True, overflow="crop", end="")
        for j, (cell, col, w) in enumerate(zip(row, cols, widths)):
            if j:
                line.append(" ")
            text = Text(cell) if isinstance(cell, str) else cell.copy()
            if text.cell_len > w:
                text.truncate(w, overflow=text.overflow or "ellipsis")
            elif col.justify == "right":
                text.pad_left(w - text.cell_len)
            else:
                text.pad_right(w - text.cell_len)
            line.append_text(text)
        line.truncate(width)
        out.append_text(line)
    return out


def stack(lines: Iterable[Text]) -> Text:
    """Lines (each a one-line Text, or a grid) one under the other, as one Text."""
    out = Text(no_wrap=True, overflow="crop", end="")
    for i, line in enumerate(lines):
        if i:
            out.append("\n")
        out.append_text(line)
    return out
