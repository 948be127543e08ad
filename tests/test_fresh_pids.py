"""A thread's id is not a live process: a dead engine's pid reused as another process's thread
id kept its attach socket listed as a running engine ("2 engines are running")."""

from __future__ import annotations

import os
import threading

from engine.pipeline.shm import pid_alive


def test_a_thread_id_is_not_a_live_pid() -> None:
    started, done = threading.Event(), threading.Event()
    tid: list[int] = []

    def body() -> None:
        tid.append(threading.get_native_id())
        started.set()
        done.wait(10)

    t = threading.Thread(target=body)
    t.start()
    try:
        started.wait(10)
        assert tid and tid[0] != os.getpid()
        assert not pid_alive(tid[0])
        assert pid_alive(os.getpid()) and pid_alive(os.getppid())
    finally:
        done.set()
        t.join()
