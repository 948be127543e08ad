"""A run's processes as the fault, runner and cluster tests and scripts/faults.py see them: from
/proc a process's children, whether one is still running and the named semaphores it has open;
a child's stderr followed line by line; and the sealtop threads of this process that outlive
what started them."""

from __future__ import annotations

import os
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from engine.pipeline.shm import SEM_PREFIX, SHM_DIR


def _state_and_parent(pid: int | str) -> tuple[str, int] | None:
    """(state letter, parent pid) from /proc/PID/stat; None when the process is gone."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = raw[raw.rfind(")") + 2:].split()  # after the command name, which may hold spaces
    return fields[0], int(fields[1])


def children(pid: int) -> list[int]:
    """Direct children of ``pid`` (from /proc), excluding zombies."""
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            stat = _state_and_parent(d)
            if stat is not None and stat[1] == pid and stat[0] != "Z":
                out.append(int(d))
    return out


def alive(pid: int) -> bool:
    """Whether ``pid`` is still running (neither gone nor a zombie)."""
    stat = _state_and_parent(pid)
    return stat is not None and stat[0] != "Z"


def semaphores_mapped_by(pid: int) -> set[str]:
    """The /dev/shm/sem.mp-* names that process ``pid`` has open (matched by inode: glibc
    maps a semaphore under the temporary name it created it with); empty once it is gone."""
    inodes = set()
    try:
        for line in Path(f"/proc/{pid}/maps").read_text().splitlines():
            parts = line.split(None, 5)
            if len(parts) == 6 and parts[5].startswith(SHM_DIR + "/sem."):
                inodes.add(int(parts[4]))
    except OSError:
        return set()
    names = set()
    for n in os.listdir(SHM_DIR):
        if n.startswith(SEM_PREFIX):
            try:
                if os.stat(os.path.join(SHM_DIR, n)).st_ino in inodes:
                    names.add(n)
            except OSError:
                pass
    return names


@dataclass
class Followed:
    """A child's stderr as a daemon thread reads it: the ``lines`` so far, and ``seen``, set at
    the first line that holds the marker."""

    lines: list[str]
    seen: threading.Event
    thread: threading.Thread


def follow_stderr(proc: subprocess.Popen, marker: str) -> Followed:
    """Start reading ``proc``'s stderr (a text pipe) line by line on a daemon thread."""
    lines: list[str] = []
    seen = threading.Event()

    def read() -> None:
        for line in proc.stderr or ():
            lines.append(line)
            if marker in line:
                seen.set()

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    return Followed(lines, seen, thread)


def threads_left(before: set[int], timeout: float = 10.0) -> list[str]:
    """The names of this process's ``sealtop*`` threads that are not in ``before`` (thread
    idents taken earlier) and still run after up to ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        left = [t.name for t in threading.enumerate()
                if t.ident not in before and t.name.startswith("sealtop")]
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.2)
