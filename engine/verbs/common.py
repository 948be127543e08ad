"""What every headless verb module shares: the one-line usage errors (OneLineParser, from
kernels.textfmt, where the kernel benchmark uses it too), CliError, the exit codes, stderr lines
and the --backend argument. The console's parser (app/main.py) uses the same OneLineParser, so a
bad argument reads the same everywhere: ``sealtop: VERB: what (see ...)``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from kernels.textfmt import OneLineParser

PROG = "sealtop"
# The console's verbs, which app/main.py opens (`replay FILE` without --summary is one too):
# named here, below the console, so `sealtop --help`, `python -m engine --help` and the
# unknown-verb message all list every verb there is.
CONSOLE_VERBS = ("replay", "compare", "attach", "serve")
EXIT_OK, EXIT_REJECTED, EXIT_USAGE = 0, 1, 2


class CliError(Exception):
    """A user-facing failure: the message is printed as one line."""


def check_output(path: str | Path, flag: str) -> None:
    """An output file's place, checked before the work that fills it: a directory there, or a
    folder that is missing, failed only at the write, after a setup's, a proof's or a
    benchmark's minutes."""
    p = Path(path)
    if p.is_dir():
        raise CliError(f"{flag}: {p} is a directory")
    if not p.parent.is_dir():
        raise CliError(f"{flag}: folder {p.parent} does not exist")


def check_record(path: str | None) -> None:
    """--record's target refused before any work, as the verb's one line (``sealtop: run:
    cannot record to DIR: it is a directory``)."""
    if path is None:
        return
    from engine.stream.recorder import RecordingError, check_target

    try:
        check_target(path)
    except RecordingError as exc:
        raise CliError(str(exc)) from None


def add_sub_verbs(p: argparse.ArgumentParser, dest: str, metavar: str = "WHAT") -> Any:
    """The verbs under ``p`` (sealtop VERB, bench WHAT, cluster WHAT): one is required, and each
    reports a bad argument through OneLineParser."""
    sub = p.add_subparsers(dest=dest, metavar=metavar, parser_class=OneLineParser)
    sub.required = True
    return sub


def say(msg: str) -> None:
    """A line for the operator on stderr (stdout carries the verb's result)."""
    print(msg, file=sys.stderr, flush=True)


def add_backend_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--backend", choices=("cpu", "cuda", "auto"), default="auto",
                   help="kernel backend (default auto: cuda where it runs, else cpu)")


def backend(name: str) -> Any:
    """The kernel backend by name (imported on use: the verbs that need none start fast)."""
    from kernels.backend import get_backend

    return get_backend(name)
