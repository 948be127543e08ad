"""engine/session.py: header + one event per line, gzip, atomic writes, one-line errors, fuzzing."""

from __future__ import annotations

import gzip
import json
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.stream import schema as events
from engine.stream.reader import SessionError, load_session, parse_session_text, read_session
from engine.stream.recorder import FORMAT, SessionRecorder, header
from engine.stream.summary import render_all

FUZZ_EXAMPLES = int(os.environ.get("SEALTOP_FUZZ_EXAMPLES", "300"))


def sample_events() -> list[dict]:
    return [
        events.session_start(0.0, {"partition_workers": 2}, {"cpus": 2, "ram_bytes": 1}, [],
                             "2026-01-01T00:00:00Z"),
        events.job_submitted(0.1, 1, "chain-64", 2, 66),
        events.stage(0.2, 1, 0, "queued", "scheduler"),
        events.stage(0.3, 1, 0, "failed", "synth-0", reason="boom"),
        events.partition_timings(0.4, 1, 0, {"queue": 1.5, "gpu_wrapper": 0.1 + 0.2}, 4096),
        events.proof_done(0.5, 1, "ab" * 192, True, 400.0),
        events.sample(0.6, [{"pid": 1, "role": "orchestrator", "rss_anon": None}], 0,
                      {"holding_abc": 0}, [{"index": 0, "util": None}]),
        events.knob(0.7, "partition_workers", 2, 3, "operator"),
        events.error(0.8, "cpu0", "worker died"),
    ]


@pytest.mark.parametrize("name", ["s.jsonl", "s.jsonl.gz"])
def test_round_trip_exact(tmp_path, name):
    path = tmp_path / name
    evs = sample_events()
    with SessionRecorder(path) as rec:
        for e in evs:
            rec.write(e)
    head, back = load_session(path)
    assert back == evs  # floats round-trip exactly
    assert head["format"] == FORMAT and head["version"] == 1
    raw = path.read_bytes()
    assert (raw[:2] == b"\x1f\x8b") == name.endswith(".gz")
    text = gzip.decompress(raw).decode() if name.endswith(".gz") else raw.decode()
    lines = text.splitlines()
    assert len(lines) == len(evs) + 1 and json.loads(lines[0])["format"] == FORMAT


def test_a_recording_in_progress_is_a_readable_session_at_its_path(tmp_path):
    """The recorder writes at its target from the start (no hidden temporary file): while it
    runs, and after a crash that skips close(), the path holds a readable prefix of the events;
    no other file is ever created beside it."""
    path = tmp_path / "s.jsonl"
    with SessionRecorder(path) as rec:
        rec.write(sample_events()[0])
    assert read_session(path) == sample_events()[:1]
    rec = SessionRecorder(path)  # a new recording replaces the old file when it begins
    rec.write(sample_events()[1])
    assert read_session(path) == sample_events()[1:2]  # in progress: already readable
    with pytest.raises(RuntimeError):
        with SessionRecorder(path) as rec2:
            rec2.write(sample_events()[1])
            rec2.write(sample_events()[2])
            raise RuntimeError("crash mid-recording")
    assert read_session(path) == sample_events()[1:3]  # what was written before the crash
    rec.abort()
    assert [p.name for p in tmp_path.iterdir()] == ["s.jsonl"]  # no temp files left


def _text(*lines: str) -> str:
    return "".join(line + "\n" for line in lines)


H = json.dumps(header("2026-01-01T00:00:00Z"))


@pytest.mark.parametrize(
    "text, line, phrase",
    [
        ("", 1, "empty file"),
        (_text('{"t": 0, "kind": "error"}'), 1, "not a sealtop session"),
        (_text(H, "{not json"), 2, "not valid JSON"),
        (_text(H, '{"t": 0, "kind": "warp"}'), 2, "unknown event kind"),
        (_text(H, '{"t": -1, "kind": "error", "where": "x", "message": "y"}'), 2, "'t'"),
        (_text(H, '{"t": 0, "kind": "stage", "job": 1, "partition": 0, "worker": "w"}'), 2,
         "lacks field 'stage'"),
        (_text(H, '{"t": 0, "kind": "stage", "job": 1, "partition": 0, "stage": "x",'
                  ' "worker": "w"}'), 2, "unknown stage"),
        (_text(H, "", '{"t": 0, "kind": "proof_done", "job": 1, "proof": "", "verified": "yes",'
                      ' "total_ms": 1}'), 3, "verified"),
        (_text(H, "[1, 2]"), 2, "JSON object"),
        (_text(json.dumps({"format": FORMAT, "version": 99})), 1, "version 99"),
    ],
)
def test_malformed_sessions_get_one_line_errors(text, line, phrase):
    with pytest.raises(SessionError) as info:
        parse_session_text(text, "f.jsonl")
    msg = str(info.value)
    assert "\n" not in msg and msg.startswith(f"f.jsonl:{line}: ") and phrase in msg, msg


def test_file_level_errors(tmp_path):
    with pytest.raises(SessionError, match="cannot read session"):
        read_session(tmp_path / "missing.jsonl")
    with pytest.raises(SessionError, match="directory"):
        read_session(tmp_path)
    cut = tmp_path / "cut.jsonl.gz"
    full = gzip.compress(_text(H, *[json.dumps(e) for e in sample_events()]).encode())
    cut.write_bytes(full[: len(full) // 2])
    with pytest.raises(SessionError, match="damaged or cut off"):
        read_session(cut)
    binary = tmp_path / "bin.jsonl"
    binary.write_bytes(b"\xff\xfe\x00garbage\n")
    with pytest.raises(SessionError):
        read_session(binary)


@settings(max_examples=FUZZ_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.text(max_size=400))
def test_fuzz_arbitrary_text(text):
    try:
        parse_session_text(text, "f")
    except SessionError as exc:
        assert "\n" not in str(exc) and str(exc).startswith("f:")


_json = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=10,
)


@settings(max_examples=FUZZ_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    st.lists(
        st.one_of(
            st.sampled_from([json.dumps(e) for e in sample_events()]),
            st.builds(
                lambda base, k, v: json.dumps({**base, k: v}),
                st.sampled_from(sample_events()),
                st.sampled_from(["t", "kind", "job", "partition", "stage", "ms", "verified",
                                 "processes", "counters", "shm_bytes", "proof", "total_ms"]),
                _json,
            ),
            _json.map(json.dumps),
        ),
        max_size=6,
    )
)
def test_fuzz_mutated_events(lines):
    text = _text(H, *lines)
    try:
        out = parse_session_text(text, "f")
    except SessionError as exc:
        msg = str(exc)
        assert "\n" not in msg and msg.startswith("f:")
    else:
        assert len(out) == len(lines)
        for e in out:
            assert e["kind"] in events.KINDS
        render_all(out)  # whatever parses can be summarized (replay --summary never crashes)
