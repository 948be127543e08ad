"""`sealtop attach` and `sealtop serve`: the console on an engine that is already running.

An engine started by `sealtop` or `sealtop run` offers a local socket (engine/attach.py).
`attach` opens the console in this terminal on it; `serve` puts the same console in a browser
through textual-serve. textual-serve starts one process per browser connection, so `serve` never
starts an engine: each connection runs `attach` on the one engine. Both are read-only unless
asked otherwise (`attach --control`, `serve --allow-control`), and `serve` binds 127.0.0.1
unless given another host.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from typing import Any

from app.defaults import refresh_seconds
from engine.verbs.common import OneLineParser
from themes import THEME_NAMES

THEME_CHOICES = tuple(THEME_NAMES)


def attach_parser() -> argparse.ArgumentParser:
    p = OneLineParser(prog="sealtop attach",
                      description="The console on a running engine (read-only unless --control).")
    p.add_argument("--engine", metavar="SOCKET",
                   help="the engine's socket (default: the one running engine of this user)")
    p.add_argument("--control", action="store_true",
                   help="allow tuning keys and submitting jobs on that engine")
    p.add_argument("--theme", choices=THEME_CHOICES, help="start with this theme (t switches live)")
    p.add_argument("--refresh", type=refresh_seconds, default=1.0, metavar="S",
                   help="refresh interval in seconds, 0.05 to 60 (default 1)")
    return p


def serve_parser() -> argparse.ArgumentParser:
    p = OneLineParser(prog="sealtop serve",
                      description="The console in a browser, attached to a running engine.")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    p.add_argument("--port", type=_port, default=8000, help="port (default 8000)")
    p.add_argument("--engine", metavar="SOCKET",
                   help="the engine's socket (default: the one running engine of this user)")
    p.add_argument("--allow-control", action="store_true",
                   help="let browsers tune and submit (default: read-only)")
    p.add_argument("--theme", choices=THEME_CHOICES, help="the browsers' console starts with this theme")
    return p


def _port(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a port number, got {text!r}") from None
    if not 1 <= v <= 65535:
        raise argparse.ArgumentTypeError(f"must be 1..65535, got {v}")
    return v


def build_attach_app(argv: list[str]) -> Any:
    """The console on a RemoteEngine; ValueError (one line) when no engine can be reached."""
    from app.console import SealtopApp
    from engine.attach import AttachError, RemoteEngine, find_engine

    a = attach_parser().parse_args(argv)
    try:
        path = find_engine(a.engine)
        RemoteEngine(path).stop()  # reach it now, so a dead socket is one line, not a notice
    except AttachError as exc:
        raise ValueError(str(exc)) from None
    app = SealtopApp("live", engine_factory=lambda: RemoteEngine(path), readonly=not a.control,
                     refresh=a.refresh, theme=a.theme, autofeed=0)
    app.attached_to = str(path)  # a read-only console's notice says how to get one that tunes
    return app


def serve(argv: list[str]) -> int:
    """Run textual-serve until interrupted; 2 with one line when it cannot."""
    a = serve_parser().parse_args(argv)
    try:
        from textual_serve.server import Server
    except ImportError:
        print("sealtop: serve: needs textual-serve (pip install 'sealtop[serve]')", file=sys.stderr)
        return 2
    from engine.attach import AttachError, find_engine

    try:
        path = find_engine(a.engine)
    except AttachError as exc:
        print(f"sealtop: serve: {exc}", file=sys.stderr)
        return 2
    cmd = [sys.executable, "-m", "app.main", "attach", "--engine", str(path)]
    if a.allow_control:
        cmd.append("--control")
    if a.theme:
        cmd += ["--theme", a.theme]
    mode = "control allowed" if a.allow_control else "read-only"
    print(f"sealtop serve: http://{a.host}:{a.port}/ ({mode}) attached to {path}", flush=True)
    Server(shlex.join(cmd), host=a.host, port=a.port, title="sealtop").serve()
    return 0
