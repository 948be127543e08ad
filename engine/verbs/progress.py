"""Progress of the long headless verbs (``prove``, ``setup``): a step count and the elapsed time.

On a terminal it is a rich progress bar on stderr (step n of N, what it is doing, the time since
the verb began, redrawn by rich's own thread while a step runs). Piped, it is plain lines on
stderr: one when each step starts, and one every HEARTBEAT_S while a step goes on, so a log
shows where a 30 s first-run compile went and a reader knows it is not hung. stdout keeps only
the verb's result line.

While numba compiles inside a step (a first run, or a path the warm-up did not reach), the
progress says so: the bar's text and the heartbeat lines name "compiling" and the function, and
a plain log gets one line when a step starts compiling, so a minute of JIT never reads as a
minute of "proving".
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
        self._compiling: list[str] = []  # numba functions compiling now (outermost first)
        self._compile_said = False  # this step's "compiling" line is out (plain lines)
        self._listener: Any = None

    # ------------------------------------------------------------------ context
    def __enter__(self) -> Steps:
        self._listen_to_numba()
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
        self._unlisten()
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
            self._compile_said = False
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
                how = (f"compiling {self._compiling[0]} (numba, once per install)"
                       if self._compiling else "still running")
            self._line(f"{self.verb} {n}/{self.total}: {what} ({how})")

    # ------------------------------------------------------------------ numba's compiles
    def compiling(self) -> str | None:
        """The numba function being compiled now (the outermost), or None."""
        with self._lock:
            return self._compiling[0] if self._compiling else None

    def _compile_started(self, name: str) -> None:
        with self._lock:
            self._compiling.append(name)
            first = len(self._compiling) == 1
            say = first and not self._compile_said and bool(self.what)
            if say:
                self._compile_said = True
            n, what = min(self.done + 1, self.total), self.what
        if not first or not what:
            return
        if self._bar is not None:
            self._bar.update(self._task, description=f"{what}: compiling {name} (numba, first run)")
        elif say:
            self._line(f"{self.verb} {n}/{self.total}: {what}: compiling numba kernels "
                       f"({name}; once per install)")

    def _compile_ended(self, name: str) -> None:
        with self._lock:
            if name in self._compiling:
                self._compiling.remove(name)
            idle, what = not self._compiling, self.what
        if idle and what and self._bar is not None:
            self._bar.update(self._task, description=what)

    def _listen_to_numba(self) -> None:
        try:
            from numba.core import event
        except ImportError:  # the verbs that need no kernels run without numba
            return
        steps = self

        class _Compiles(event.Listener):
            def on_start(self, ev: Any) -> None:
                steps._compile_started(_fn_name(ev))

            def on_end(self, ev: Any) -> None:
                steps._compile_ended(_fn_name(ev))

        self._listener = _Compiles()
        event.register("numba:compile", self._listener)

    def _unlisten(self) -> None:
        if self._listener is None:
            return
        from numba.core import event

        try:
            event.unregister("numba:compile", self._listener)
        except (KeyError, ValueError):
            pass
        self._listener = None


def _fn_name(ev: Any) -> str:
    """The compiled function's name (module.qualname) from a numba compile event."""
    d = (getattr(ev, "data", None) or {}).get("dispatcher")
    fn = getattr(d, "py_func", None)
    if fn is None:
        return "a kernel"
    return f"{fn.__module__.rsplit('.', 1)[-1]}.{fn.__qualname__}"
