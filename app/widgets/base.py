"""StatePanel: a Static that renders itself from the DashboardState.

Panels are redrawn by the app's refresh timer (not per event), which keeps the console cheap at
full engine load; they also redraw on resize because their sparklines fit their width.
"""

from __future__ import annotations

from typing import Any

from rich.console import RenderableType
from rich.text import Text
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.widget import Widget
from textual.widgets import Static

from app.state import DashboardState
from app.widgets.render import Palette


def set_virtual_size(view: ScrollView, size: Size) -> None:
    """Give a fixed-size scroll view (the proofs table, the event log) a new scrollable size
    without a layout pass of the whole screen.

    Textual's ``virtual_size`` asks for a layout, and a layout re-renders every widget on the
    screen: at 200x60 that was most of a refresh tick's cost and of a key's latency, paid each
    time a proof or a log line was added. The view's own region does not depend on what it
    scrolls over, so only its scrollbars need updating; if one of them appears or goes, that
    change asks for the layout itself (show_*_scrollbar are layout reactives)."""
    if size == view.virtual_size:
        return
    if not view.size:  # not laid out yet: the coming first layout sizes it anyway
        view.virtual_size = size
        return
    view.set_reactive(Widget.virtual_size, size)
    view._scroll_update(size)
    view.refresh()


class StatePanel(Static):
    """Base for dashboard panels; subclasses implement `render_state`."""

    ALLOW_MAXIMIZE = True
    can_focus = False

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._state: DashboardState | None = None
        self._pal = Palette()
        self._lines = -2  # line count of the last renderable (auto-height panels)
        self._last: Text | None = None  # the last Text drawn

    def show(self, state: DashboardState, pal: Palette) -> None:
        """Redraw from a state (the app calls this on its refresh tick)."""
        self._state, self._pal = state, pal
        renderable = self.render_state(state, pal, max(self.content_size.width, 20))
        # Panels have fixed sizes, so a redraw needs no layout pass (a layout pass makes every
        # widget, the proofs table included, re-render). Auto-height panels (the header) ask for
        # one only when their line count changes.
        # A panel drawn as one Text (app/widgets/render.py's grid and stack) that reads as it
        # did is not repainted at all.
        if isinstance(renderable, Text) and renderable == self._last:
            return
        self._last = renderable if isinstance(renderable, Text) else None
        lines = self._line_count(renderable)
        self.update(renderable, layout=self.AUTO_HEIGHT and lines != self._lines)
        self._lines = lines

    AUTO_HEIGHT = False

    @staticmethod
    def _line_count(renderable: RenderableType) -> int:
        if isinstance(renderable, Text):
            return renderable.plain.count("\n") + 1
        renderables = getattr(renderable, "renderables", None)
        return len(renderables) if renderables is not None else -1

    def on_resize(self) -> None:
        if self._state is not None:
            self.show(self._state, self._pal)

    def render_state(self, state: DashboardState, pal: Palette, width: int) -> RenderableType:
        """The panel's content for ``state`` at ``width`` columns (every panel overrides it)."""
        raise NotImplementedError(f"{type(self).__name__} must implement render_state")
