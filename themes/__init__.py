"""sealtop's themes: dark, light and a high-contrast/no-colour theme.

Each is a Textual Theme. Besides the usual colours, `variables` carries the colours of the
pipeline stages (`stage-<name>`) and of the stacked-bar segments (`seg-<name>`), so that widgets
colour their Rich renderables from the active theme and a live theme switch repaints them. The
mono theme sets them to the foreground: widgets then tell stages apart by glyph, not colour.
"""

from __future__ import annotations

from textual.theme import Theme

STAGE_NAMES = ("queued", "synthesizing", "waiting_gpu", "gpu", "finalizing", "deallocating",
               "done", "failed", "synthesized")
SEGMENTS = ("queue", "synth", "channel", "gpu", "finalize", "dealloc")


def _vars(stages: list[str], segs: list[str], **extra: str) -> dict[str, str]:
    v = {f"stage-{n}": c for n, c in zip(STAGE_NAMES, stages)}
    v.update({f"seg-{n}": c for n, c in zip(SEGMENTS, segs)})
    v.update(extra)
    return v


DARK = Theme(
    name="sealtop-dark",
    primary="#5fafff",
    secondary="#87d7af",
    accent="#ffaf5f",
    warning="#ffd75f",
    error="#ff5f5f",
    success="#5fd75f",
    foreground="#d0d0d0",
    background="#101418",
    surface="#161c22",
    panel="#1e2630",
    dark=True,
    variables=_vars(
        ["#808080", "#87afff", "#ffd75f", "#5fd75f", "#d787ff", "#5fafaf", "#a8a8a8", "#ff5f5f",
         "#5f87af"],
        ["#6c6c6c", "#87afff", "#ffd75f", "#5fd75f", "#d787ff", "#5fafaf"],
        mono="no",
    ),
)

LIGHT = Theme(
    name="sealtop-light",
    primary="#005fd7",
    secondary="#008787",
    accent="#d75f00",
    warning="#af8700",
    error="#d70000",
    success="#008700",
    foreground="#1c1c1c",
    background="#fafafa",
    surface="#f0f0f0",
    panel="#e4e4e4",
    dark=False,
    variables=_vars(
        ["#808080", "#005fd7", "#af8700", "#008700", "#8700af", "#008787", "#585858", "#d70000",
         "#5f5faf"],
        ["#9e9e9e", "#005fd7", "#af8700", "#008700", "#8700af", "#008787"],
        mono="no",
    ),
)

MONO = Theme(
    name="sealtop-mono",
    primary="#ffffff",
    secondary="#ffffff",
    accent="#ffffff",
    warning="#ffffff",
    error="#ffffff",
    success="#ffffff",
    foreground="#ffffff",
    background="#000000",
    surface="#000000",
    panel="#000000",
    dark=True,
    luminosity_spread=0.0,
    variables=_vars(["#ffffff"] * len(STAGE_NAMES), ["#ffffff"] * len(SEGMENTS), mono="yes"),
)

THEMES: tuple[Theme, ...] = (DARK, LIGHT, MONO)
THEME_NAMES = tuple(t.name for t in THEMES)
DEFAULT_THEME = DARK.name
