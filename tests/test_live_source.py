"""app/live_source.py: the console's live source, without a terminal."""

from __future__ import annotations

import queue
import random
import threading

from app.live_source import LiveStream
from app.state import reduce
from engine.stream import schema as E
from engine.stream.reader import read_recording


def test_the_dashboard_and_the_recording_see_one_stream(tmp_path):
    src: queue.Queue = queue.Queue()
    posted: list[dict] = []
    notices: list[tuple[str, str]] = []
    lock = threading.Lock()

    def post(batch: list[dict]) -> None:
        with lock:
            posted.extend(batch)

    rec = tmp_path / "live.jsonl"
    live = LiveStream(src, str(rec), post, lambda level, text: notices.append((level, text)))
    assert live.recording
    src.put(E.session_start(0.0, {}, {"cpus": 2}, [], "x"))
    n = random.randint(5, 40)
    for i in range(n):
        src.put(E.error(0.1 * (i + 1), "w", f"e{i}"))
        if i % 7 == 0:
            assert live.say("info", f"operator action {i}")
    assert live.end("engine stopped")
    assert not live.end("again") and not live.say("info", "too late")
    events = read_recording(rec).events
    assert posted == events  # the same events, in the same order
    assert events[-1]["kind"] == "console" and events[-1]["engine_state"] == "stopped"
    assert sum(e["kind"] == "console" for e in events) == len(range(0, n, 7)) + 1
    assert [e["t"] for e in events] == sorted(e["t"] for e in events)
    assert reduce(events).stopped and notices == []


def test_a_record_target_that_cannot_be_opened_is_a_notice_not_a_crash(tmp_path):
    src: queue.Queue = queue.Queue()
    posted: list[dict] = []
    notices: list[tuple[str, str]] = []
    live = LiveStream(src, str(tmp_path / "no" / "s.jsonl"), posted.extend,
                      lambda level, text: notices.append((level, text)))
    assert not live.recording
    assert len(notices) == 1 and notices[0][0] == "error" and "does not exist" in notices[0][1]
    src.put(E.error(0.5, "w", "still shown"))
    live.end("engine stopped")
    assert [e["kind"] for e in posted] == ["error", "console"]


def test_a_recording_that_fails_mid_session_is_one_notice_and_the_dashboard_goes_on(
        tmp_path, monkeypatch):
    import errno

    import app.live_source as ls
    from engine.stream.recorder import SessionRecorder

    class FullDisk:
        def __init__(self, room: int) -> None:
            self.room = room

        def write(self, b) -> int:
            if self.room <= 0:
                raise OSError(errno.ENOSPC, "No space left on device")
            n = min(self.room, len(b))
            self.room -= n
            return n

        def close(self) -> None:
            pass

    room = random.randint(200, 2000)
    monkeypatch.setattr(ls, "SessionRecorder", lambda path: SessionRecorder(path, file=FullDisk(room)))
    src: queue.Queue = queue.Queue()
    posted: list[dict] = []
    notices: list[tuple[str, str]] = []
    live = ls.LiveStream(src, str(tmp_path / "s.jsonl"), posted.extend,
                         lambda level, text: notices.append((level, text)))
    evs = [E.session_start(0.0, {}, {"cpus": 2}, [], "x")]
    evs += [E.error(0.01 * i, "w", f"event {i} " + "x" * 40) for i in range(1, 200)]
    for e in evs:
        src.put(e)
    live.end("engine stopped")
    assert len(notices) == 1 and notices[0][0] == "error"
    assert "No space left on device" in notices[0][1] and "\n" not in notices[0][1]
    assert posted[:-1] == evs and posted[-1]["engine_state"] == "stopped"  # nothing lost on screen
    assert not live.recording


def test_the_engine_workers_the_samples_name_yield_the_cpu_to_the_console(tmp_path):
    import os
    import subprocess
    import sys

    from app import live_source as ls

    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        mine = os.getpriority(os.PRIO_PROCESS, os.getpid())
        src: queue.Queue = queue.Queue()
        posted: list[dict] = []
        live = LiveStream(src, None, posted.extend, lambda level, text: None)
        procs = [{"pid": os.getpid(), "role": "console", "rss_anon": 1},
                 {"pid": child.pid, "role": f"synth-{random.randint(0, 9)}", "rss_anon": 1},
                 {"pid": 2**22 + random.randint(1, 999), "role": "gone", "rss_anon": 1}]
        init = os.getpriority(os.PRIO_PROCESS, 1)
        farm = E.sample(0.4, [{"pid": child.pid, "role": "synth-0", "rss_anon": 1}], 0, {}, [])
        src.put({**farm, "host": "elsewhere"})  # a farm host's pid: not ours, left alone
        src.put(E.sample(0.45, [{"pid": 1, "role": "init", "rss_anon": 1}], 0, {}, []))
        src.put(E.sample(0.5, procs, 0, {}, []))
        live.end("engine stopped")
        assert [e["kind"] for e in posted] == ["sample", "sample", "sample", "console"]
        assert os.getpriority(os.PRIO_PROCESS, 1) == init  # not the console's child: untouched
        assert os.getpriority(os.PRIO_PROCESS, child.pid) == max(mine, ls.WORKER_NICE)
        assert os.getpriority(os.PRIO_PROCESS, os.getpid()) == mine  # the console's own stays
    finally:
        child.kill()
        child.wait()
