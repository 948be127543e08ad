"""Small rendering helpers shared by the panels: palette, sparklines and bars.

They turn numbers into Rich Text. The palette comes from the active Textual theme's variables
(themes/), so a live theme switch recolours everything; in the no-colour theme, styles collapse
to bold/reverse and stages are told apart by glyph.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Sequence

from rich.text import Text

SPARK = "▁▂▃▄▅▆▇█"
# Glyphs for stacked-bar segments and Gantt stages: distinct without colour.
SEG_GLYPH = {"queue": "·", "synth": "▒", "channel": "░", "gpu": "█", "finalize": "▓", "dealloc": "▁"}
STAGE_GLYPH = {
    "queued": "·",
    "synthesizing": "▒",
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
    def from_theme(cls, theme) -> "Palette":
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
