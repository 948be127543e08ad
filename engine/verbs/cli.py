"""The headless verbs: ``sealtop VERB`` and ``python -m engine VERB``.

    setup    make a proving key file and a verification key for a built-in example circuit
    prove    prove with a proving key file (reads only the key, the R1CS and the witness)
    verify   check a proof with py_arkworks_bls12381's pairing (never our own arithmetic)
    export   write snarkjs JSON (verification_key.json, proof.json, public.json)
    run      the embedded engine headless on a config; replay FILE --summary its recording
    bench    kernels (kernels.bench) | prove (engine/verbs/bench_prove.py) | synth | pipeline
    cluster  the farm: a Dask scheduler or one host's worker
    seal     seal a Filecoin sector on the CPU and write its C1 JSON (engine/verbs/seal.py)

The verbs live in modules by what they do: engine/verbs/proofs.py (setup, prove, verify,
export), engine/verbs/run.py (run, replay, cluster), engine/verbs/bench.py (bench) and
engine/verbs/seal.py (seal); what they share (the one-line parser, CliError, exit codes) is
engine/verbs/common.py. Each verb is one
``add_VERB(subparsers)`` function that registers its arguments and handler; adding a verb means
adding one function to VERBS. Every error is one line ``sealtop: VERB: what`` on stderr: bad
input exits 2, a rejected proof 1; never a traceback (SEALTOP_DEBUG=1 shows one for an
unexpected error).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable

from engine.verbs import bench, proofs, run, seal
from engine.verbs.common import (
    CONSOLE_VERBS,
    EXIT_USAGE,
    PROG,
    CliError,
    OneLineParser,
    add_sub_verbs,
)
from kernels.textfmt import error_line

VERBS: list[Callable[[argparse._SubParsersAction], None]] = [
    proofs.add_setup, proofs.add_prove, proofs.add_verify, proofs.add_export,
    run.add_run, run.add_replay, bench.add_bench, run.add_cluster,
    seal.add_seal,
]


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog=PROG, description="sealtop headless verbs (Groth16 over BLS12-381).",
                           epilog=f"console verbs (`sealtop` opens them): {', '.join(CONSOLE_VERBS)}")
    sub = add_sub_verbs(parser, "verb", "VERB")
    for add in VERBS:
        add(sub)
    return parser


def headless_verbs() -> list[str]:
    """The verbs this CLI runs, in --help's order."""
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return list(sub.choices)


def all_verbs() -> list[str]:
    """Every verb of ``sealtop``: the console's, then the headless ones."""
    return [*CONSOLE_VERBS, *(v for v in headless_verbs() if v not in CONSOLE_VERBS)]


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    first = argv[0] if argv else ""
    if first and not first.startswith("-") and first not in headless_verbs():
        if first in CONSOLE_VERBS:  # `python -m engine compare ...`: the console opens those
            msg = f"{first!r} is a console verb: run it as `sealtop {first} ...`"
        else:
            msg = f"unknown verb {first!r} (verbs: {', '.join(all_verbs())})"
        print(error_line(PROG, msg), file=sys.stderr)
        return EXIT_USAGE
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    verb = " ".join(v for v in (args.verb, getattr(args, "bench_verb", None),
                                getattr(args, "cluster_verb", None)) if v)
    where = f"{PROG} {verb}"
    if extra and not getattr(args, "passthrough", False):
        print(error_line(where, f"unrecognized arguments: {' '.join(extra)} (see `{where} --help`)"),
              file=sys.stderr)
        return EXIT_USAGE
    args.extra = extra
    from engine.signals import stop_signals
    from kernels.backend import BackendUnavailable

    try:
        with stop_signals():  # SIGINT, SIGTERM and SIGHUP alike: a clean stop, exit 130
            return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print(error_line(where, "interrupted"), file=sys.stderr)
        return 130
    except BrokenPipeError:  # output piped into `head` and closed: stop quietly, as Unix tools do
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except (CliError, BackendUnavailable, ValueError, OSError) as exc:
        # KeyFileError, ProofFormatError, WitnessError, KeyMismatchError, VerifyError are ValueErrors
        print(error_line(where, str(exc) or type(exc).__name__), file=sys.stderr)
        return EXIT_USAGE
    except Exception as exc:  # a bug: still one line, unless debugging
        if os.environ.get("SEALTOP_DEBUG"):
            raise
        first_line = (str(exc).strip().splitlines() or [""])[0]
        print(error_line(where, f"unexpected error: {type(exc).__name__}: {first_line} "
                                "(SEALTOP_DEBUG=1 shows the traceback)"), file=sys.stderr)
        return 1
