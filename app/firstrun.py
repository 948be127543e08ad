"""First-run compilation in child processes, with progress the console can keep drawing.

numba compiles while holding the GIL, so a compile inside the console's process freezes the
screen for seconds at a time. The console instead runs the engine's warm-up (engine/warmup.py)
in children before it builds the engine, reads their progress lines from pipes, and ticks the
elapsed time at least every second while a long step runs.

A cold first run is almost all compiling, and numba compiles on one core. So the part of the
warm-up the first proof needs is run as one child per lane at once (two on a 2-core machine),
and everything else is compiled afterwards by one child in the background, at the lowest CPU
priority, while the engine proves: the first proof waits only for what it uses. The background
child holds the warm-up's REST_LOCK, so the engine started meanwhile does not compile the rest
again in-process. Every child dies with the console (a parent-death signal), and is stopped when
it quits. Plain Python (no Textual), tested with a real cold compile.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

TICK_S = 0.5
STARTS = "compiling "  # engine.warmup.STARTS: a step's first line (kept here: no import)


def _die_with_me() -> str:
    """Code that makes a child die with this process (engine.pipeline.workers)."""
    return f"from engine.pipeline.workers import die_with_parent; die_with_parent({os.getpid()})\n"


def _part_code(part: str, lane: int | None) -> str:
    lane_args = "" if lane is None else f", '--lane', '{lane}'"
    return (_die_with_me() + "import sys\nfrom engine.warmup import main\n"
            f"sys.exit(main(['--part', '{part}'{lane_args}]))\n")


# engine/warmup.py's first part, one child per lane; kept for a caller that wants one child
WARM_CODE = _part_code("first", None)


@dataclass
class Progress:
    """Where a first-run compile stands: steps done of total, the steps running now, the latest
    line, elapsed s."""

    done: int = 0
    total: int = 1
    line: str = ""
    elapsed: float = 0.0
    finished: bool = False
    failed: str = ""
    running: list[str] = field(default_factory=list)

    def text(self, width: int = 20) -> str:
        """One line: a bar with the step count, the elapsed time and what is compiling now (the
        step or steps running, not the last one finished)."""
        frac = min(1.0, self.done / self.total) if self.total else 0.0
        full = int(round(frac * width))
        bar = "█" * full + "░" * (width - full)
        if self.running:
            what = f"{STARTS}{', '.join(self.running)}"
        else:
            what = self.line.strip() or "starting"
        return f"first run: compiling {bar} {self.done}/{self.total} steps · {self.elapsed:.0f} s · {what}"

    def take(self, line: str) -> None:
        """One line a child printed: a step starting, a step done (two spaces first), or news."""
        text = line.strip()
        if line.startswith(STARTS):
            self.running.append(text[len(STARTS):])
        elif line.startswith("  "):
            self.done = min(self.total, self.done + 1)
            name = text.rsplit(None, 2)[0] if len(text.split()) >= 3 else text
            if name in self.running:
                self.running.remove(name)
            elif self.running:
                self.running.pop(0)
        self.line = text


def compile_in_child(report: Callable[[Progress], None], code: str = WARM_CODE,
                     total: int = 1, tick_s: float = TICK_S,
                     stop: threading.Event | None = None) -> Progress:
    """Run ``code`` in one child Python (see :func:`compile_in_children`)."""
    return compile_in_children(report, [code], total, tick_s, stop)


def compile_in_children(report: Callable[[Progress], None], codes: list[str], total: int,
                        tick_s: float = TICK_S, stop: threading.Event | None = None,
                        env: dict[str, str] | None = None) -> Progress:
    """Run each of ``codes`` in a child Python at once, calling ``report`` on every line one
    prints and at least every ``tick_s`` seconds with the elapsed time; returns the final
    Progress. A child that fails is reported (``failed``: its last line), not raised, and the
    others are stopped: the engine then compiles in-process as before."""
    p = Progress(total=total)
    t0 = time.monotonic()
    env = {**os.environ, **(env or {}), "PYTHONUNBUFFERED": "1"}
    children: list[subprocess.Popen] = []
    try:
        for code in codes:
            children.append(subprocess.Popen(
                [sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                text=True, env=env, stdin=subprocess.DEVNULL))
    except OSError as exc:
        _stop_all(children)
        p.failed = str(exc)
        report(p)
        return p
    lock = threading.Lock()
    tails: list[list[str]] = [[] for _ in children]

    def read(i: int, child: subprocess.Popen) -> None:
        assert child.stdout is not None
        for line in child.stdout:
            with lock:
                tails[i].append(line.rstrip())
                del tails[i][:-5]
                p.take(line)
                p.elapsed = time.monotonic() - t0
                report(p)

    readers = [threading.Thread(target=read, args=(i, c), name="sealtop-firstrun", daemon=True)
               for i, c in enumerate(children)]
    for r in readers:
        r.start()
    while any(c.poll() is None for c in children):
        if (stop is not None and stop.is_set()) or any(c.returncode for c in children):
            _stop_all(children)  # asked to stop, or one failed: the rest is wasted work
            break
        time.sleep(tick_s)
        with lock:
            p.elapsed = time.monotonic() - t0
            report(p)
    for r in readers:
        r.join(timeout=2)
    p.elapsed = time.monotonic() - t0
    p.running = []
    p.finished = all(c.returncode == 0 for c in children)
    if not p.finished:
        bad = next((i for i, c in enumerate(children) if c.returncode), 0)
        p.failed = tails[bad][-1] if tails[bad] else f"exit {children[bad].returncode}"
    report(p)
    return p


def _stop_all(children: list[subprocess.Popen]) -> None:
    for c in children:
        if c.poll() is None:
            c.terminate()
    for c in children:
        try:
            c.wait(timeout=10)
        except subprocess.TimeoutExpired:
            c.kill()
            c.wait()


def compile_first(report: Callable[[Progress], None], stop: threading.Event | None = None,
                  tick_s: float = TICK_S, params: str | None = None) -> Progress:
    """The warm-up's first part, one child per lane at once; stamped when every lane is done.
    ``params``: the engine's key cache, where the first part then leaves the first preset's key
    (and circuit) for the engine to load instead of making it again."""
    from engine.warmup import PARAMS_ENV, lanes, mark_warm, steps

    p = compile_in_children(report, [_part_code("first", n) for n in lanes("first")],
                            len(steps("first")), tick_s, stop,
                            env={PARAMS_ENV: params} if params else None)
    if p.finished:
        mark_warm("first", p.elapsed)
    return p


@dataclass
class Background:
    """The rest of the warm-up compiling in a child; ``stop()`` ends it."""

    thread: threading.Thread
    stopping: threading.Event
    child: list[subprocess.Popen]

    def stop(self, timeout: float = 10.0) -> None:
        self.stopping.set()
        self.thread.join(timeout)

    @property
    def pid(self) -> int | None:
        return self.child[0].pid if self.child else None


def compile_rest_in_background(stop: threading.Event | None = None) -> Background | None:
    """Start compiling the warm-up's rest in a child at the lowest CPU priority, from a thread
    that lives as long as the child (the parent-death signal follows the thread that started
    it). None when it is warm already or another process is compiling it."""
    from engine.warmup import hold_rest_lock, is_warm

    if is_warm("rest"):
        return None
    fd = hold_rest_lock()  # taken now, so an engine started next sees it held
    if fd is None:
        return None
    stopping = threading.Event()
    child: list[subprocess.Popen] = []
    started = threading.Event()

    def run() -> None:
        try:
            child.append(subprocess.Popen(
                [sys.executable, "-c", "import os; os.nice(19)\n" + _part_code("rest", None)],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
                pass_fds=(fd,)))  # the child's copy holds the lock until it ends
        except OSError:
            return
        finally:
            os.close(fd)
            started.set()
        c = child[0]
        while c.poll() is None:
            if stopping.is_set() or (stop is not None and stop.is_set()):
                _stop_all([c])
                return
            time.sleep(0.25)

    t = threading.Thread(target=run, name="sealtop-warm-rest", daemon=True)
    t.start()
    started.wait(10)
    return Background(t, stopping, child)
