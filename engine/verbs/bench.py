"""The ``bench`` verbs: ``kernels`` (kernels.bench), ``prove`` (engine/verbs/bench_prove.py),
``synth`` (witness + a/b/c evaluation) and ``pipeline`` (the whole engine; engine/verbs/runner.py),
with ``--set KEY=VALUE`` overrides checked as the config file's keys are."""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Sequence
from pathlib import Path

from engine.verbs.common import (
    EXIT_OK,
    EXIT_REJECTED,
    PROG,
    CliError,
    add_backend_arg,
    add_sub_verbs,
    backend,
    check_output,
    check_record,
    say,
)
from engine.verbs.run import add_cluster_arg, add_watch_args, cluster_address, watch
from kernels.textfmt import fmt_bytes, table


# ---------------------------------------------------------------- bench
def add_bench(sub) -> None:
    p = sub.add_parser("bench", help="benchmarks: kernels | prove | synth | pipeline",
                       description="Benchmarks, each with its --help: `sealtop bench kernels --help`, "
                       "`sealtop bench prove --help`, `sealtop bench synth --help`, `sealtop bench pipeline --help`.")
    bsub = add_sub_verbs(p, "bench_verb")
    for add in (_add_bench_kernels, _add_bench_prove, _add_bench_synth, _add_bench_pipeline):
        add(bsub)


def _add_bench_kernels(bsub) -> None:
    p = bsub.add_parser("kernels", help="time the kernels alone (delegates to python -m kernels.bench)",
                        add_help=False, description="See `python -m kernels.bench --help`.")
    p.set_defaults(func=_cmd_bench_kernels, passthrough=True)


def _cmd_bench_kernels(args: argparse.Namespace) -> int:
    from kernels import bench

    return int(bench.main(args.extra, prog=f"{PROG} bench kernels") or 0)


def _add_bench_prove(bsub) -> None:
    p = bsub.add_parser("prove", help="full proofs: 2^k chains vs snarkjs, or presets with the time broken down",
                        description="With --sizes: full proofs (key load (checksum verified on first load, then stamped), evaluation, NTTs, MSMs, "
                        "assembly) of multiplication chains with exactly 2^k constraints; the figure is the median "
                        "wall time, against snarkjs's median `groth16 prove` on the same 2-core machine "
                        "(docs/ANCHORS.md). With --preset: one full partition prove of each preset (key made "
                        "if missing, loaded once), witness, evaluation, each kernel group, start/finish wall and "
                        "total, medians after a warm-up, the first proof verified. Keys are INSECURE test "
                        "parameters, made once and cached.")
    what = p.add_mutually_exclusive_group()
    what.add_argument("--sizes", default=None,
                      help="log2 constraint counts of chains, comma-separated (default 12,14,16)")
    what.add_argument("--preset", default=None, metavar="P[,P...]",
                      help="presets to prove one partition of, comma-separated (porep: tiny, small, medium, "
                      "large, porep-32g; also cubic, chain-N)")
    p.add_argument("--repeat", type=int, default=3, help="timed proofs per size or preset after a warm-up (default 3)")
    p.add_argument("--cache-dir", default=None, metavar="DIR",
                   help="where keys (and preset circuits) are cached (default $SEALTOP_PARAMS or "
                   "~/.cache/sealtop/params)")
    p.add_argument("--json", action="store_true", help="print the rows as JSON")
    add_backend_arg(p)
    p.set_defaults(func=_cmd_bench_prove)


def _param_dir(arg: str | None) -> Path:
    d = Path(arg or os.environ.get("SEALTOP_PARAMS") or Path.home() / ".cache" / "sealtop" / "params")
    try:
        d.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CliError(f"cannot create the key cache {d}: {exc.strerror or exc}") from None
    return d


