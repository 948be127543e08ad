"""What the console asks of its mode's source, typed once: the live engine (app.live_source, also
behind `sealtop attach` and the farm console), a recorded session's replay (app.replay) and two
sessions compared (app.screens.compare).

The App (app.console) holds one ConsoleSource and calls these methods on it directly; a source
overrides the ones its mode has and inherits the answer of a mode without them (no clock to
tick, no control bar, nothing to record). What only one mode has (the live engine's tuning, the
replay's controller) the App reaches through that mode's own class.

Plain Python: Textual is named only for the type of a first screen.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from app.state import DashboardState

if TYPE_CHECKING:
    from textual.screen import Screen

# A palette command a mode adds: (title, help, what it does).
Command = tuple[str, str, Callable[[], object]]


class ConsoleSource:
    """One mode's source of what the console shows and the keys it offers."""

    # The keys in the dashboard's ``app.`` namespace this mode may offer (SealtopApp.check_action).
    ACTIONS: frozenset[str] = frozenset()
    # Seconds between the mode's clock ticks (tick); 0: the mode has no clock.
    TICK_S: float = 0.0

    state: DashboardState  # what the dashboard shows

    def header_mode(self) -> str:
        """The mode the header names (live, unavailable, replay, compare)."""
        raise NotImplementedError

    def offers(self, action: str) -> bool | None:
        """True where the key works now, None where it is off for now (shown disabled), False
        where this mode never offers it."""
        return False

    def commands(self) -> list[Command]:
        """The mode's own palette commands."""
        return []

    def first_screen(self) -> Screen | None:
        """The screen the console opens on, where the mode has its own (else the dashboard)."""
        return None

    def start(self) -> None:
        """Once the console is mounted."""

    def shutdown(self) -> None:
        """However the console ends: stop what the mode runs."""

    def refresh(self) -> bool:
        """The console's refresh tick; True where the header must be redrawn though no event
        came (a clock that runs while the engine prepares)."""
        return False

    def tick(self) -> tuple[bool, bool]:
        """The mode's clock, every TICK_S: (the state changed, the control bar moved)."""
        return False, False

    def say(self, level: str, text: str) -> bool:
        """Put a console line into the mode's stream (recorded, replayed); False where the mode
        has no stream to put it in, and the App folds it into the shown state itself."""
        return False

    def header(self) -> str:
        """The header's mode-specific line (the replay's clock and speed)."""
        return ""

    def recording(self) -> str | None:
        """The file being recorded to, if any."""
        return None

    def bar(self) -> str:
        """The control bar under the dashboard (the replay's)."""
        return ""

    def seek(self, where: str) -> bool:
        """Seek to a time ("12.5", "50%", "start", "end"); False where the mode cannot."""
        return False

    def thread_ids(self) -> list[int]:
        """Kernel ids of the threads that carry the mode's stream to the UI."""
        return []
