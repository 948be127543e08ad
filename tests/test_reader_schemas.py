"""Every event that names a schema is held to the header's rule: a session_start (or a farm
host's own session_start) of a schema this reader does not know is refused in one line that
names the file, the line and the schema, by replay --summary and the console's replay alike."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from engine.stream import schema as E
from engine.stream.reader import SessionError, parse_recording, read_recording
from engine.stream.recorder import header

ROOT = Path(__file__).resolve().parents[1]
SUPPORTED = E.SUPPORTED_SCHEMAS


def _unknown() -> object:
    return random.choice([max(SUPPORTED) + random.randint(1, 100), 0, -1, "4", 4.5, True, None])


_NO_HOST = object()  # no host event (None is one of the unknown schemas a host may carry)


def _session(start_schema: object, host_schema: object = _NO_HOST) -> str:
    start = E.session_start(0.0, {}, {"cpus": 2, "ram_bytes": 1}, [], "2026-12-03T00:00:00Z")
    start["schema"] = start_schema
    events = [start, E.error(0.5, "w", "x")]
    if host_schema is not _NO_HOST:
        own = {k: v for k, v in start.items() if k not in ("t", "kind")}
        own["schema"] = host_schema
        events.append(E.host(0.7, "hA", "joined", "tcp://a:1", own, {"slots": 1}, 0.0))
    events.append(E.error(0.9, "w", "y"))
    return "\n".join(json.dumps(x) for x in [header(), *events]) + "\n"


def test_a_session_start_of_an_unknown_schema_is_refused():
    bad = _unknown()
    with pytest.raises(SessionError) as info:
        parse_recording(_session(bad), "s.jsonl")
    msg = str(info.value)
    assert msg.startswith(f"s.jsonl:2: session_start event schema {bad!r} is not supported") and "\n" not in msg


def test_a_farm_hosts_session_start_of_an_unknown_schema_is_refused():
    bad = _unknown()
    with pytest.raises(SessionError) as info:
        parse_recording(_session(random.choice(SUPPORTED), bad), "farm.jsonl")
    assert str(info.value).startswith(f"farm.jsonl:4: host 'hA': its session_start event schema "
                                      f"{bad!r} is not supported")


def test_every_known_schema_still_reads():
    for s in SUPPORTED:
        rec = parse_recording(_session(s, random.choice(SUPPORTED)), "ok.jsonl")
        assert [e["kind"] for e in rec.events] == ["session_start", "error", "host", "error"]
        assert rec.warnings == []


def test_replay_summary_of_schema_99_exits_2_in_one_line(tmp_path):
    path = tmp_path / "s99.jsonl"
    path.write_text(_session(99))
    with pytest.raises(SessionError):
        read_recording(path)
    done = subprocess.run([sys.executable, "-m", "engine", "replay", str(path), "--summary"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert done.stderr.startswith(f"sealtop: replay: {path}:2: session_start event schema 99 "
                                  "is not supported"), done.stderr
