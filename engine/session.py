"""Session files: a versioned header line, then one JSON event per line, optionally gzipped.

    {"format": "sealtop-session", "version": 1, "schema": 1, "created": "2026-...Z"}
    {"t": 0.0, "kind": "session_start", ...}
    {"t": 0.01, "kind": "job_submitted", ...}
    ...

Writing is atomic: the recorder writes to a temporary file beside the target and renames it over
the target only when the session is closed cleanly, so a half-written file never replaces a good
one. A path ending in ``.gz`` is written gzip-compressed; reading detects gzip by its magic bytes.

Reading validates every line (JSON object, a numeric ``t``, a known ``kind`` and that kind's
fields) and raises :class:`SessionError`, whose message is one line naming the file and line.
Nothing derived (summaries, totals) is ever stored: those are computed from the events.
"""

from __future__ import annotations

import gzip
import io
import json
import math
import os
import tempfile
import threading
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Any, Iterator

from engine import events

FORMAT = "sealtop-session"
FORMAT_VERSION = 1

# Fields each kind must carry (beyond t and kind), per engine/events.py.
REQUIRED: dict[str, tuple[str, ...]] = {
    "session_start": ("schema", "config", "host", "gpus", "wall_start"),
    "job_submitted": ("job", "preset", "partitions", "constraints"),
    "stage": ("job", "partition", "stage", "worker"),
    "partition_timings": ("job", "partition", "ms", "bytes_held"),
    "proof_done": ("job", "proof", "verified", "total_ms"),
    "sample": ("processes", "shm_bytes", "counters", "gpus"),
    "knob": ("name", "old", "new", "source"),
    "error": ("where", "message"),
}


class SessionError(ValueError):
    """A session file that cannot be read; str() is one line naming file and line."""


def header(created: str | None = None) -> dict[str, Any]:
    """The first line of every session file."""
    if created is None:
        created = datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")
    return {
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "schema": events.SCHEMA_VERSION,
        "created": created,
    }