def _cmd_bench_prove(args: argparse.Namespace) -> int:
    from engine.verbs import bench_prove

    if args.preset is not None:
        from engine.pipeline.circuits import PresetError

        try:
            presets = bench_prove.parse_presets(args.preset)
        except PresetError as exc:
            raise CliError(f"--preset: {exc}") from None
    else:
        text = args.sizes if args.sizes is not None else "12,14,16"
        try:
            sizes = [int(s.strip().removeprefix("2^")) for s in text.split(",") if s.strip()]
        except ValueError:
            raise CliError(f"--sizes must be log2 sizes like 12,14,16, got {text!r}") from None
        if not sizes or any(not 4 <= k <= 26 for k in sizes):
            raise CliError("--sizes: each log2 size must be in 4..26")
    if args.repeat < 1:
        raise CliError(f"--repeat must be at least 1, got {args.repeat}")
    be = backend(args.backend)
    cache = _param_dir(args.cache_dir)
    if args.preset is not None:
        say(f"bench prove on the {be.name} backend; presets {', '.join(presets)}")
        rows = bench_prove.bench_presets(presets, be, args.repeat, cache)
        print(json.dumps(rows, indent=2) if args.json else bench_prove.format_presets(rows))
    else:
        say(f"bench prove on the {be.name} backend; sizes {', '.join(f'2^{k}' for k in sizes)}")
        rows = bench_prove.bench_chains(sizes, be, args.repeat, cache)
        print(json.dumps(rows, indent=2) if args.json else bench_prove.format_chains(rows))
    return EXIT_OK if all(r["verified"] for r in rows) else EXIT_REJECTED


def _add_bench_synth(bsub) -> None:
    p = bsub.add_parser("synth", help="synthesis of porep partitions: witness + a/b/c evaluation",
                        description="Builds (or loads from the cache) the porep circuit of each preset, then "
                        "times witness generation and a/b/c evaluation of one partition after a warm-up. The "
                        "reference is a goal of 1 M constraints per second per core.")
    p.add_argument("--preset", default="small,medium",
                   help="porep presets, comma-separated (tiny, small, medium, large, porep-32g); default small,medium")
    p.add_argument("--repeat", type=int, default=3, help="timed rounds after a warm-up (default 3)")
    p.add_argument("--cache-dir", default=None, metavar="DIR", help="circuit cache (default ~/.cache/sealtop/circuits)")
    p.add_argument("--json", action="store_true", help="print the rows as JSON")
    p.set_defaults(func=_cmd_bench_synth)


SYNTH_GOAL_CPS_PER_CORE = 1e6  # the goal for whole synthesis (witness + eval), per core, at `medium`


def format_bench_synth(rows: Sequence[dict]) -> str:
    head = ["preset", "constraints", "nonzeros", "0/1 aux", "witness ms", "eval ms", "M c/s/core",
            "goal ratio", "B/constraint", "peak RSS"]
    body = [[
        r["preset"], f"{r['constraints']:,}", f"{r['nonzeros']:,}", f"{100 * r['aux_01_share']:.1f}%",
        f"{r['witness_ms']:.1f}", f"{r['eval_ms']:.1f}", f"{r['constraints_per_s_per_core'] / 1e6:.2f}",
        f"{SYNTH_GOAL_CPS_PER_CORE / r['constraints_per_s_per_core']:.2f}",
        f"{r['bytes_per_constraint']:.0f}", fmt_bytes(r["peak_rss_bytes"]),
    ] for r in rows]
    lines = table(head, body)
    lines.append("M c/s/core: constraints / (witness + eval) / threads; goal ratio = 1 M c/s/core goal / ours "
                 "(below 1.0 beats the goal); B/constraint: a, b, c and z bytes held per constraint (floor 128).")
    if rows:
        lines.append(f"threads: {rows[0]['threads']}; host CPUs: {os.cpu_count()}")
    return "\n".join(lines)


