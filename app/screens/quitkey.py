"""ctrl+c quits the console, on every screen: an operator's reflex for leaving a terminal
program, and what `sealtop run` does with it. Textual's own ctrl+c only hinted at another key.

The quit is the normal one (the engine stopped, the session completed), with the exit status
of an interrupt, 130, as SIGINT gives (README's exit table). Bound with priority, so it quits
from a prompt or the filter box too.
"""

from __future__ import annotations

from textual.binding import Binding

EXIT_INTERRUPTED = 130


def ctrl_c_binding() -> Binding:
    """The binding each screen lists (help shows it under the screen's keys)."""
    return Binding("ctrl+c", "interrupt", "Quit",
                   tooltip="Quit, as q does (exit status 130, an interrupt)",
                   show=False, priority=True, id="ctrl-c-quit")


class CtrlCQuits:
    """The screens' side of ctrl+c (mixed into each Screen class)."""

    app: object

    def action_interrupt(self) -> None:
        self.app.exit(return_code=EXIT_INTERRUPTED)  # type: ignore[attr-defined]
