"""Progress of the long headless verbs (``prove``, ``setup``): a step count and the elapsed time.

On a terminal it is a rich progress bar on stderr (step n of N, what it is doing, the time since
the verb began, redrawn by rich's own thread while a step runs). Piped, it is plain lines on
stderr: one when each step starts, and one every HEARTBEAT_S while a step goes on, so a log
shows where a 30 s first-run compile went and a reader knows it is not hung. stdout keeps only
the verb's result line.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from types import TracebackType
from typing import Any, TextIO

HEARTBEAT_S = 5.0


def _rich_progress(stream: TextIO) -> Any | None:
    """A rich Progress on ``stream``, or None where rich is not installed (the headless verbs
    run without the console's packages)."""
    try:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
        )
    except ImportError:
        return None
    console = Console(file=stream)
    return Progress(TextColumn("{task.fields[verb]}"), BarColumn(), MofNCompleteColumn(),
                    TimeElapsedColumn(), TextColumn("{task.description}"), console=console,
                    refresh_per_second=4)


class Steps:
    """``with Steps("prove", 5) as steps: steps.step("loading the key") ...``.

    ``step`` begins the next step (the previous one counts as done); ``note`` says what the
    current step is doing (setup's sub-steps). Leaving the block completes the bar on success
    and leaves it where it stopped on an error, so the error line that follows names the step.
    ``fancy`` forces the bar (True) or the plain lines (False); None picks by ``isatty``.
    """

    def __init__(self, verb: str, total: int, stream: TextIO | None = None,
                 fancy: bool | None = None, heartbeat_s: float = HEARTBEAT_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.verb = verb
        self.total = total
        self.stream = stream if stream is not None else sys.stderr
        self.heartbeat_s = heartbeat_s
        self.clock = clock
        self.done = 0
        self.what = ""
        self._t0 = clock()
        self._step_t0 = self._t0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._beat: threading.Thread | None = None
        use_bar = fancy if fancy is not None else bool(getattr(self.stream, "isatty", lambda: False)())
        self._bar = _rich_progress(self.stream) if use_bar else None
        self._task: Any = None

    # ------------------------------------------------------------------ context
    def __enter__(self) -> Steps:
        if self._bar is not None:
            self._bar.start()
            self._task = self._bar.add_task("starting", total=self.total, verb=self.verb)
        else:
            self._beat = threading.Thread(target=self._heartbeat, name="sealtop-progress", daemon=True)
            self._beat.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._stop.set()
        if self._beat is not None:
            self._beat.join()
        if self._bar is not None:
            if exc_type is None:
                self._bar.update(self._task, completed=self.total, description="done")
            self._bar.stop()

    # ------------------------------------------------------------------ steps
    def step(self, what: str) -> None:
        with self._lock:
            if self.what:
                self.done += 1
            self.what = what
            self._step_t0 = self.clock()
            n = min(self.done + 1, self.total)
        if self._bar is not None:
            self._bar.update(self._task, completed=self.done, description=what)
        else:
            self._line(f"{self.verb} {n}/{self.total}: {what}")

    def note(self, text: str) -> None:
        """What the current step is doing now (replaces the bar's text; a plain line piped)."""
        if self._bar is not None:
            self._bar.update(self._task, description=f"{self.what}: {text}")
        else:
            self._line(f"{self.verb} {min(self.done + 1, self.total)}/{self.total}:   {text}")

    def elapsed(self) -> float:
        return self.clock() - self._t0

    # ------------------------------------------------------------------ plain lines
    def _line(self, text: str) -> None:
        print(f"{text} [{self.elapsed():.1f} s]", file=self.stream, flush=True)

    def _heartbeat(self) -> None:
        while not self._stop.wait(self.heartbeat_s / 5):
            with self._lock:
                running = self.clock() - self._step_t0
                if not self.what or running < self.heartbeat_s:
                    continue
                self._step_t0 = self.clock()
                n, what = min(self.done + 1, self.total), self.what
            self._line(f"{self.verb} {n}/{self.total}: {what} (still running)")
