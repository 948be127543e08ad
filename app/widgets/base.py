"""StatePanel: a Static that renders itself from the DashboardState.

Panels are redrawn by the app's refresh timer (not per event), which keeps the console cheap at
full engine load; they also redraw on resize because their sparklines fit their width.
"""

from __future__ import annotations

from typing import Any

from rich.console import RenderableType
from textual.widgets import Static

from app.state import DashboardState
from app.widgets.render import Palette


class StatePanel(Static):
    """Base for dashboard panels; subclasses implement `render_state`."""

    ALLOW_MAXIMIZE = True
    can_focus = False

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._state: DashboardState | None = None
        self._pal = Palette()
        self._lines = -2  # line count of the last renderable (auto-height panels)

    def show(self, state: DashboardState, pal: Palette) -> None:
        """Redraw from a state (the app calls this on its refresh tick)."""
        self._state, self._pal = state, pal
        renderable = self.render_state(state, pal, max(self.content_size.width, 20))
        # Panels have fixed sizes, so a redraw needs no layout pass (a layout pass makes every
        # widget, the proofs table included, re-render). Auto-height panels (the header) ask for
        # one only when their line count changes.
        lines = self._line_count(renderable)
        self.update(renderable, layout=self.AUTO_HEIGHT and lines != self._lines)
        self._lines = lines

    AUTO_HEIGHT = False

    @staticmethod
    def _line_count(renderable: RenderableType) -> int:
        renderables = getattr(renderable, "renderables", None)
        return len(renderables) if renderables is not None else -1

    def on_resize(self) -> None:
        if self._state is not None:
            self.show(self._state, self._pal)

    def render_state(self, state: DashboardState, pal: Palette, width: int) -> RenderableType:
        """The panel's content for ``state`` at ``width`` columns (every panel overrides it)."""
        raise NotImplementedError(f"{type(self).__name__} must implement render_state")
