"""Proofs table: one row per proof with per-partition mean timers, a stacked bar and ✓/✗.

A Line API widget (a ScrollView with `render_line`) rather than Textual's DataTable: DataTable
repaints every visible cell after any change, which at full engine load cost the console most of
its CPU and its input latency. This widget asks Textual to repaint only the lines whose proof
changed (or all of them when the order did), draws only the lines on screen, and does nothing at
all on a refresh tick where no proof changed. What it shows comes from app/widgets/proofrows.py.

Keys: arrows, j/k, page up/down, home/end (and g/G, except in replay where they seek) move
the cursor; Enter opens the proof detail screen;
`o`/`O` and `/` (dashboard bindings) sort and filter. With a mouse, a click on a header sorts by
that column and a click on the cursor row opens the detail screen.
"""

from __future__ import annotations

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.geometry import Region, Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from app.state import DashboardState, JobState
from app.widgets.base import set_virtual_size
from app.widgets.proofrows import (
    BAR_WIDTH,
    COLUMNS,
    DESCENDING_FIRST,
    MAX_ROWS,
    PAD,
    SORTABLE,
    Row,
    RowBuilder,
    fit_columns,
    ordered_jobs,
)
from app.widgets.render import Palette

__all__ = ["COLUMNS", "SORTABLE", "MAX_ROWS", "ProofsTable"]

HEADER_LINES = 1
Columns = tuple[tuple[str, str, int], ...]


def table_width(columns: Columns) -> int:
    return sum(w + 2 * PAD for _, _, w in columns)


def column_edges(columns: Columns) -> list[tuple[int, int, str]]:
    """(first cell, end cell, column key) of each column across the table's width."""
    edges, x = [], 0
    for key, _, width in columns:
        edges.append((x, x + width + 2 * PAD, key))
        x += width + 2 * PAD
    return edges


def line_text(cells: tuple[Text, ...] | list[Text], columns: Columns = COLUMNS) -> Text:
    """One table line: of the cells (one per column of COLUMNS) those of ``columns``, each
    padded (or cut) to its column's width, justified as it asks."""
    by_key = dict(zip((k for k, _, _ in COLUMNS), cells))
    line = Text(no_wrap=True, end="")
    for key, _, width in columns:
        cell = by_key.get(key, Text(""))
        if cell.cell_len > width:
            cell = cell.copy()
            cell.truncate(width)
        gap = " " * (width - cell.cell_len)
        line.append(" " * PAD)
        if cell.justify == "right":
            line.append(gap)
            line.append_text(cell)
        else:
            line.append_text(cell)
            line.append(gap)
        line.append(" " * PAD)
    return line


