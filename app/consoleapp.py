"""What the console's screens and widgets ask of the App beyond Textual's own App: typed once, so
the screens reach the console through it without importing app.console (which opens them).

SealtopApp (app.console) is checked against it by mypy where it is defined.
"""

from __future__ import annotations

from typing import Any, Protocol, cast

from textual.message_pump import MessagePump

from app.state import DashboardState
from app.widgets.header import HeaderContext
from app.widgets.render import Palette


class ConsoleApp(Protocol):
    """sealtop's side of the console App."""

    mode: str  # live | replay | compare
    readonly: bool
    notice: str

    @property
    def state(self) -> DashboardState: ...

    @property
    def engine(self) -> Any: ...

    @property
    def can_tune(self) -> bool: ...

    def request_render(self) -> None: ...

    def render_proofs(self) -> None: ...

    def palette(self) -> Palette: ...

    def header_context(self) -> HeaderContext: ...

    def replay_bar(self) -> str: ...

    def open_detail(self, job: int) -> None: ...

    def _local_log(self, level: str, text: str) -> None: ...


def console_of(node: MessagePump) -> ConsoleApp:
    """The console App a screen or widget runs in (every App that mounts them is a SealtopApp)."""
    return cast(ConsoleApp, node.app)
