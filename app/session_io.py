"""Reading recorded session files for replay and compare.

The file format and its validation belong to engine/stream/reader.py (a versioned header line, then
one event per line, optionally gzipped); this wraps its reader into a Session object the console
keeps. An unreadable file raises SessionError with one line naming the file and line, which the
entry point prints instead of a traceback.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from engine.stream.reader import SessionError, parse_recording, read_recording
from engine.stream.schema import Event

__all__ = ["Session", "SessionError", "load_session", "parse_session"]


@dataclass
class Session:
    """A whole recorded session held in memory."""

    path: str
    events: list[Event] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # e.g. the cut end of a crashed run

    @property
    def name(self) -> str:
        return Path(self.path).name

    @property
    def duration(self) -> float:
        return float(self.events[-1].get("t", 0.0)) if self.events else 0.0


def _check(events: list[Event], source: str) -> list[Event]:
    if not events:
        raise SessionError(f"{source}: the session holds no events")
    if events[0].get("kind") != "session_start":
        raise SessionError(f"{source}:2: the session does not begin with session_start")
    return events


def load_session(path: str | Path) -> Session:
    """Read and validate a session file; SessionError (one line) if it is not one."""
    p = Path(path)
    if p.is_dir():
        raise SessionError(f"{p}: is a directory, not a session file")
    rec = read_recording(p)
    return Session(str(p), _check(rec.events, str(p)), rec.warnings)


def parse_session(text: str, name: str = "<session>") -> Session:
    """Like load_session, from text (tests)."""
    rec = parse_recording(text, name)
    return Session(name, _check(rec.events, name), rec.warnings)