def _cmd_bench_synth(args: argparse.Namespace) -> int:
    from engine.circuit.porep import PRESETS
    from engine.synthesis import bench_synth

    presets = [p.strip() for p in args.preset.split(",") if p.strip()]
    bad = [p for p in presets if p not in PRESETS]
    if not presets or bad:
        raise CliError(f"--preset: unknown preset {', '.join(bad) or '(none)'}; choose from {', '.join(PRESETS)}")
    if args.repeat < 1:
        raise CliError(f"--repeat must be at least 1, got {args.repeat}")
    rows = []
    for p in presets:
        say(f"bench synth {p}: building or loading the circuit")
        rows.append(bench_synth(p, cache_dir=args.cache_dir, repeats=args.repeat))
    print(json.dumps(rows, indent=2, default=str) if args.json else format_bench_synth(rows))
    return EXIT_OK if all(r.get("satisfied", True) for r in rows) else EXIT_REJECTED



def _add_bench_pipeline(bsub) -> None:
    p = bsub.add_parser("pipeline", help="the whole engine on a preset: GPU busy %%, s/proof, memory vs model",
                        description="Runs the engine on N jobs and reports seconds per proof, GPU busy %, the "
                        "gap between GPU wrapper and kernel time, and peak memory against the model "
                        "(partition_workers + capacity + GPU slots) x bytes per partition + key. "
                        "--matrix cuzk runs capacity {1, workers} x permit_release; --matrix dealloc runs "
                        "sync against async; --matrix lone runs the N jobs together, then one job alone "
                        "(with --one-engine on the keys a warm-up job made).")
    p.add_argument("--preset", default="tiny", help="chain-N, cubic, or a porep preset (default tiny)")
    p.add_argument("--jobs", type=int, default=4, metavar="N", help="jobs (default 4)")
    p.add_argument("--json", default=None, metavar="OUT", help="write the report as JSON")
    p.add_argument("--config", default=None, metavar="FILE", help="base config (default: built-in defaults)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override a config key, e.g. --set partition_workers=4 (repeatable; TOML values)")
    p.add_argument("--matrix", choices=("cuzk", "dealloc", "lone"), default=None, help="run a comparison table")
    p.add_argument("--one-engine", action="store_true",
                   help="with --matrix: every variant in one engine that keeps its keys, switching "
                   "the knobs and policies between jobs (one session file with --record)")
    p.add_argument("--record", default=None, metavar="FILE",
                   help="record the run's events to a session file (with --matrix, one file per variant, "
                   "named FILE with the variant inserted before the extension)")
    add_cluster_arg(p)
    add_watch_args(p)
    p.set_defaults(func=_cmd_bench_pipeline)


def _overrides(pairs: Sequence[str]) -> dict:
    """``--set KEY=VALUE`` pairs as checked settings: VALUE is read as TOML (a bare word such
    as cpu or synthesized as a string) and goes through the config file's own check
    (engine.config.validate), so a bad value is one line here, before any work."""
    import tomllib

    from engine.config import validate

    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        key = key.strip()
        if not sep or not key:
            raise CliError(f"--set needs KEY=VALUE, got {pair!r}")
        try:
            parsed = tomllib.loads(f"v = {value}")["v"]
        except tomllib.TOMLDecodeError:
            parsed = value.strip()  # a bare word such as cpu or synthesized
        try:
            out[key] = validate(key, parsed)
        except ValueError as exc:
            raise CliError(f"--set {exc}") from None
    return out


def _cmd_bench_pipeline(args: argparse.Namespace) -> int:
    from engine.verbs.bench_pipeline import Bench, bench_matrix, bench_pipeline

    if args.jobs < 1:
        raise CliError(f"--jobs must be at least 1, got {args.jobs}")
    if args.json is not None:
        check_output(args.json, "--json")
    check_record(args.record)
    overrides = _overrides(args.set)
    how = watch(args)
    if args.cluster is not None:
        from engine.verbs.farm_run import bench_cluster

        if args.matrix:
            raise CliError("--matrix runs on one machine; leave out --cluster")
        return bench_cluster(Bench(args.preset, args.jobs, args.json, args.config, overrides,
                                   args.record),
                             cluster_address(args.cluster))
    if args.one_engine and not args.matrix:
        raise CliError("--one-engine goes with --matrix")
    b = Bench(args.preset, args.jobs, args.json, args.config, overrides, args.record, how,
              args.one_engine)
    return bench_matrix(args.matrix, b) if args.matrix else bench_pipeline(b)
