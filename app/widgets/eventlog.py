"""Event log: the newest entries of the reducer's log that fit the panel."""

from __future__ import annotations

from rich.text import Text

from app.state import DashboardState
from app.widgets.base import StatePanel
from app.widgets.render import Palette


class EventLog(StatePanel):
    """Rendered from state.log, so that seeking back in a replay rewinds the log too."""

    def render_state(self, state: DashboardState, pal: Palette, width: int) -> Text:
        rows = max(1, self.content_size.height or 6)
        styles = {"error": pal.bad, "warn": pal.warn, "knob": pal.accent, "info": ""}
        out = Text(no_wrap=True, overflow="ellipsis")
        entries = list(state.log)[-rows:]
        for i, e in enumerate(entries):
            out.append(f"{e.t:8.2f}s ", style=pal.dim)
            out.append(f"{e.level:<5} ", style=styles.get(e.level, ""))
            out.append(e.text, style=styles.get(e.level, "") if e.level != "info" else "")
            if i < len(entries) - 1:
                out.append("\n")
        if not entries:
            out.append("no events yet", style=pal.dim)
        return out
