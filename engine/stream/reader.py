"""Session files read back: every line validated, errors in one line naming file and line.

The reader takes bytes, not text: it splits lines itself so that a line's length is bounded
(MAX_LINE_BYTES; a 1 GB line is refused when it passes the bound, not read whole) and a line
that is not UTF-8 is reported with its own number. gzip is detected by its magic bytes and read
member by member (see engine/stream/recorder.py for why a recording has several).

A recording cut by a crash is the normal state of a killed run, not an error: a last line
without its newline that does not parse, or a gzip stream that ends inside its last member
after at least one complete member, ends the session there with a warning (one line, in
:attr:`Recording.warnings`). A gzip file whose first member is already cut is damaged.

A header naming a format version or an event schema this reader does not know is refused in one
line that names it; so is any event naming such a schema (a session_start, a farm host's own).
"""

from __future__ import annotations

import json
import os
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from engine.stream.recorder import FORMAT, FORMAT_VERSION
from engine.stream.schema import SUPPORTED_SCHEMAS, Event, check_event
from kernels.textfmt import fmt_bytes

MAX_LINE_BYTES = 16 * 2**20
CHUNK = 1 << 20


class SessionError(ValueError):
    """A session file that cannot be read; str() is one line naming file and line."""


@dataclass
class Recording:
    """A session file read back: its header line, its events, and what was odd about it."""

    header: dict[str, Any]
    events: list[Event]
    warnings: list[str] = field(default_factory=list)


class _Cut(Exception):
    """The byte stream ended early (a cut gzip member)."""


def _gzip_chunks(raw: BinaryIO, state: dict[str, int]) -> Iterator[bytes]:
    """Decompressed bytes of a multi-member gzip stream. Raises _Cut when the stream ends inside
    a member (state["members"] says how many were complete), zlib.error when it is damaged."""
    d = zlib.decompressobj(wbits=31)
    started = False
    while True:
        data = raw.read(CHUNK)
        if not data:
            break
        while data:
            started = True
            out = d.decompress(data, CHUNK)
            if out:
                yield out
            while d.unconsumed_tail:
                out = d.decompress(d.unconsumed_tail, CHUNK)
                if out:
                    yield out
            if d.eof:
                state["members"] += 1
                data = d.unused_data
                d = zlib.decompressobj(wbits=31)
                started = False
            else:
                data = b""
    if started:
        tail = d.flush()
        if tail:
            yield tail
        raise _Cut()


def _lines(chunks: Iterable[bytes], limit: int) -> Iterator[tuple[bytes, bool]]:
    """(line without its newline, whether the newline was there). A line longer than ``limit``
    bytes raises OverflowError as soon as the bound is passed."""
    buf = bytearray()
    for chunk in chunks:
        start = 0
        while True:
            nl = chunk.find(b"\n", start)
            if nl < 0:
                buf += chunk[start:]
                if len(buf) > limit:
                    raise OverflowError
                break
            buf += chunk[start:nl]
            if len(buf) > limit:
                raise OverflowError
            yield bytes(buf), True
            buf.clear()
            start = nl + 1
    if buf:
        yield bytes(buf), False


