"""An orchestrator killed while it creates a segment leaves nothing: the segment is registered
with multiprocessing's resource tracker before it exists, so the tracker unlinks it once the
orchestrator is gone (SharedMemory registers only after shm_open, ftruncate and mmap, and a kill
in between used to leave the segment in /dev/shm for good)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time

from engine.pipeline.shm import list_ours, prefix_for

CHILD = textwrap.dedent("""
    import os, signal, sys
    from multiprocessing import resource_tracker
    from engine.pipeline.shm import SegmentRegistry
    resource_tracker.ensure_running()
    real = os.ftruncate
    def killed_mid_create(fd, size):  # SIGKILL inside the window: after shm_open, before mmap
        os.kill(os.getpid(), signal.SIGKILL)
    os.ftruncate = killed_mid_create
    print(os.getpid(), flush=True)
    SegmentRegistry().create("kill", (4096, 4))
""")


def test_an_orchestrator_killed_inside_create_leaves_no_segment() -> None:
    child = subprocess.Popen([sys.executable, "-c", CHILD], stdout=subprocess.PIPE, text=True,
                             cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    pid = int(child.stdout.readline())  # type: ignore[union-attr]
    assert child.wait(30) == -9  # it died inside create, by SIGKILL
    deadline = time.monotonic() + 20
    while list_ours(prefix_for(pid)) and time.monotonic() < deadline:
        time.sleep(0.1)  # the tracker sees its pipe close, then unlinks what is registered
    assert list_ours(prefix_for(pid)) == []
