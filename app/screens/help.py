"""Help: the key bindings of the app and of the screen it was opened over, in this mode.

Built from the Binding objects themselves (the screen's, its widgets' and the app's), so a
binding cannot exist without being listed; a key the current mode does not offer (tuning in
replay or read-only, replay keys live) is left out, one that is only switched off for now is
marked so. The help text is a binding's tooltip
(the footer shows its short description).
"""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import Static

from app.screens.quitkey import CtrlCQuits, ctrl_c_binding


def binding_rows(app, screen: Screen | None) -> list[tuple[str, str, str, str]]:
    """(section, keys, description, availability) for each of our bindings, de-duplicated.

    The screen's, its widgets' that name a HELP_SECTION (the proofs table's cursor keys, the
    event log's scrolling and search), then the app's. In a widget's section, keys that do the
    same thing share a row ("↑, k  Cursor up")."""
    rows: list[tuple[str, str, str, str]] = []
    sources: list[tuple[str, object]] = [("global", app)]
    widgets: list[tuple[str, object]] = []
    screen_section = getattr(screen, "HELP_SECTION", type(screen).__name__)
    if screen is not None:
        seen: set[type] = set()
        for w in screen.walk_children():
            section = type(w).__dict__.get("HELP_SECTION")
            if section and type(w) not in seen:
                seen.add(type(w))
                widgets.append((section, w))
        sources[:0] = [(screen_section, screen), *widgets]
    checked = {id(screen)} | {id(w) for _, w in widgets}
    merged: dict[tuple[str, str, str], int] = {}  # (section, description, note) -> row, widgets'
    for section, node in sources:
        for b in getattr(type(node), "BINDINGS", []):
            if not isinstance(b, Binding):
                continue
            keys = ", ".join(app.get_key_display(Binding(k.strip(), b.action))
                             for k in b.key.split(","))
            note = ""
            check = getattr(node, "check_action", None)
            if check is not None and id(node) in checked:
                try:
                    ok = check(b.action.split("(")[0], ())
                except Exception:  # noqa: BLE001 - availability is only a hint
                    ok = True
                if ok is False:
                    continue  # a key this mode does not have is not listed
                note = "" if ok else "disabled now"
            desc = b.tooltip or b.description or b.action
            if node is not screen and node is not app:
                if any(r[0] == screen_section and r[1] == keys and r[2] == desc for r in rows):
                    continue  # the screen's own binding already says it (Enter: proof detail)
                at = merged.get((section, desc, note))
                if at is not None:
                    rows[at] = (section, f"{rows[at][1]}, {keys}", desc, note)
                    continue
                merged[(section, desc, note)] = len(rows)
            rows.append((section, keys, desc, note))
    rows.append(("global", app.get_key_display(Binding("ctrl+p", "command_palette")),
                 "Command palette (every action, knobs, themes)", ""))
    return rows


class HelpScreen(CtrlCQuits, ModalScreen[None]):
    """A modal listing every binding; any of escape, q, ? or F1 closes it."""

    BINDINGS = [
        Binding("escape,q,question_mark,f1", "dismiss_help", "Close help", id="help-close"),
        ctrl_c_binding(),
    ]

    def __init__(self, over: Screen | None) -> None:
        super().__init__()
        self.over = over

    def compose(self) -> ComposeResult:
        rows = binding_rows(self.app, self.over)
        t = Table(title="sealtop keys", expand=True, show_lines=False, title_style="bold")
        t.add_column("where", style="dim", no_wrap=True)
        t.add_column("key", style="bold", no_wrap=True)
        t.add_column("does")
        notes = any(note for *_, note in rows)  # the column only when a key is off for now
        if notes:
            t.add_column("", style="dim")
        for section, keys, desc, note in rows:
            t.add_row(section, keys, desc, *([note] if notes else []))
        with VerticalScroll(id="help-box"):
            yield Static(t, id="help-table")
            yield Static(Text("The mouse is optional: everything has a key. "
                              "Click a column header to sort by it.", style="dim"))

    def action_dismiss_help(self) -> None:
        self.dismiss(None)
