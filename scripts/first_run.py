"""Time a cold first launch of a plain `sealtop`: seconds until the console draws and until its
first proof is done, as a new operator meets it on a fresh clone.

The console runs on a pseudo-terminal (80x24) with a fresh HOME, XDG_CACHE_HOME (the warm-up's
stamps, the key cache) and NUMBA_CACHE_DIR under --dir, so numba compiles from nothing and
nobody else's cache is touched. The recording it writes says when the first proof_done came;
/proc says how much CPU each first-run compile child used. Prints one line per figure.

    python scripts/first_run.py [--dir /tmp/sealtop-first-run] [--timeout 900]
"""

from __future__ import annotations

import argparse
import json
import os
import pty
import select
import shutil
import signal
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _children(pid: int) -> dict[int, str]:
    """pid -> command line of ``pid``'s live children."""
    out = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            stat = Path(f"/proc/{d}/stat").read_text()
            cmd = Path(f"/proc/{d}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            out[int(d)] = cmd
    return out


def _cpu_s(pid: int) -> float | None:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", default="/tmp/sealtop-first-run", help="scratch folder (emptied)")
    ap.add_argument("--timeout", type=float, default=900.0, help="give up after S seconds")
    a = ap.parse_args()
    base = Path(a.dir)
    shutil.rmtree(base, ignore_errors=True)
    home = base / "home"
    home.mkdir(parents=True)
    rec = base / "console.jsonl"
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "80", "LINES": "24",
           "HOME": str(home), "XDG_CACHE_HOME": str(home / ".cache"),
           "NUMBA_CACHE_DIR": str(base / "numba")}
    code = (f"import sys; sys.path.insert(0, {str(ROOT)!r}); from app.main import main; "
            "sys.exit(main(sys.argv[1:]))")
    t0 = time.monotonic()
    pid, master = pty.fork()
    if pid == 0:
        try:
            os.chdir(base)
            os.execve(sys.executable, [sys.executable, "-c", code, "--record", str(rec),
                                       "--no-attach"], env)
        finally:
            os._exit(127)
    drawn = first = None
    cpu: dict[str, float] = {}  # compile child -> its CPU seconds, last seen
    try:
        while time.monotonic() - t0 < a.timeout:
            r, _, _ = select.select([master], [], [], 0.5)
            if r:
                try:
                    chunk = os.read(master, 65536)
                except OSError:
                    break
                if drawn is None and b"\x1b[?1049h" in chunk:
                    drawn = time.monotonic() - t0
            for child, cmd in _children(pid).items():
                if "'--part'" in cmd:
                    what = cmd[cmd.index("'--part'"):].split("]")[0].replace("'", "")
                    s = _cpu_s(child)
                    if s is not None:
                        cpu[f"{child} {what}"] = s
            if rec.exists() and b'"proof_done"' in rec.read_bytes():
                first = time.monotonic() - t0
                break
    finally:
        os.kill(pid, signal.SIGTERM)
        end = time.monotonic() + 60
        status = None
        while time.monotonic() < end and status is None:
            r, _, _ = select.select([master], [], [], 0.2)
            if r:
                try:
                    os.read(master, 65536)
                except OSError:
                    pass
            done, st = os.waitpid(pid, os.WNOHANG)
            if done:
                status = os.waitstatus_to_exitcode(st)
        if status is None:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        os.close(master)
    print(f"drawn: {drawn:.1f} s" if drawn is not None else "drawn: never")
    if first is None:
        print(f"first proof: none within {a.timeout:.0f} s")
    else:
        session = [json.loads(x) for x in rec.read_text().splitlines()[1:] if x.strip()]
        done = next(e for e in session if e.get("kind") == "proof_done")
        print(f"first proof: {first:.1f} s after launch (verified: {done['verified']}; "
              f"{done['t']:.1f} s after the engine's session began)")
    for what, s in sorted(cpu.items()):
        print(f"compile child {what}: {s:.1f} s CPU (last seen)")
    print(f"console exit status after SIGTERM: {status}")
    return 0 if first is not None else 1


if __name__ == "__main__":
    sys.exit(main())