class ProofsTable(ScrollView, can_focus=True):
    """The proofs table, drawn line by line from the reducer's state."""

    ALLOW_MAXIMIZE = True
    COMPONENT_CLASSES = {"proofs--header", "proofs--cursor", "proofs--even-row", "proofs--odd-row"}
    DEFAULT_CSS = """
    ProofsTable {
        background: $surface;
        color: $foreground;
    }
    ProofsTable > .proofs--header {
        background: $panel;
        color: $foreground;
        text-style: bold;
    }
    ProofsTable > .proofs--even-row {
        background: $surface-lighten-1 50%;
    }
    ProofsTable:dark > .proofs--even-row {
        background: $surface-darken-1 40%;
    }
    ProofsTable > .proofs--cursor {
        background: $block-cursor-blurred-background;
        color: $block-cursor-blurred-foreground;
        text-style: $block-cursor-blurred-text-style;
    }
    ProofsTable:focus {
        background-tint: $foreground 5%;
    }
    ProofsTable:focus > .proofs--header {
        background-tint: $foreground 5%;
    }
    ProofsTable:focus > .proofs--cursor {
        background: $block-cursor-background;
        color: $block-cursor-foreground;
        text-style: $block-cursor-text-style;
    }
    """
    HELP_SECTION = "proofs table"  # its keys' section in the help screen
    BINDINGS = [
        Binding("up", "cursor(-1)", "Cursor up", show=False),
        Binding("down", "cursor(1)", "Cursor down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("k", "cursor(-1)", "Cursor up", show=False),
        Binding("j", "cursor(1)", "Cursor down", show=False),
        Binding("home", "edge(-1)", "First proof", show=False),
        Binding("end", "edge(1)", "Last proof", show=False),
        # vi's g/G; in replay these keys seek, so there the table lets them through
        Binding("g", "jump(-1)", "First proof", show=False),
        Binding("G", "jump(1)", "Last proof", show=False),
        # Shadows the dashboard's own Enter binding while the table has focus, as DataTable's
        # did, so the footer stays as it was; both open the proof detail screen.
        Binding("enter", "choose", "Proof detail", show=False),
    ]

    class HeaderClicked(Message):
        """The operator clicked a column header: sort by that column."""

        def __init__(self, key: str) -> None:
            super().__init__()
            self.key = key

    class RowChosen(Message):
        """The operator clicked the cursor row: open that proof's detail."""

        def __init__(self, job: int) -> None:
            super().__init__()
            self.job = job

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.sort_key = "job"
        self.sort_reverse = True  # newest first
        self.filter_text = ""
        self.total_matching = 0
        self.cursor_row = 0
        self._builder = RowBuilder()
        self._rows: list[Row] = []
        self._seen: tuple | None = None  # what the last show() drew from
        self._strips: dict[int, tuple[tuple, Strip]] = {}  # job -> (row stamp, unstyled strip)
        self._line_styles: tuple[Style, Style, Style, Style, Style] | None = None  # one render's
        self._set_columns(COLUMNS)

    def _set_columns(self, columns: Columns) -> None:
        """Draw these columns (the ones that fit the width) from now on."""
        self.columns = columns
        self._width = table_width(columns)
        self._edges = column_edges(columns)
        self._bar_width = dict((k, w) for k, _, w in columns).get("bar", BAR_WIDTH)
        labels = {k: label for k, label, _ in columns}
        header = line_text([Text(labels.get(k, "")) for k, _, _ in COLUMNS], columns).plain
        self._header = Strip([Segment(header)], self._width)  # styled by the CSS alone
        self._strips.clear()
        self._seen = None

    def _fit(self) -> None:
        """Choose the columns for the current width (called before drawing and on resize)."""
        width = self.scrollable_content_region.width or self.size.width
        if width > 0:
            columns = fit_columns(width)
            if columns != self.columns:
                self._set_columns(columns)
                set_virtual_size(self, Size(self._width, len(self._rows) + HEADER_LINES))
                self.refresh()

    def on_resize(self) -> None:
        self._fit()

    def column_edges(self) -> list[tuple[int, int, str]]:
        """(first cell, end cell, key) of each column drawn now."""
        return list(self._edges)

    def on_mount(self) -> None:
        self.virtual_size = Size(self._width, HEADER_LINES)

    # ---- sort and filter ------------------------------------------------------------------

    def sort_by(self, key: str) -> None:
        """Sort by a column; choosing the same column again reverses the order."""
        if key not in SORTABLE:
            return
        if key == self.sort_key:
            self.sort_reverse = not self.sort_reverse
        else:
            self.sort_key, self.sort_reverse = key, key in DESCENDING_FIRST
        self.refilter()

    def refilter(self) -> None:
        """Sort, filter or an operator action: the next show() recomputes the rows."""
        self._seen = None

    def cycle_sort(self) -> str:
        """Sort by the next sortable column; returns its key."""
        i = SORTABLE.index(self.sort_key) if self.sort_key in SORTABLE else 0
        self.sort_by(SORTABLE[(i + 1) % len(SORTABLE)])
        return self.sort_key

    def visible_jobs(self, state: DashboardState) -> list[JobState]:
        """Every proof that matches the filter, in the table's order."""
        return ordered_jobs(state, self.sort_key, self.sort_reverse, self.filter_text)

    # ---- model -> lines -------------------------------------------------------------------

    def show(self, state: DashboardState, pal: Palette) -> None:
        """Take the state's proofs (on the app's refresh tick); repaint only what changed.

        Every change to a proof bumps its version and versions only grow, so the count of
        proofs and the sum of their versions tell whether any proof changed without looking at
        the rows."""
        self._fit()
        seen = (id(state), len(state.jobs), sum(j.version for j in state.jobs.values()), id(pal),
                self.sort_key, self.sort_reverse, self.filter_text)
        if seen == self._seen:
            return
        self._seen = seen
        jobs = self.visible_jobs(state)
        self.total_matching = len(jobs)
        rows = self._builder.rows(jobs[:MAX_ROWS], pal, self._bar_width)
        old, self._rows = self._rows, rows
        if len(rows) != len(old):  # before the cursor scrolls, so that it may scroll that far
            set_virtual_size(self, Size(self._width, len(rows) + HEADER_LINES))
        # A cursor on the top row follows the top (the newest proof, like top's first line); a
        # cursor the operator moved stays on its proof as rows come and go.
        if 0 < self.cursor_row < len(old):
            current = old[self.cursor_row].job
            where = next((i for i, r in enumerate(rows) if r.job == current), None)
            if where is not None and where != self.cursor_row:
                self.cursor_row = where
                self._follow_cursor()
        self.cursor_row = min(self.cursor_row, max(0, len(rows) - 1))
        if [r.job for r in rows] != [r.job for r in old]:
            self.refresh()
            return
        first = int(self.scroll_y)
        for i, (new, was) in enumerate(zip(rows, old)):
            if new.stamp != was.stamp:
                self._refresh_row(i, first)

    def _refresh_row(self, index: int, first: int) -> None:
        """Mark one row's line for repaint, if it is on screen."""
        y = index - first + HEADER_LINES
        if HEADER_LINES <= y < self.size.height:
            self.refresh(Region(0, y, self.size.width, 1))

    def _row_strip(self, row: Row) -> Strip:
        """The row drawn across the table's full width, without row styles; cached per stamp."""
        hit = self._strips.get(row.job)
        if hit is not None and hit[0] == row.stamp:
            return hit[1]
        strip = Strip(list(line_text(row.cells, self.columns).render(self.app.console)),
                      self._width).simplify()
        if len(self._strips) > 4 * MAX_ROWS:
            self._strips.clear()
        self._strips[row.job] = (row.stamp, strip)
        return strip

    def render_lines(self, crop: Region) -> list[Strip]:
        """Work out the line styles once for the lines about to be drawn (the widget's own
        style and its component classes' cost a CSS lookup each), then draw them."""
        self._line_styles = self._styles()
        try:
            return super().render_lines(crop)
        finally:
            self._line_styles = None

    def _styles(self) -> tuple[Style, Style, Style, Style, Style]:
        """base, header, cursor, even row and odd row styles, as the CSS says now."""
        base = self.rich_style
        return (base, base + self.get_component_rich_style("proofs--header"),
                self.get_component_rich_style("proofs--cursor"),
                base + self.get_component_rich_style("proofs--even-row"),
                base + self.get_component_rich_style("proofs--odd-row"))

    def render_line(self, y: int) -> Strip:
        """Line y of the widget: the header, then the rows from the scroll position."""
        width = self.size.width
        scroll_x, scroll_y = self.scroll_offset
        base, header, cursor, even, odd = self._line_styles or self._styles()
        if y < HEADER_LINES:
            return self._header.apply_style(header).crop_extend(scroll_x, scroll_x + width, header)
        index = y - HEADER_LINES + scroll_y
        if not 0 <= index < len(self._rows):
            return Strip.blank(width, base)
        strip = self._row_strip(self._rows[index])
        if index == self.cursor_row:
            # The cursor's colours win over the cells' own, so the row reads as one bar.
            style = base + cursor
            strip = Strip(Segment.apply_style(strip, style, cursor), strip.cell_length)
        else:
            style = odd if index % 2 else even
            strip = strip.apply_style(style)
        return strip.crop_extend(scroll_x, scroll_x + width, style)

    # ---- cursor ---------------------------------------------------------------------------

    @property
    def row_count(self) -> int:
        return len(self._rows)

    def get_row_at(self, index: int) -> list[Text]:
        """The cells of the row at an index (as drawn)."""
        return list(self._rows[index].cells)

    def selected_job(self) -> int | None:
        """The proof under the cursor, if any."""
        if not self._rows:
            return None
        return self._rows[min(self.cursor_row, len(self._rows) - 1)].job

    def move_cursor(self, row: int, animate: bool = False) -> None:
        """Put the cursor on a row (clamped), scrolling it into view."""
        if not self._rows:
            return
        row = max(0, min(row, len(self._rows) - 1))
        if row == self.cursor_row:
            return
        first = int(self.scroll_y)
        was, self.cursor_row = self.cursor_row, row
        self._refresh_row(was, first)
        self._refresh_row(row, first)
        self._follow_cursor()

    def _page_rows(self) -> int:
        return max(1, self.scrollable_content_region.height - HEADER_LINES)

    def _follow_cursor(self) -> None:
        """Scroll so that the cursor row is on screen."""
        top = int(self.scroll_y)
        page = self._page_rows()
        if self.cursor_row < top:
            self.scroll_to(y=self.cursor_row, animate=False)
        elif self.cursor_row >= top + page:
            self.scroll_to(y=self.cursor_row - page + 1, animate=False)

    def action_cursor(self, delta: int) -> None:
        self.move_cursor(self.cursor_row + delta)

    def action_page(self, direction: int) -> None:
        self.move_cursor(self.cursor_row + direction * self._page_rows())

    def action_edge(self, direction: int) -> None:
        self.move_cursor(0 if direction < 0 else len(self._rows) - 1)

    def action_jump(self, direction: int) -> None:
        self.action_edge(direction)

    def check_action(self, action: str, parameters: tuple) -> bool | None:
        if action == "jump":
            return getattr(self.app, "mode", "") != "replay"
        return True

    def action_choose(self) -> None:
        job = self.selected_job()
        if job is not None:
            self.post_message(self.RowChosen(job))
        else:
            self.app.notify("no proof selected", severity="warning")

    # ---- mouse ----------------------------------------------------------------------------

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None:
            return
        if offset.y < HEADER_LINES:
            x = offset.x + int(self.scroll_x)
            key = next((k for a, b, k in self._edges if a <= x < b), None)
            if key is not None:
                self.post_message(self.HeaderClicked(key))
            return
        index = offset.y - HEADER_LINES + int(self.scroll_y)
        if not 0 <= index < len(self._rows):
            return
        if index == self.cursor_row:
            self.post_message(self.RowChosen(self._rows[index].job))
        else:
            self.move_cursor(index)