def _dumps(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"), allow_nan=False)


class SessionRecorder:
    """Writes events to a session file; thread-safe; renames into place on close()."""

    def __init__(self, path: str | os.PathLike[str], compress: bool | None = None):
        self.path = Path(path)
        self.compress = self.path.suffix == ".gz" if compress is None else compress
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(
            prefix=f".{self.path.name}.", suffix=".part", dir=str(self.path.parent)
        )
        self._tmp = Path(tmp)
        raw = os.fdopen(fd, "wb")
        self._raw = raw
        self._out: IO[bytes] = gzip.GzipFile(fileobj=raw, mode="wb") if self.compress else raw
        self._lock = threading.Lock()
        self._closed = False
        self.count = 0
        self._write_line(header())

    def _write_line(self, obj: Any) -> None:
        self._out.write(_dumps(obj).encode("utf-8") + b"\n")

    def write(self, event: dict) -> None:
        """Append one event (a dict from engine.events)."""
        with self._lock:
            if self._closed:
                raise ValueError("session recorder is closed")
            self._write_line(event)
            self.count += 1

    def flush(self) -> None:
        with self._lock:
            if not self._closed:
                self._out.flush()

    def close(self) -> Path:
        """Finish the file and atomically move it to its path; returns the path."""
        with self._lock:
            if self._closed:
                return self.path
            self._closed = True
            if self.compress:
                self._out.close()
            self._raw.flush()
            os.fsync(self._raw.fileno())
            self._raw.close()
            os.replace(self._tmp, self.path)
            return self.path

    def abort(self) -> None:
        """Discard the partial file; the target (if any) is left untouched."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            try:
                self._raw.close()
            finally:
                self._tmp.unlink(missing_ok=True)

    def __enter__(self) -> "SessionRecorder":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()


def _check_event(obj: Any) -> str | None:
    """None if obj is a well-formed event, else what is wrong (one phrase)."""
    if not isinstance(obj, dict):
        return "an event must be a JSON object"
    t = obj.get("t")
    if isinstance(t, bool) or not isinstance(t, (int, float)) or not math.isfinite(t) or t < 0:
        return "event field 't' must be a non-negative number"
    kind = obj.get("kind")
    if not isinstance(kind, str) or kind not in REQUIRED:
        return f"unknown event kind {kind!r}"
    missing = [k for k in REQUIRED[kind] if k not in obj]
    if missing:
        return f"{kind} event lacks field {missing[0]!r}"
    if kind == "stage":
        st = obj["stage"]
        if not isinstance(st, str) or (st not in events.STAGES and st != events.FAILED):
            return f"unknown stage {st!r}"
        if not isinstance(obj["worker"], str):
            return "stage event field 'worker' must be a string"
    if kind in ("stage", "partition_timings", "job_submitted", "proof_done"):
        if isinstance(obj["job"], bool) or not isinstance(obj["job"], int):
            return f"{kind} event field 'job' must be an integer"
    if kind in ("stage", "partition_timings"):
        p = obj["partition"]
        if isinstance(p, bool) or not isinstance(p, int):
            return f"{kind} event field 'partition' must be an integer"
    if kind == "partition_timings":
        bh = obj["bytes_held"]
        if isinstance(bh, bool) or not isinstance(bh, int):
            return "partition_timings field 'bytes_held' must be an integer"
        ms = obj["ms"]
        if not isinstance(ms, dict) or any(
            k not in events.TIMER_KEYS or isinstance(v, bool) or not isinstance(v, (int, float))
            for k, v in ms.items()
        ):
            return "partition_timings field 'ms' must map timer names to numbers"
    if kind == "job_submitted":
        if not isinstance(obj["preset"], str):
            return "job_submitted field 'preset' must be a string"
        for k in ("partitions", "constraints"):
            if isinstance(obj[k], bool) or not isinstance(obj[k], int) or obj[k] < 0:
                return f"job_submitted field {k!r} must be a non-negative integer"
    if kind == "proof_done":
        if not isinstance(obj["verified"], bool):
            return "proof_done field 'verified' must be true or false"
        if not isinstance(obj["proof"], str):
            return "proof_done field 'proof' must be a hex string"
        tm = obj["total_ms"]
        if isinstance(tm, bool) or not isinstance(tm, (int, float)):
            return "proof_done field 'total_ms' must be a number"
    if kind == "sample":
        procs = obj["processes"]
        if not isinstance(procs, list) or not isinstance(obj["counters"], dict):
            return "sample event has malformed processes or counters"
        for p in procs:
            if not isinstance(p, dict):
                return "sample event field 'processes' must hold objects"
            r = p.get("rss_anon")
            if r is not None and (isinstance(r, bool) or not isinstance(r, int)):
                return "sample event rss_anon must be an integer or null"
        if not isinstance(obj["gpus"], list):
            return "sample event field 'gpus' must be a list"
        sb = obj["shm_bytes"]
        if isinstance(sb, bool) or not isinstance(sb, int):
            return "sample event field 'shm_bytes' must be an integer"
    return None


def _open_text(path: Path) -> IO[str]:
    raw = path.open("rb")
    magic = raw.read(2)
    raw.seek(0)
    stream: IO[bytes] = gzip.GzipFile(fileobj=raw, mode="rb") if magic == b"\x1f\x8b" else raw
    return io.TextIOWrapper(stream, encoding="utf-8", newline="\n")


def iter_lines(
    lines: Iterator[str], source: str, header_out: dict | None = None
) -> Iterator[dict]:
    """Validate a header line then events from an iterator of text lines; yields the events.
    The header is copied into ``header_out`` when given."""
    lineno = 0
    seen_header = False
    try:
        for lineno, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except (json.JSONDecodeError, RecursionError):
                what = "header" if not seen_header else "event"
                raise SessionError(f"{source}:{lineno}: the {what} is not valid JSON") from None
            if not seen_header:
                if (
                    not isinstance(obj, dict)
                    or obj.get("format") != FORMAT
                    or "version" not in obj
                ):
                    raise SessionError(
                        f"{source}:{lineno}: not a sealtop session (no '{FORMAT}' header line)"
                    )
                if obj["version"] != FORMAT_VERSION:
                    raise SessionError(
                        f"{source}:{lineno}: session format version {obj['version']!r} is not "
                        f"supported (this sealtop reads version {FORMAT_VERSION})"
                    )
                seen_header = True
                if header_out is not None:
                    header_out.update(obj)
                continue
            why = _check_event(obj)
            if why is not None:
                raise SessionError(f"{source}:{lineno}: {why}")
            yield obj
    except UnicodeDecodeError:
        raise SessionError(f"{source}:{lineno + 1}: the file is not UTF-8 text") from None
    except (EOFError, gzip.BadGzipFile, OSError) as exc:
        if isinstance(exc, FileNotFoundError):
            raise
        raise SessionError(
            f"{source}:{lineno + 1}: the compressed file is damaged or cut off"
        ) from None
    if not seen_header:
        raise SessionError(f"{source}:1: empty file, not a sealtop session")


def load_session(path: str | os.PathLike[str]) -> tuple[dict, list[dict]]:
    """(header, events) of a session file, validated. SessionError (one line) on any problem."""
    p = Path(path)
    if p.is_dir():
        raise SessionError(f"{p}: is a directory, not a session file")
    try:
        f = _open_text(p)
    except OSError as exc:
        raise SessionError(f"{p}: cannot read session: {exc.strerror or exc}") from None
    head: dict = {}
    with f:
        evs = list(iter_lines(iter(f), str(p), head))
    return head, evs


def read_session(path: str | os.PathLike[str]) -> list[dict]:
    """All events of a session file, validated. SessionError (one line) on any problem."""
    return load_session(path)[1]


def parse_session_text(text: str, source: str = "<session>") -> list[dict]:
    """Like read_session, from text (used by tests and fuzzing)."""
    return list(iter_lines(iter(text.splitlines(keepends=True)), source))
