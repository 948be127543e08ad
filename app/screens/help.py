"""Help: the key bindings of the app and of the screen it was opened over, in this mode.

Built from the Binding objects themselves, so a binding cannot exist without being listed; a
key the current mode does not offer (tuning in replay or read-only, replay keys live) is left
out, one that is only switched off for now is marked so. The help text is a binding's tooltip
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


def binding_rows(app, screen: Screen | None) -> list[tuple[str, str, str, str]]:
    """(section, keys, description, availability) for each of our bindings, de-duplicated."""
    rows: list[tuple[str, str, str, str]] = []
    sources: list[tuple[str, object]] = [("global", app)]
    if screen is not None:
        sources.insert(0, (getattr(screen, "HELP_SECTION", type(screen).__name__), screen))
    for section, node in sources:
        for b in getattr(type(node), "BINDINGS", []):
            if not isinstance(b, Binding):
                continue
            keys = ", ".join(app.get_key_display(Binding(k.strip(), b.action))
                             for k in b.key.split(","))
            note = ""
            check = getattr(node, "check_action", None)
            if check is not None and node is screen:
                try:
                    ok = check(b.action.split("(")[0], ())
                except Exception:  # noqa: BLE001 - availability is only a hint
                    ok = True
                if ok is False:
                    continue  # a key this mode does not have is not listed
                note = "" if ok else "disabled now"
            rows.append((section, keys, b.tooltip or b.description or b.action, note))
    rows.append(("global", app.get_key_display(Binding("ctrl+p", "command_palette")),
                 "Command palette (every action, knobs, themes)", ""))
    return rows


class HelpScreen(ModalScreen[None]):
    """A modal listing every binding; any of escape, q, ? or F1 closes it."""

    BINDINGS = [
        Binding("escape,q,question_mark,f1", "dismiss_help", "Close help", id="help-close"),
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
        t.add_column("", style="dim")
        for section, keys, desc, note in rows:
            t.add_row(section, keys, desc, note)
        with VerticalScroll(id="help-box"):
            yield Static(t, id="help-table")
            yield Static(Text("The mouse is optional: everything has a key. "
                              "Click a column header to sort by it.", style="dim"))

    def action_dismiss_help(self) -> None:
        self.dismiss(None)
