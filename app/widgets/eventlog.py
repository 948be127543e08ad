"""Event log: the reducer's log (state.log), scrollable and searchable.

Drawn from the state, so that seeking back in a replay rewinds the log too. A Line API widget:
it draws only the lines on screen. It follows the newest line (like `tail -f`) until the operator
scrolls up, and follows again once they are back at the bottom (End or G). With the log focused,
`/` searches: only the lines that contain the text are shown, and Escape clears it.
"""

from __future__ import annotations

from rich.segment import Segment
from rich.text import Text
from textual.binding import Binding
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

from app.consoleapp import console_of
from app.state import DashboardState, LogEntry
from app.widgets.base import set_virtual_size
from app.widgets.render import Palette

STYLES = ("error", "warn", "knob", "info")


def log_line(e: LogEntry, pal: Palette) -> Text:
    """One log entry as drawn: time, level, text."""
    styles = {"error": pal.bad, "warn": pal.warn, "knob": pal.accent, "info": ""}
    out = Text(no_wrap=True, end="")
    out.append(f"{e.t:8.2f} s ", style=pal.dim)
    out.append(f"{e.level:<5} ", style=styles.get(e.level, ""))
    out.append(e.text, style=styles.get(e.level, "") if e.level != "info" else "")
    return out


class EventLog(ScrollView, can_focus=True):
    """The log, newest at the bottom; arrows, j/k, page keys and home/end scroll it."""

    ALLOW_MAXIMIZE = True
    HELP_SECTION = "event log"  # its keys' section in the help screen
    BINDINGS = [
        Binding("up,k", "scroll_lines(-1)", "Scroll up", show=False),
        Binding("down,j", "scroll_lines(1)", "Scroll down", show=False),
        Binding("pageup", "scroll_lines(-10)", "Page up", show=False),
        Binding("pagedown", "scroll_lines(10)", "Page down", show=False),
        Binding("home", "log_edge(-1)", "Oldest line", show=False),
        Binding("end", "log_edge(1)", "Newest line (follow)", show=False),
        Binding("g", "log_jump(-1)", "Oldest line", show=False),
        Binding("G", "log_jump(1)", "Newest line (follow)", show=False),
        Binding("slash", "search", "Search the log", show=False),
    ]

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.search_text = ""
        self.follow = True
        self._entries: list[LogEntry] = []
        self._pal = Palette()
        self._seen: tuple | None = None
        self._cache: dict[int, Strip] = {}

    def show(self, state: DashboardState, pal: Palette) -> None:
        """Take the state's log (on the app's refresh tick); repaint when it changed."""
        log = state.log
        last = log[-1] if log else None
        seen = (id(state), len(log), id(last), id(pal), self.search_text)
        if seen == self._seen:
            return
        self._seen, self._pal = seen, pal
        needle = self.search_text.lower()
        entries = list(log)
        if needle:
            entries = [e for e in entries if needle in e.text.lower() or needle in e.level]
        self._entries = entries
        self._cache.clear()
        # no horizontal scrolling (its bar would take a line): a long line is cut at the edge,
        # and the maximized log (5) shows more of it
        set_virtual_size(self, Size(0, len(entries)))
        if self.follow:
            self.scroll_end(animate=False, immediate=True, x_axis=False)
        self.refresh()

    def on_resize(self) -> None:
        # the first layout can size the log after show() scrolled it (a replay opened at its end
        # draws the whole log at once): a following log goes back to its newest line
        if self.follow:
            self.scroll_end(animate=False, immediate=True, x_axis=False)

    def watch_scroll_y(self, old: float, new: float) -> None:
        super().watch_scroll_y(old, new)
        self.follow = new >= self.max_scroll_y

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        width = self.size.width
        base = self.rich_style
        index = y + scroll_y
        if not self._entries and y == 0:
            words = f"no lines match “{self.search_text}”" if self.search_text else "no events yet"
            return Strip([Segment(words, base + self.app.console.get_style("dim"))]).crop_extend(
                0, width, base)
        if not 0 <= index < len(self._entries):
            return Strip.blank(width, base)
        strip = self._cache.get(index)
        if strip is None:
            strip = Strip(list(log_line(self._entries[index], self._pal).render(self.app.console)))
            self._cache[index] = strip
        return strip.apply_style(base).crop_extend(scroll_x, scroll_x + width, base)

    # ---- keys -----------------------------------------------------------------------------

    def action_scroll_lines(self, n: int) -> None:
        self.scroll_to(y=max(0, self.scroll_y + n), animate=False)

    def action_log_edge(self, direction: int) -> None:
        if direction < 0:
            self.scroll_home(animate=False)
        else:
            self.scroll_end(animate=False)
            self.follow = True

    def action_log_jump(self, direction: int) -> None:
        self.action_log_edge(direction)

    def check_action(self, action: str, parameters: tuple) -> bool | None:
        if action == "log_jump":
            return getattr(self.app, "mode", "") != "replay"  # replay's g/G seek
        return True

    def action_search(self) -> None:
        """Ask for a search text (an empty answer clears the search)."""
        from app.screens.prompt import PromptScreen

        def done(answer: str | None) -> None:
            if answer is not None:
                self.set_search(answer)

        self.app.push_screen(PromptScreen("search the event log (empty: show all)",
                                          "text or level", self.search_text), done)

    def set_search(self, text: str) -> None:
        self.search_text = text.strip()
        self.follow = True
        self._seen = None
        console_of(self).request_render()
        title = "5 event log" + (f"  search “{self.search_text}”" if self.search_text else "")
        self.border_title = title
