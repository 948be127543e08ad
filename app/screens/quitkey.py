"""ctrl+c quits the console, on every screen: an operator's reflex for leaving a terminal
program, and what `sealtop run` does with it. Textual's own ctrl+c only hinted at another key.

The quit is the normal one (the engine stopped, the session completed), with the exit status
of an interrupt, 130, as SIGINT gives (README's exit table). Bound with priority, so it quits
from a prompt or the filter box too.
"""

from __future__ import annotations

from typing import cast

from textual.binding import Binding
from textual.message_pump import MessagePump

from app.consoleapp import ConsoleApp, console_of

EXIT_INTERRUPTED = 130


def ctrl_c_binding() -> Binding:
    """The binding each screen lists (help shows it under the screen's keys)."""
    return Binding("ctrl+c", "interrupt", "Quit",
                   tooltip="Quit, as q does (exit status 130, an interrupt)",
                   show=False, priority=True, id="ctrl-c-quit")


class CtrlCQuits:
    """The screens' side of ctrl+c (mixed into each Screen class), and their typed way to the
    console App."""

    @property
    def console(self) -> ConsoleApp:
        """The console this screen is shown in."""
        return console_of(self._screen())

    def action_interrupt(self) -> None:
        self._screen().app.exit(return_code=EXIT_INTERRUPTED)

    def _screen(self) -> MessagePump:
        return cast(MessagePump, self)  # mixed into Screen classes only
