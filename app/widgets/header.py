"""The dashboard header: engine state, backend, GPUs, knobs, throughput, REC/REPLAY badges."""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text

from app.knobs import header_text, knob_names
from app.state import SHOWN_CONFIG, DashboardState, find_config_value
from app.widgets.base import StatePanel
from app.widgets.render import Palette, stack


@dataclass
class HeaderContext:
    """What the header shows beyond the state: mode badges and console settings."""

    mode: str = "live"  # live | replay | unavailable
    recording: str | None = None  # path of the session being recorded
    readonly: bool = False
    refresh: float = 0.5
    replay: str = ""  # e.g. "▶ ×8  2.50/5.70 s"
    notice: str = ""  # e.g. "engine unavailable: ..."
    uptime: float = 0.0  # seconds since the console started


Segment = tuple[int, Text]  # (priority: lower is kept longer, the text)


def fit_line(segments: list[Segment], width: int, sep: str = " │ ", lead: Text | None = None) -> Text:
    """One line of the segments that fit ``width`` cells, in their order: the segments of the
    lowest priority go first, and no segment is ever cut (so the header never shows "…")."""
    kept = list(segments)

    def build(parts: list[Segment]) -> Text:
        out = lead.copy() if lead is not None else Text()
        for i, (_, seg) in enumerate(parts):
            if i:
                out.append(sep, style="dim")
            out.append_text(seg)
        return out

    line = build(kept)
    while line.cell_len > width and kept:
        worst = max(range(len(kept)), key=lambda i: (kept[i][0], i))
        if kept[worst][0] == 0:
            break  # the essentials stay, whatever the width
        kept.pop(worst)
        line = build(kept)
    line.no_wrap = True
    line.overflow = "crop"
    return line


class HeaderBar(StatePanel):
    """Two lines: status and knobs, each fitted to the width by dropping what matters least."""

    ALLOW_MAXIMIZE = False
    AUTO_HEIGHT = True
    context = HeaderContext()

    def render_state(self, state: DashboardState, pal: Palette, width: int) -> Text:
        width = self.content_size.width or width
        ctx = self.context
        lead = Text()
        lead.append(" sealtop ", style="bold reverse")
        lead.append(" ")
        eng = "unavailable" if ctx.mode == "unavailable" else state.engine_state
        style = {"running": pal.ok, "paused": pal.warn, "starting": pal.warn}.get(eng, pal.bad)
        segs: list[Segment] = [(0, Text(f"● {eng.upper()}", style=f"bold {style}"))]
        if ctx.mode == "replay":
            badge = Text(" REPLAY ", style="bold reverse")
            badge.append(f" {ctx.replay}", style="bold")
            segs.append((0, badge))
        if ctx.recording:
            segs.append((1, Text(" ● REC ", style=f"bold reverse {pal.bad}")))
        # in replay the badge carries the clock; t is then the first thing to go
        if ctx.mode == "live" and not state.started:  # before the engine's first event
            segs.append((0, Text(f"up {ctx.uptime:.0f} s")))
        else:
            segs.append((2 if ctx.mode == "replay" else 0, Text(f"t {state.t:.1f} s")))
        segs.append((0, Text(f"{state.throughput():.1f} proofs/min (60 s)", style=f"bold {pal.accent}")))
        done = Text(f"{state.proofs_done} proofs")
        if state.proofs_failed:
            done.append(f" ({state.proofs_failed} ✗)", style=pal.bad)
        if state.proofs_cancelled:
            done.append(f" ({state.proofs_cancelled} cancelled)", style=pal.warn)
        segs.append((1, done))
        eta = state.eta_s()
        if eta is not None:
            n = len(state.active)
            segs.append((2, Text(f"ETA {eta / 60:.1f} min ({n} left)" if eta >= 60
                                 else f"ETA {eta:.0f} s ({n} left)")))
        segs.append((3, Text(f"backend {state.backend if state.started else '–'}")))
        if state.gpus:
            names = sorted({g.name for g in state.gpus.values()})
            segs.append((4, Text(f"{len(state.gpus)}× {', '.join(names)}")))
        else:
            segs.append((4, Text("no GPU", style=pal.dim)))
        status = fit_line(segs, width, lead=lead)
        ks: list[Segment] = [(0, Text(header_text(name, state.knobs), style="bold"))
                             for name in knob_names()]
        if ctx.readonly:
            ks.insert(0, (0, Text("READONLY", style=f"bold {pal.warn}")))
        for key in SHOWN_CONFIG:
            v = find_config_value(state.config, key)
            if v is not None and key not in ("backend",):
                ks.append((5, Text(f"{key.replace('_per_device', '').replace('_', ' ')} {v}",
                                   style=pal.dim)))
        ks.append((2, Text(f"refresh {ctx.refresh:g} s", style=pal.dim)))
        knobs = fit_line(ks, width, sep="  ", lead=Text(" knobs: ", style=pal.dim))
        lines = [status, knobs]
        if ctx.notice:  # one line whatever its length: a wrapped notice pushed the panels
            notice = Text(f" {ctx.notice}", style=f"bold {pal.warn}")  # off an 80x24 screen
            notice.truncate(width, overflow="ellipsis")
            lines.append(notice)
        return stack(lines)
