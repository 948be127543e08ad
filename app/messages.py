"""The messages the live source's threads post to the console's UI thread."""

from __future__ import annotations

from typing import Any

from textual.message import Message


class EngineEvents(Message):
    """A batch of events read from the engine's queue (posted from the bridge thread)."""

    def __init__(self, events: list[dict]) -> None:
        super().__init__()
        self.events = events


class FirstRunProgress(Message):
    """A tick of the first-run compile in its child process (app/firstrun.py)."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text


class EngineStatus(Message):
    """The bridge's own news: engine built, started, failed or stopped."""

    def __init__(self, text: str, level: str = "info", engine: Any = None, state: str = "") -> None:
        super().__init__()
        self.text, self.level, self.engine, self.state = text, level, engine, state


class SubmitDone(Message):
    """A submission finished in its thread; error is empty on success."""

    def __init__(self, error: str) -> None:
        super().__init__()
        self.error = error


__all__ = ["EngineEvents", "FirstRunProgress", "EngineStatus", "SubmitDone"]
