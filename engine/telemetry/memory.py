"""Process memory as design.md counts it: RssAnon per process, plus our shared memory once.

Plain RSS counts a shared page once for every process that maps it, so summing RSS over the
orchestrator and its workers would count each partition buffer two or three times. RssAnon (from
/proc/PID/status) leaves shared mappings out; the shared-memory total is added once, from the
segment registry.
"""

from __future__ import annotations

import os


def rss_anon(pid: int) -> int | None:
    """RssAnon of a process in bytes, or None if the process is gone or the field is missing."""
    try:
        with open(f"/proc/{pid}/status", "rb") as f:
            for line in f:
                if line.startswith(b"RssAnon:"):
                    parts = line.split()
                    return int(parts[1]) * 1024  # the kernel reports kB
    except (OSError, ValueError, IndexError):
        return None
    return None


def host_info() -> dict:
    """CPUs and physical RAM of this host, for the session_start event."""
    ram = None
    try:
        with open("/proc/meminfo", "rb") as f:
            for line in f:
                if line.startswith(b"MemTotal:"):
                    ram = int(line.split()[1]) * 1024
                    break
    except (OSError, ValueError, IndexError):
        pass
    return {"cpus": os.cpu_count(), "ram_bytes": ram}


def total_memory(processes: list[dict], shm_bytes: int) -> int:
    """The design's total: sum of RssAnon over our processes (unknown counts 0) plus shm once."""
    return sum(p.get("rss_anon") or 0 for p in processes) + shm_bytes
