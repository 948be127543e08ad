"""Session files written so that a killed run still leaves a readable session.

    {"format": "sealtop-session", "version": 1, "schema": 2, "created": "2026-...Z"}
    {"t": 0.0, "kind": "session_start", ...}
    ...

The file is written at its target path from its first line (no hidden temporary file renamed at
the end): whatever happens to the process, the path holds the session up to the last line that
reached the kernel. Only the header line is written beside the target first, synced and then
renamed onto it, so a disk that is already full leaves the target as it was (absent, or the
good file it held) instead of empty. Consequence: recording over an existing file replaces it
when the recording begins, not when it ends.

Plain files are written line by line with one unbuffered write per event, so every line is in
the kernel's hands as soon as it is recorded. A ``.gz`` target is a multi-member gzip: the header
line is a member of its own and every flush (at least once a second while events arrive, after
every proof_done, and whenever the tap finds its queue idle) closes the current member, so a
killed run leaves complete members followed by at most one cut member; gunzip and the reader
both read it.

A write that fails (ENOSPC, EIO) raises :class:`RecordingError` once, with one line naming the
file and the reason; later writes raise the same error without touching the file again. The run
that owns the recorder reports it and goes on (see engine/verbs/runner.py).
"""

from __future__ import annotations

import gzip
import json
import os
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from engine.stream.schema import SCHEMA_VERSION, Event
from kernels.textfmt import exc_line

FORMAT = "sealtop-session"
FORMAT_VERSION = 1
FLUSH_EVERY_S = 1.0


class RecordingError(Exception):
    """The session cannot be recorded; str() is one line naming the file and the reason."""


class BinaryWriter(Protocol):
    def write(self, data: bytes | memoryview, /) -> int | None: ...
    def close(self) -> None: ...


def header(created: str | None = None) -> dict[str, Any]:
    """The first line of every session file."""
    if created is None:
        created = datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
    return {
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "schema": SCHEMA_VERSION,
        "created": created,
    }


