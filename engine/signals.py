"""Stop signals: SIGINT, SIGTERM and SIGHUP all mean "stop cleanly", the second one "stop now".

An operator's Ctrl-C, ``kill``, systemd, ``docker stop`` and a closed terminal send different
signals for the same wish. Python turns only SIGINT into an exception; SIGTERM and SIGHUP kill
the process on the spot, so without this module no ``finally`` runs: workers, segments and a
half-written session are left behind.

:func:`stop_signals` installs one handler for all three for the length of a ``with`` block (in
the main thread; elsewhere it does nothing, as Python allows handlers only there):

* the first signal raises :class:`Interrupted` (a KeyboardInterrupt, so every existing
  ``except KeyboardInterrupt`` path, the clean stop, handles it alike) in the main thread;
* while a block runs under :func:`shielded` (a stop in progress, the session being completed)
  a signal raises nothing: it is recorded and the "again" callbacks run;
* every later signal runs the "again" callbacks (``Engine.hurry``: kill the workers instead of
  waiting for them) and raises nothing, so the stop still completes the session.

Code that owns a resource worth hurrying registers it with :func:`on_again` while a handler is
installed; with none installed that is a no-op.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
EXIT_INTERRUPTED = 130


class Interrupted(KeyboardInterrupt):
    """The first stop signal, raised where the main thread was."""

    def __init__(self, signum: int):
        self.signum = signum
        super().__init__(f"interrupted by {signal.Signals(signum).name}")


@dataclass
class _Handler:
    raise_first: bool = True
    received: list[int] = field(default_factory=list)
    again: list[Callable[[], None]] = field(default_factory=list)
    shield_depth: int = 0

    def __call__(self, signum: int, frame: object) -> None:
        self.received.append(signum)
        if len(self.received) == 1 and self.raise_first and not self.shield_depth:
            raise Interrupted(signum)
        for cb in list(self.again):
            try:
                cb()
            except Exception:  # a hurry that fails must not break the stop it hurries
                pass


_active: _Handler | None = None


@contextmanager
def stop_signals(raise_first: bool = True,
                 on_signal: Callable[[int], None] | None = None) -> Iterator[_Handler | None]:
    """Handle SIGINT, SIGTERM and SIGHUP alike inside the block (main thread only), restoring
    the previous handlers after it. ``raise_first=False`` never raises: the first signal runs
    ``on_signal(signum)`` instead (the console asks its app to exit) and later ones the again
    callbacks. Yields the handler (``.received`` lists the signals seen), or None off the main
    thread."""
    global _active
    if threading.current_thread() is not threading.main_thread():
        yield None
        return
    handler = _Handler(raise_first=raise_first)
    if on_signal is not None:
        first = on_signal

        def on_first() -> None:
            if len(handler.received) == 1:
                first(handler.received[0])

        handler.again.insert(0, on_first)
    # a signal the process was started with ignored (SIGINT of a shell's background job,
    # SIGHUP under nohup) stays ignored: whoever started us asked for that
    previous = {s: h for s in STOP_SIGNALS if (h := signal.getsignal(s)) != signal.SIG_IGN}
    outer, _active = _active, handler
    try:
        for s in previous:
            signal.signal(s, handler)
        yield handler
    finally:
        for s, h in previous.items():
            signal.signal(s, h if h is not None else signal.SIG_DFL)
        _active = outer


def on_again(callback: Callable[[], None]) -> Callable[[], None]:
    """Run ``callback`` on every stop signal after the first (and on a first one that arrives
    while shielded). Returns a function that unregisters it."""
    handler = _active
    if handler is None:
        return lambda: None
    handler.again.append(callback)

    def remove() -> None:
        if callback in handler.again:
            handler.again.remove(callback)

    return remove


@contextmanager
def shielded() -> Iterator[None]:
    """A block that a stop signal must not cut short (stopping the engine, completing the
    session): a signal meanwhile is recorded and hurries, but raises nothing."""
    handler = _active
    if handler is None:
        yield
        return
    handler.shield_depth += 1
    try:
        yield
    finally:
        handler.shield_depth -= 1


def received() -> list[int]:
    """The stop signals the active handler has seen (empty with none installed)."""
    return list(_active.received) if _active is not None else []
