"""The dashboard header: engine state, backend, GPUs, knobs, throughput, REC/REPLAY badges."""

from __future__ import annotations

from dataclasses import dataclass

from rich.console import Group
from rich.text import Text

from app.state import SHOWN_CONFIG, DashboardState, find_config_value, fmt_bytes
from app.widgets.base import StatePanel
from app.widgets.render import Palette


@dataclass
class HeaderContext:
    """What the header shows beyond the state: mode badges and console settings."""

    mode: str = "live"  # live | replay | unavailable
    recording: str | None = None  # path of the session being recorded
    readonly: bool = False
    refresh: float = 0.5
    replay: str = ""  # e.g. "▶ ×8  2.50/5.70 s"
    notice: str = ""  # e.g. "engine unavailable: ..."


class HeaderBar(StatePanel):
    """Two lines: status and knobs."""

    ALLOW_MAXIMIZE = False
    AUTO_HEIGHT = True
    context = HeaderContext()

    def render_state(self, state: DashboardState, pal: Palette, width: int) -> Group:
        ctx = self.context
        s = Text()
        s.append(" sealtop ", style="bold reverse")
        eng = "unavailable" if ctx.mode == "unavailable" else state.engine_state
        style = {"running": pal.ok, "paused": pal.warn, "starting": pal.warn}.get(eng, pal.bad)
        s.append(f" ● {eng.upper()} ", style=f"bold {style}")
        s.append(f"│ backend {state.backend if state.started else '–'} ")
        if state.gpus:
            names = sorted({g.name for g in state.gpus.values()})
            s.append(f"│ {len(state.gpus)}× {', '.join(names)} ")
        else:
            s.append("│ no GPU ", style=pal.dim)
        s.append("│ ")
        s.append(f"{state.throughput():.1f} proofs/min", style=f"bold {pal.accent}")
        s.append(f" │ {state.proofs_done} proofs")
        if state.proofs_failed:
            s.append(f" ({state.proofs_failed} ✗)", style=pal.bad)
        if state.proofs_cancelled:
            s.append(f" ({state.proofs_cancelled} cancelled)", style=pal.warn)
        s.append(f" │ t {state.t:.2f} s ")
        if ctx.mode == "replay":
            s.append(" REPLAY ", style="bold reverse")
            s.append(f" {ctx.replay} ")
        if ctx.recording:
            s.append(" ● REC ", style=f"bold reverse {pal.bad}")
        k = Text(" knobs: ", style=pal.dim)
        kn = state.knobs
        k.append(f"workers {kn.get('partition_workers', '–')}", style="bold")
        k.append(f"  channel {kn.get('gpu_channel_capacity', '–')}", style="bold")
        budget = state.memory_budget
        k.append(f"  budget {fmt_bytes(budget) if budget else '–'}", style="bold")
        for key in SHOWN_CONFIG:
            v = find_config_value(state.config, key)
            if v is not None and key not in ("backend",):
                k.append(f"  {key.replace('_per_device', '').replace('_', ' ')} {v}", style=pal.dim)
        k.append(f"  │ refresh {ctx.refresh:g} s", style=pal.dim)
        if ctx.readonly:
            k.append("  READONLY ", style=f"bold {pal.warn}")
        lines = [s, k]
        if ctx.notice:
            lines.append(Text(f" {ctx.notice}", style=f"bold {pal.warn}"))
        return Group(*lines)