def dumps(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"), allow_nan=False)


def check_target(path: str | os.PathLike[str]) -> Path:
    """Refuse, in one line, a record target that cannot be written: its folder must exist and be
    writable, and the target must not be a directory (or an unwritable file). Call it before
    any work, so a bad --record costs nothing."""
    p = Path(path)
    parent = p.parent if str(p.parent) else Path(".")
    if p.is_dir():
        raise RecordingError(f"cannot record to {p}: it is a directory")
    if not parent.is_dir():
        raise RecordingError(f"cannot record to {p}: folder {parent} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise RecordingError(f"cannot record to {p}: folder {parent} is not writable")
    if p.exists() and not os.access(p, os.W_OK):
        raise RecordingError(f"cannot record to {p}: the file is not writable")
    return p


def _reason(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return exc_line(exc)


class _Full:
    """Hands every byte to the file: loops over short writes (a raw file may take fewer bytes
    than it is given; GzipFile ignores the count)."""

    def __init__(self, f: BinaryWriter) -> None:
        self.f = f

    def write(self, data: bytes) -> int:
        view = memoryview(data)
        while view:
            n = self.f.write(view)
            if n is None:  # a non-blocking file that took nothing
                n = 0
            view = view[n:]
        return len(data)

    def flush(self) -> None:
        flush = getattr(self.f, "flush", None)
        if flush is not None:
            flush()


def _open_beside(path: Path) -> tuple[Path, Any]:
    """A new, unbuffered file in ``path``'s folder (made with the mode open() gives a new file),
    to hold the header until it is renamed onto ``path``."""
    for _ in range(100):
        beside = path.with_name(f".{path.name}.{os.urandom(4).hex()}.rec")
        try:
            fd = os.open(beside, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except FileExistsError:
            continue
        return beside, os.fdopen(fd, "wb", buffering=0)
    raise FileExistsError(f"no free name beside {path}")


class SessionRecorder:
    """Writes events to a session file at ``path``; thread-safe.

    ``file`` (an open binary file object) replaces opening ``path``: tests hand in one that fails
    after N bytes to see a full disk. ``clock`` decides when a flush is due."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        compress: bool | None = None,
        file: BinaryWriter | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.path = Path(path)
        self.compress = self.path.suffix == ".gz" if compress is None else compress
        self._clock = clock
        self._lock = threading.Lock()
        self._closed = False
        self.error: RecordingError | None = None
        self.count = 0
        beside: Path | None = None  # the header's file until it is renamed onto the target
        if file is None:
            check_target(self.path)
            try:
                beside, opened = _open_beside(self.path)
            except OSError as exc:
                raise RecordingError(f"cannot record to {self.path}: {_reason(exc)}") from None
            file = opened
        self._file: BinaryWriter = file
        self._why = ""  # the reason of the write that failed
        self._raw = _Full(file)
        self._member: gzip.GzipFile | None = None
        self._pending = False  # written since the last flush
        self._last_flush = clock()
        try:
            with self._lock:
                self._put(dumps(header()).encode("utf-8") + b"\n")
                self._flush_locked()
            if beside is not None:
                os.fsync(opened.fileno())
                os.replace(beside, self.path)
                beside = None
        except (RecordingError, OSError) as exc:
            self._closed = True
            try:
                self._file.close()
            except OSError:
                pass
            if beside is None:
                raise
            beside.unlink(missing_ok=True)
            why = self._why or _reason(exc)
            self.error = RecordingError(f"cannot record to {self.path}: {why}")
            raise self.error from None

    # ---- writing ---------------------------------------------------------------------------

    def _fail(self, exc: BaseException) -> RecordingError:
        self._why = _reason(exc)
        self.error = RecordingError(f"recording to {self.path} failed: {_reason(exc)}")
        self._closed = True
        try:
            self._file.close()
        except OSError:
            pass
        return self.error

    def _put(self, data: bytes) -> None:
        if self.error is not None:
            raise self.error
        try:
            if self.compress:
                if self._member is None:
                    self._member = gzip.GzipFile(fileobj=self._raw, mode="wb", mtime=0)
                self._member.write(data)
            else:
                self._raw.write(data)
        except OSError as exc:
            raise self._fail(exc) from None
        self._pending = True

    def _flush_locked(self) -> None:
        if self.error is not None:
            raise self.error
        if not self._pending:
            return
        try:
            if self._member is not None:
                self._member.close()  # the member's trailer: everything so far reads back
                self._member = None
            self._raw.flush()
        except OSError as exc:
            raise self._fail(exc) from None
        self._pending = False
        self._last_flush = self._clock()

    def write(self, event: Event) -> None:
        """Append one event; flushes after a proof_done and when the last flush is a second
        old. RecordingError when the file cannot take it."""
        data = dumps(event).encode("utf-8") + b"\n"
        with self._lock:
            if self._closed:
                raise self.error or RecordingError(f"recording to {self.path} is closed")
            self._put(data)
            self.count += 1
            if event.get("kind") == "proof_done" or self._clock() - self._last_flush >= FLUSH_EVERY_S:
                self._flush_locked()

    def flush(self) -> None:
        with self._lock:
            if not self._closed:
                self._flush_locked()

    def tick(self) -> None:
        """Flush if something is waiting (the tap calls this when its queue is idle)."""
        self.flush()

    def close(self) -> Path:
        """Flush, sync and close; returns the path. RecordingError if the last writes fail."""
        with self._lock:
            if self._closed:
                if self.error is not None:
                    raise self.error
                return self.path
            try:
                self._flush_locked()
                fileno = getattr(self._file, "fileno", None)
                if fileno is not None:
                    try:
                        os.fsync(fileno())
                    except (OSError, ValueError):
                        pass
            finally:
                if not self._closed:
                    self._closed = True
                    try:
                        self._file.close()
                    except OSError as exc:
                        self.error = RecordingError(
                            f"recording to {self.path} failed: {_reason(exc)}")
                        raise self.error from None
            return self.path

    def abort(self) -> None:
        """Stop recording after an error elsewhere: what was written stays, readable as the
        session of a run that ended early."""
        try:
            self.close()
        except RecordingError:
            pass

    def __enter__(self) -> SessionRecorder:
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()


__all__ = ["FORMAT", "FORMAT_VERSION", "RecordingError", "SessionRecorder", "check_target",
           "dumps", "header"]
