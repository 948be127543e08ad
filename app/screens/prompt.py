"""A one-line prompt in a modal: seek to a time, set a knob's value."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label

from app.screens.quitkey import CtrlCQuits, ctrl_c_binding


class PromptScreen(CtrlCQuits, ModalScreen[str | None]):
    """Asks for one value; dismisses with the text, or None on escape."""

    BINDINGS = [Binding("escape", "cancel", "Cancel", id="prompt-cancel"), ctrl_c_binding()]

    def __init__(self, question: str, placeholder: str = "", value: str = "") -> None:
        super().__init__()
        self.question = question
        self.placeholder = placeholder
        self.value = value

    def compose(self) -> ComposeResult:
        with Vertical(id="prompt-box"):
            yield Label(self.question, id="prompt-question")
            yield Input(value=self.value, placeholder=self.placeholder, id="prompt-input")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value.strip())

    def action_cancel(self) -> None:
        self.dismiss(None)
