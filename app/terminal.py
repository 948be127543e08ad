"""The console's terminal going away, and a quit asked for from outside the app's loop.

A terminal that goes away (its tmux session killed, an ssh connection dropped, a pty master
closed) hangs up the console's tty: from then on every read of it returns end-of-file at once
and every write fails with EIO. Textual's input thread treats an empty read as "nothing yet" and
selects again, so it spins a core; its output queue fills once the writer thread has died of
EIO, and the next write blocks the app's own thread for good. A console in that state never
exits: it holds its engine, workers and semaphores until someone kills it. A SIGHUP does not
always come to save it (``nohup``, a shell that does not forward it, a signal that came before
the app's loop ran and so could not reach it).

:class:`TerminalWatch` is what run_app puts around the app: a thread that polls the console's
tty (stdin and stderr, the two Textual uses) for a hang-up every POLL_S, and that delivers a quit
asked for by a signal handler once the app's loop is there to take it. On a hang-up it points
stdin at a pipe that has no data until the driver stops (Textual's reader then waits instead of
spinning, and sees end-of-file once it is asked to stop) and stdout
and stderr at /dev/null (the app's last frames, its restore sequences and any late line are
written nowhere instead of failing), then asks the app to exit with EXIT_INTERRUPTED; the app
then ends the normal way, which stops its engine and completes its session. The driver it hands
the app (:meth:`TerminalWatch.driver_class`) drops writes once the terminal is gone or its writer
thread has died, so no write can block the app's thread on a full queue.
"""

from __future__ import annotations

import os
import select
import sys
import threading
from typing import Any

POLL_S = 0.25  # how often the tty is checked: a hung-up console exits within about this
_GONE_MASK = select.POLLHUP | select.POLLERR | select.POLLNVAL


def hung_up(fd: int) -> bool:
    """Whether ``fd``'s far end is gone: a tty hung up (its pty master closed), a pipe whose
    writer closed, a descriptor no longer open. Reads nothing: poll with no events asked
    reports only these conditions."""
    p = select.poll()
    try:
        p.register(fd, 0)
        ready = p.poll(0)
    except (OSError, ValueError):
        return True
    return any(ev & _GONE_MASK for _fd, ev in ready)


def _std_fds() -> list[int]:
    """The descriptors Textual reads and writes: stdin, and stderr (its output)."""
    fds = []
    for stream in (sys.__stdin__, sys.__stderr__):
        try:
            fds.append(stream.fileno())  # type: ignore[union-attr]
        except (AttributeError, OSError, ValueError):
            continue
    return fds


_kept: list[int] = []  # the write end of the pipe that stands in for stdin, kept open


def point_away() -> None:
    """Stand in for a terminal that is gone: stdin becomes a pipe that never has data (a read
    would wait, not return end-of-file), stdout and stderr /dev/null."""
    try:
        r, w = os.pipe()
        os.dup2(r, 0)
        os.close(r)
        _kept.append(w)
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.dup2(null, 2)
        os.close(null)
    except OSError:  # nothing better to do: the exit that follows still runs
        pass


def release_stdin() -> None:
    """Close the stand-in pipe's write end: a read of stdin blocked on it returns end-of-file,
    so the input thread can see it is asked to stop."""
    while _kept:
        try:
            os.close(_kept.pop())
        except OSError:
            pass


class TerminalWatch:
    """Watches the console's terminal for the length of ``app.run()`` and quits the app, with
    exit status ``code``, when it goes away or when :meth:`request` is called (a stop signal)."""

    def __init__(self, app: Any, code: int, poll_s: float = POLL_S,
                 fds: list[int] | None = None) -> None:
        self.app = app
        self.code = code
        self.poll_s = poll_s
        self.fds = fds if fds is not None else _std_fds()
        self.gone = threading.Event()  # the terminal went away
        self.requested = threading.Event()  # a quit was asked for (gone, or a signal)
        self._delivered = False
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, name="sealtop-terminal", daemon=True)

    def __enter__(self) -> TerminalWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._thread.join(timeout=2)
        release_stdin()

    # ---- what run_app and the signal handler call ------------------------------------------

    def check(self) -> bool:
        """Look at the terminal now; True (and the quit asked for) when it is gone."""
        if self.gone.is_set():
            return True
        if self.fds and any(hung_up(fd) for fd in self.fds):
            with self._lock:
                if not self.gone.is_set():
                    self.gone.set()
                    point_away()
            self.request()
            return True
        return False

    def request(self) -> None:
        """Ask the app to exit with ``code``, now if its loop runs, else once it does."""
        self.requested.set()
        self._deliver()

    # ---- the watching thread -----------------------------------------------------------------

    def _deliver(self) -> None:
        with self._lock:
            if self._delivered:
                return
            loop = getattr(self.app, "_loop", None)  # Textual's: set while app.run() runs
            if loop is None or not loop.is_running():
                return
            try:
                loop.call_soon_threadsafe(lambda: self.app.exit(return_code=self.code))
            except RuntimeError:  # the loop closed meanwhile: the app has ended anyway
                pass
            self._delivered = True

    def _run(self) -> None:
        while not self._done.wait(self.poll_s):
            self.check()
            if self.requested.is_set():
                self._deliver()

    def driver_class(self, base: type) -> type:
        """``base`` (Textual's LinuxDriver) made safe for a terminal that goes away: no write
        once it has gone or the writer thread has died (a full queue would block the app),
        no restart of application mode on the SIGCONT that comes with a hang-up, and an input
        thread that is let go of the stand-in stdin when the app stops."""
        watch = self

        class ConsoleDriver(base):
            def write(self, data: str) -> None:
                writer = getattr(self, "_writer_thread", None)
                if watch.gone.is_set() or (writer is not None and not writer.is_alive()):
                    return
                super().write(data)

            def disable_input(self) -> None:
                if watch.gone.is_set():  # the reader waits on the stand-in pipe: end it
                    release_stdin()
                super().disable_input()

            def _sigcont_application(self, *args: Any) -> None:
                if watch.check():
                    return
                super()._sigcont_application(*args)

        ConsoleDriver.__name__ = ConsoleDriver.__qualname__ = f"Console{base.__name__}"
        return ConsoleDriver