def _parse(
    lines: Iterator[tuple[bytes, bool]],
    source: str,
    rec: Recording,
    limit: int,
) -> None:
    """Validate a header line, then events; fills ``rec``."""
    lineno = 0
    seen_header = False
    try:
        for lineno, (raw, complete) in enumerate(lines, 1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError:
                if not complete and seen_header:
                    rec.warnings.append(_cut_warning(source, lineno))
                    return
                raise SessionError(f"{source}:{lineno}: the line is not UTF-8 text") from None
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except (json.JSONDecodeError, RecursionError):
                if not complete and seen_header:
                    rec.warnings.append(_cut_warning(source, lineno))
                    return
                what = "header" if not seen_header else "event"
                raise SessionError(f"{source}:{lineno}: the {what} is not valid JSON") from None
            if not seen_header:
                _check_header(obj, source, lineno)
                seen_header = True
                rec.header.update(obj)
                continue
            why = check_event(obj) or _schema_problem(obj)
            if why is not None:
                if not complete:
                    rec.warnings.append(_cut_warning(source, lineno))
                    return
                raise SessionError(f"{source}:{lineno}: {why}")
            rec.events.append(obj)
    except OverflowError:
        raise SessionError(
            f"{source}:{lineno + 1}: the line is longer than {fmt_bytes(limit)}"
        ) from None
    if not seen_header:
        raise SessionError(f"{source}:1: empty file, not a sealtop session")


def _cut_warning(source: str, lineno: int) -> str:
    return (f"warning: {source}:{lineno}: the last line is cut off (the recording ended "
            f"without closing, as a killed run's does); the session ends at line {lineno - 1}")


def _unsupported(schema: Any) -> str | None:
    """What is wrong with an event schema this reader does not know (None when it knows it)."""
    if not isinstance(schema, bool) and schema in SUPPORTED_SCHEMAS:
        return None
    known = ", ".join(str(s) for s in SUPPORTED_SCHEMAS)
    return f"event schema {schema!r} is not supported (this sealtop reads schemas {known})"


def _schema_problem(ev: Event) -> str | None:
    """The header's rule for every event that names a schema: a session_start's, and the
    host's own session_start a farm's host event carries. A schema this reader does not know
    is refused, not read as if it were one it knows."""
    if ev["kind"] == "session_start":
        why = _unsupported(ev["schema"])
        return None if why is None else f"session_start {why}"
    nested = ev.get("session_start") if ev["kind"] == "host" else None
    if isinstance(nested, dict) and nested:
        why = _unsupported(nested.get("schema", 1))
        return None if why is None else f"host {ev['host']!r}: its session_start {why}"
    return None


def _check_header(obj: Any, source: str, lineno: int) -> None:
    if not isinstance(obj, dict) or obj.get("format") != FORMAT or "version" not in obj:
        raise SessionError(f"{source}:{lineno}: not a sealtop session (no '{FORMAT}' header line)")
    if obj["version"] != FORMAT_VERSION:
        raise SessionError(
            f"{source}:{lineno}: session format version {obj['version']!r} is not supported "
            f"(this sealtop reads version {FORMAT_VERSION})"
        )
    why = _unsupported(obj.get("schema", 1))
    if why is not None:
        raise SessionError(f"{source}:{lineno}: {why}")


def read_recording(path: str | os.PathLike[str], limit: int = MAX_LINE_BYTES) -> Recording:
    """Read and validate a session file. SessionError (one line) on any problem; a crashed
    recording's cut end is a warning in the result."""
    p = Path(path)
    if p.is_dir():
        raise SessionError(f"{p}: is a directory, not a session file")
    try:
        raw = p.open("rb")
    except OSError as exc:
        raise SessionError(f"{p}: cannot read session: {exc.strerror or exc}") from None
    rec = Recording({}, [])
    with raw:
        try:
            gz = raw.read(2) == b"\x1f\x8b"
            raw.seek(0)
        except OSError as exc:
            raise SessionError(f"{p}: cannot read session: {exc.strerror or exc}") from None
        state = {"members": 0}
        chunks: Iterable[bytes] = _gzip_chunks(raw, state) if gz else iter(lambda: raw.read(CHUNK), b"")
        lines = _lines(chunks, limit)
        try:
            _parse(lines, str(p), rec, limit)
        except _Cut:
            if state["members"] == 0:
                raise SessionError(f"{p}:1: the compressed file is damaged or cut off") from None
            rec.warnings.append(
                f"warning: {p}: the compressed stream is cut off after event {len(rec.events)} "
                "(the recording ended without closing, as a killed run's does)")
        except zlib.error:
            raise SessionError(
                f"{p}:{len(rec.events) + 2}: the compressed file is damaged or cut off"
            ) from None
        except OSError as exc:
            raise SessionError(f"{p}: cannot read session: {exc.strerror or exc}") from None
    return rec


def load_session(path: str | os.PathLike[str]) -> tuple[dict[str, Any], list[Event]]:
    """(header, events) of a session file, validated. SessionError (one line) on any problem;
    warnings about a crashed recording's end are dropped (read_recording keeps them)."""
    rec = read_recording(path)
    return rec.header, rec.events


def read_session(path: str | os.PathLike[str]) -> list[Event]:
    """All events of a session file, validated. SessionError (one line) on any problem."""
    return read_recording(path).events


def parse_recording(text: str, source: str = "<session>", limit: int = MAX_LINE_BYTES) -> Recording:
    """Like read_recording, from text (tests and fuzzing)."""
    rec = Recording({}, [])
    _parse(_lines([text.encode("utf-8", "surrogatepass")], limit), source, rec, limit)
    return rec


def parse_session_text(text: str, source: str = "<session>") -> list[Event]:
    """Like read_session, from text."""
    return parse_recording(text, source).events
