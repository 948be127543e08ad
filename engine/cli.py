"""The headless verbs: ``sealtop VERB`` and ``python -m engine VERB``.

    setup    make a proving key file and a verification key for a built-in example circuit
    prove    prove with a proving key file (reads only the key, the R1CS and the witness)
    verify   check a proof with py_arkworks_bls12381's pairing (never our own arithmetic)
    export   write snarkjs JSON (verification_key.json, proof.json, public.json)
    bench    kernels (delegates to kernels.bench) | prove (full proofs: chains vs snarkjs, or a
             preset's partition with the time broken down; engine/bench_prove.py) | synth | pipeline

Each verb is one ``_add_VERB(subparsers)`` function that registers its arguments and handler;
adding a verb means adding one function to VERBS (bench sub-verbs: BENCH_VERBS). Bad input
gives one line on stderr and exit 2; a rejected proof exits 1; never a traceback (set
SEALTOP_DEBUG=1 to see one for an unexpected error).

It is longer than the house's ~600 lines because every verb's arguments live here beside its
short handler; a verb with real work keeps it in its own module (engine.runner,
engine.bench_prove, engine.cluster.run).
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from kernels.textfmt import fmt_bytes, table

PROG = "sealtop"
EXIT_OK, EXIT_REJECTED, EXIT_USAGE = 0, 1, 2


class CliError(Exception):
    """A user-facing failure: the message is printed as one line."""


class _Parser(argparse.ArgumentParser):
    """argparse that reports a bad argument in one line instead of usage + message."""

    def error(self, message: str) -> None:  # type: ignore[override]
        print(f"{self.prog}: error: {message} (see --help)", file=sys.stderr)
        raise SystemExit(EXIT_USAGE)


def _say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- shared argument helpers
def _add_circuit_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--circuit", choices=("cubic", "chain"), default="chain",
                   help="built-in example: cubic (x^3 + x + 5 = y) or chain (n multiplications); default chain")
    p.add_argument("--n", type=int, default=None, metavar="N",
                   help="chain: number of multiplications (constraints = N + 2)")
    p.add_argument("--log-constraints", type=int, default=None, metavar="K",
                   help="chain: pick N so the circuit has exactly 2^K constraints")
    p.add_argument("--preset", default=None, metavar="NAME",
                   help="a porep partition instead of an example (tiny, small, ...; --x is the sector's seed); "
                   "its public-input file is the statement, from which verify derives every input")


def _circuit(args: argparse.Namespace):
    from engine.groth16 import examples

    if getattr(args, "preset", None):
        from engine.circuit.porep import PRESETS

        if args.preset not in PRESETS:
            raise CliError(f"--preset: unknown porep preset {args.preset!r}; choose from {', '.join(PRESETS)}")
        return examples.porep_circuit(args.preset)
    if args.circuit == "chain":
        if args.n is None and args.log_constraints is None:
            raise CliError("the chain circuit needs --n N or --log-constraints K")
        if args.log_constraints is not None:
            if not 2 <= args.log_constraints <= 26:
                raise CliError(f"--log-constraints must be in 2..26, got {args.log_constraints}")
            return examples.chain_for_constraints(1 << args.log_constraints)
        if args.n < 1:
            raise CliError(f"--n must be at least 1, got {args.n}")
    return examples.build(args.circuit, args.n)


def _backend(name: str):
    from kernels.backend import get_backend

    return get_backend(name)


def _add_backend_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--backend", choices=("cpu", "cuda", "auto"), default="auto",
                   help="kernel backend (default auto: cuda where it runs, else cpu)")


def _read_public(path: str) -> list[int]:
    try:
        with open(path) as f:
            obj = json.load(f)
    except OSError as exc:
        raise CliError(f"cannot read public inputs {path}: {exc.strerror or exc}") from None
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise CliError(f"public inputs {path} are not valid JSON") from None
    from engine.groth16.examples import public_from_json

    try:  # a list as it is; a porep statement: every input derived from it, none read
        return public_from_json(obj, path)
    except ValueError as exc:
        raise CliError(str(exc)) from None


def _read_proof(path: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise CliError(f"cannot read proof {path}: {exc.strerror or exc}") from None


def _write_bytes_atomic(path: str | Path, data: bytes) -> None:
    from engine.atomic import atomic_write

    with atomic_write(path, "wb") as f:
        f.write(data)


# ---------------------------------------------------------------- setup
def _add_setup(sub) -> None:
    p = sub.add_parser("setup", help="make a proving key and verification key (INSECURE test parameters)",
                       description="Deterministic Groth16 setup from a seed for a built-in circuit. "
                       "The parameters are INSECURE TEST PARAMETERS: anyone with the seed can forge proofs.")
    _add_circuit_args(p)
    p.add_argument("--seed", default="sealtop", help="seed for the toxic waste (default 'sealtop')")
    p.add_argument("--pk", default=None, metavar="FILE", help="proving key file to write (default CIRCUIT.pk)")
    p.add_argument("--vk", default=None, metavar="FILE", help="verification key to write (default CIRCUIT.vk.json)")
    _add_backend_arg(p)
    p.set_defaults(func=_cmd_setup)


def _cmd_setup(args: argparse.Namespace) -> int:
    from engine.groth16.keyfile import save_proving_key
    from engine.groth16.setup import INSECURE_LABEL, setup
    from engine.groth16.vkey import save_vk, verifying_key

    circuit = _circuit(args)
    pk_path = Path(args.pk or f"{circuit.name}.pk")
    vk_path = Path(args.vk or f"{circuit.name}.vk.json")
    for p in (pk_path, vk_path):
        if not p.parent.is_dir():
            raise CliError(f"folder {p.parent} does not exist")
    be = _backend(args.backend)
    r1cs = circuit.r1cs
    _say(f"WARNING: {INSECURE_LABEL}: the toxic waste is derived from the seed; never use these keys for real proofs")
    _say(f"setup {circuit.name}: {r1cs.num_constraints} constraints, {r1cs.num_vars} variables, backend {be.name}")
    t = time.perf_counter()
    pk = setup(r1cs, args.seed, be, progress=lambda m: _say(f"  {m}"))
    save_proving_key(pk, pk_path)
    save_vk(verifying_key(pk), vk_path)
    print(f"{INSECURE_LABEL}: wrote {pk_path} ({fmt_bytes(pk_path.stat().st_size)}) and {vk_path} "
          f"in {time.perf_counter() - t:.2f} s")
    return EXIT_OK


# ---------------------------------------------------------------- prove
def _add_prove(sub) -> None:
    p = sub.add_parser("prove", help="prove with a proving key file",
                       description="Build the example witness from --x and prove it with the key file.")
    _add_circuit_args(p)
    p.add_argument("--pk", required=True, metavar="FILE", help="proving key file (from setup)")
    p.add_argument("--x", default=None, help="the private input x (decimal; default random)")
    p.add_argument("--proof", default="proof.bin", metavar="FILE", help="192-byte proof to write (default proof.bin)")
    p.add_argument("--public", default="public.json", metavar="FILE",
                   help="public inputs to write, JSON list of decimal strings (default public.json)")
    p.add_argument("--no-precheck", action="store_true", help="skip the witness pre-check (a∘b = c)")
    p.add_argument("--no-checksum", action="store_true", help="skip the key file checksum check")
    p.add_argument("--no-verify", action="store_true",
                   help="write the proof without checking it first (by default prove verifies it "
                   "with the independent pairing and writes nothing, exit 1, if it does not verify)")
    _add_backend_arg(p)
    p.set_defaults(func=_cmd_prove)


def _cmd_prove(args: argparse.Namespace) -> int:
    from engine.groth16.examples import public_inputs
    from engine.groth16.keyfile import load_proving_key
    from engine.groth16.prove import prove
    from engine.groth16.vkey import write_json_atomic
    from kernels.constants import R_MOD

    circuit = _circuit(args)
    try:
        x = secrets.randbelow(R_MOD) if args.x is None else int(args.x, 0)
    except ValueError:
        raise CliError(f"--x must be an integer, got {args.x!r}") from None
    pk = load_proving_key(args.pk, verify_checksum=not args.no_checksum)
    be = _backend(args.backend)
    z = circuit.witness(x)
    timings: dict[str, float] = {}
    t = time.perf_counter()
    proof = prove(pk, circuit.r1cs, z, be, precheck=not args.no_precheck, timings=timings)
    wall = time.perf_counter() - t
    public = public_inputs(circuit.r1cs, z)
    checked = ""
    if not args.no_verify:
        from engine.groth16.verify import verify
        from engine.groth16.vkey import verifying_key

        problem = _malformed(proof)
        if problem is not None or not verify(verifying_key(pk), public, proof):
            why = f"it is malformed ({problem})" if problem else "it does not verify"
            _say(f"{PROG} prove: the proof was not written: {why}; the proving key {args.pk} may "
                 "be damaged (load it without --no-checksum to check)")
            return EXIT_REJECTED
        checked = ", verified"
    _write_bytes_atomic(args.proof, proof)
    write_json_atomic(args.public, circuit.statement(x) if circuit.statement else [str(v) for v in public])
    parts = " ".join(f"{k}={v:.0f}ms" for k, v in timings.items())
    label = " with INSECURE TEST PARAMETERS" if pk.insecure else ""
    print(f"proved {circuit.name}{label} in {wall:.2f} s ({be.name}{checked}): wrote {args.proof} "
          f"and {args.public}  [{parts}]")
    return EXIT_OK


def _malformed(proof: bytes) -> str | None:
    """None if ``proof`` is the canonical zcash encoding of three valid points, else why not.
    Both decoders must accept it: ours (engine.groth16.serialize), which refuses every
    non-canonical form (stray bits beside the infinity flag among them), and the oracle's."""
    from engine.groth16.serialize import ProofFormatError, decode_proof, encode_proof
    from engine.groth16.verify import decodes

    try:
        if encode_proof(decode_proof(proof)) != bytes(proof):
            return "not the canonical encoding of its points"
    except ProofFormatError as exc:
        return str(exc)
    return decodes(proof)


# ---------------------------------------------------------------- verify
def _add_verify(sub) -> None:
    p = sub.add_parser("verify", help="verify a proof (py_arkworks_bls12381 pairing)",
                       description="Exit 0 if the proof is valid, 1 if it is rejected, 2 on bad input.")
    p.add_argument("--vk", required=True, metavar="FILE", help="verification key JSON (from setup)")
    p.add_argument("--proof", default="proof.bin", metavar="FILE", help="192-byte proof (default proof.bin)")
    p.add_argument("--public", default="public.json", metavar="FILE", help="public inputs JSON (default public.json)")
    p.set_defaults(func=_cmd_verify)


def _cmd_verify(args: argparse.Namespace) -> int:
    from engine.groth16.verify import verify
    from engine.groth16.vkey import load_vk

    vk = load_vk(args.vk)
    public = _read_public(args.public)
    proof = _read_proof(args.proof)
    problem = _malformed(proof)
    if problem is not None:
        raise CliError(f"malformed proof {args.proof}: {problem}")
    if verify(vk, public, proof):
        print("valid: the proof verifies" + (" (INSECURE TEST PARAMETERS)" if vk.insecure else ""))
        return EXIT_OK
    print("INVALID: the proof does not verify for these public inputs and key")
    return EXIT_REJECTED


# ---------------------------------------------------------------- export
def _add_export(sub) -> None:
    p = sub.add_parser("export", help="write snarkjs JSON for a key, proof and public inputs",
                       description="Writes verification_key.json, and with --proof, proof.json and public.json.")
    p.add_argument("--vk", required=True, metavar="FILE", help="verification key JSON (from setup)")
    p.add_argument("--proof", default=None, metavar="FILE", help="192-byte proof to export")
    p.add_argument("--public", default=None, metavar="FILE", help="public inputs JSON to export")
    p.add_argument("--out-dir", default=".", metavar="DIR", help="where to write the snarkjs files (default .)")
    p.set_defaults(func=_cmd_export)


def _cmd_export(args: argparse.Namespace) -> int:
    from engine.groth16 import snarkjs
    from engine.groth16.serialize import ProofFormatError
    from engine.groth16.vkey import load_vk, write_json_atomic

    out = Path(args.out_dir)
    if not out.is_dir():
        raise CliError(f"folder {out} does not exist")
    vk = load_vk(args.vk)
    try:
        files: dict[str, Any] = {"verification_key.json": snarkjs.vk_json(vk)}
    except ProofFormatError as exc:
        raise CliError(f"bad verification key {args.vk}: {exc}") from None
    if args.proof:
        try:
            files["proof.json"] = snarkjs.proof_json(_read_proof(args.proof))
        except ProofFormatError as exc:
            raise CliError(f"malformed proof {args.proof}: {exc}") from None
    if args.public:
        public = _read_public(args.public)
        if len(public) != vk.n_public:
            raise CliError(f"the key has {vk.n_public} public inputs, {args.public} lists {len(public)}")
        files["public.json"] = snarkjs.public_json(public)
    for name, obj in files.items():
        write_json_atomic(out / name, obj)
    print(f"wrote {', '.join(str(out / n) for n in files)} (snarkjs groth16, curve bls12381)")
    return EXIT_OK


# ---------------------------------------------------------------- bench
def _add_bench(sub) -> None:
    p = sub.add_parser("bench", help="benchmarks: kernels | prove",
                       description="Benchmarks. `sealtop bench kernels --help` and `sealtop bench prove --help`.")
    bsub = p.add_subparsers(dest="bench_verb", metavar="WHAT", parser_class=_Parser)
    bsub.required = True
    for add in BENCH_VERBS:
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
                        "(../shared/anchors.md). With --preset: one full partition prove of each preset (key made "
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
    _add_backend_arg(p)
    p.set_defaults(func=_cmd_bench_prove)


def _param_dir(arg: str | None) -> Path:
    d = Path(arg or os.environ.get("SEALTOP_PARAMS") or Path.home() / ".cache" / "sealtop" / "params")
    try:
        d.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CliError(f"cannot create the key cache {d}: {exc.strerror or exc}") from None
    return d


def _cmd_bench_prove(args: argparse.Namespace) -> int:
    from engine import bench_prove

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
    be = _backend(args.backend)
    cache = _param_dir(args.cache_dir)
    if args.preset is not None:
        _say(f"bench prove on the {be.name} backend; presets {', '.join(presets)}")
        rows = bench_prove.bench_presets(presets, be, args.repeat, cache)
        print(json.dumps(rows, indent=2) if args.json else bench_prove.format_presets(rows))
    else:
        _say(f"bench prove on the {be.name} backend; sizes {', '.join(f'2^{k}' for k in sizes)}")
        rows = bench_prove.bench_chains(sizes, be, args.repeat, cache)
        print(json.dumps(rows, indent=2) if args.json else bench_prove.format_chains(rows))
    return EXIT_OK if all(r["verified"] for r in rows) else EXIT_REJECTED


def _add_bench_synth(bsub) -> None:
    p = bsub.add_parser("synth", help="synthesis of porep partitions: witness + a/b/c evaluation",
                        description="Builds (or loads from the cache) the porep circuit of each preset, then "
                        "times witness generation and a/b/c evaluation of one partition after a warm-up. The "
                        "reference is the issue's goal of 1 M constraints per second per core.")
    p.add_argument("--preset", default="small,medium",
                   help="porep presets, comma-separated (tiny, small, medium, large, porep-32g); default small,medium")
    p.add_argument("--repeat", type=int, default=3, help="timed rounds after a warm-up (default 3)")
    p.add_argument("--cache-dir", default=None, metavar="DIR", help="circuit cache (default ~/.cache/sealtop/circuits)")
    p.add_argument("--json", action="store_true", help="print the rows as JSON")
    p.set_defaults(func=_cmd_bench_synth)


SYNTH_GOAL_CPS_PER_CORE = 1e6  # the goal for whole synthesis (witness + eval), per core, at `medium`


def format_bench_synth(rows: Sequence[dict]) -> str:
    head = ["preset", "constraints", "nonzeros", "0/1 aux", "witness ms", "eval ms", "M c/s/core",
            "goal ratio", "B/constraint", "peak RSS MiB"]
    body = [[
        r["preset"], f"{r['constraints']:,}", f"{r['nonzeros']:,}", f"{100 * r['aux_01_share']:.1f}%",
        f"{r['witness_ms']:.1f}", f"{r['eval_ms']:.1f}", f"{r['constraints_per_s_per_core'] / 1e6:.2f}",
        f"{SYNTH_GOAL_CPS_PER_CORE / r['constraints_per_s_per_core']:.2f}",
        f"{r['bytes_per_constraint']:.0f}", f"{r['peak_rss_bytes'] / 2**20:.0f}",
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
        _say(f"bench synth {p}: building or loading the circuit")
        rows.append(bench_synth(p, cache_dir=args.cache_dir, repeats=args.repeat))
    print(json.dumps(rows, indent=2, default=str) if args.json else format_bench_synth(rows))
    return EXIT_OK if all(r.get("satisfied", True) for r in rows) else EXIT_REJECTED


def _add_run(sub) -> None:
    p = sub.add_parser("run", help="run the embedded engine headless on a config",
                       description="Starts the engine on a TOML config, submits N jobs, waits for them, and "
                       "prints the per-proof breakdown, the summary and the final counters (all computed "
                       "from the event stream).")
    p.add_argument("--config", required=True, metavar="FILE", help="engine config (see sample-configs/)")
    p.add_argument("--jobs", type=int, default=1, metavar="N", help="jobs to submit (default 1)")
    p.add_argument("--record", default=None, metavar="FILE", help="record the session (.jsonl, or .jsonl.gz)")
    _add_cluster_arg(p)
    _add_watch_args(p)
    p.set_defaults(func=_cmd_run)


def _add_watch_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--metrics", default=None, metavar="[HOST:]PORT",
                   help="serve Prometheus /metrics there for the run (no host: 127.0.0.1 only)")
    p.add_argument("--no-attach", action="store_true",
                   help="do not offer the socket that `sealtop attach` and `sealtop serve` use")


def _watch(args: argparse.Namespace):
    from engine.watchers import AddressError, Watch, parse_address

    try:
        metrics = parse_address(args.metrics) if args.metrics is not None else None
    except AddressError as exc:
        raise CliError(str(exc)) from None
    return Watch(metrics=metrics, attach=not args.no_attach)


def _cmd_run(args: argparse.Namespace) -> int:
    from engine.runner import run_headless

    if args.jobs < 1:
        raise CliError(f"--jobs must be at least 1, got {args.jobs}")
    if args.cluster is not None:
        from engine.cluster.run import run_cluster

        return run_cluster(args.config, _cluster_address(args.cluster), args.jobs, args.record)
    return run_headless(args.config, args.jobs, args.record, _watch(args))


def _add_cluster_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--cluster", default=None, metavar="ADDR",
                   help="run the jobs on the farm whose Dask scheduler is at ADDR (tcp://HOST:PORT; "
                   "needs sealtop[cluster])")


def _cluster_address(text: str) -> str:
    from engine.config import validate

    try:
        return validate("scheduler", text)
    except ValueError as exc:
        raise CliError(f"--cluster: {str(exc).removeprefix('scheduler: ')}") from None


def _add_replay(sub) -> None:
    p = sub.add_parser("replay", help="summarize a recorded session (--summary); the console replays it",
                       description="With --summary, prints the per-proof table and final counters computed "
                       "from the recorded events. Without it, `sealtop replay FILE` opens the console.")
    p.add_argument("file", metavar="FILE", help="session file")
    p.add_argument("--summary", action="store_true", help="print the summary instead of opening the console")
    p.set_defaults(func=_cmd_replay)


def _cmd_replay(args: argparse.Namespace) -> int:
    from engine.runner import replay_summary

    if not args.summary:
        raise CliError("headless replay needs --summary (the console replays: `sealtop replay FILE`)")
    return replay_summary(args.file)


def _add_bench_pipeline(bsub) -> None:
    p = bsub.add_parser("pipeline", help="the whole engine on a preset: GPU busy %%, s/proof, memory vs model",
                        description="Runs the engine on N jobs and reports seconds per proof, GPU busy %%, the "
                        "gap between GPU wrapper and kernel time, and peak memory against the model "
                        "(partition_workers + capacity + GPU slots) x bytes per partition + key. "
                        "--matrix cuzk runs capacity {1, workers} x permit_release; --matrix dealloc runs "
                        "sync against async.")
    p.add_argument("--preset", default="tiny", help="chain-N, cubic, or a porep preset (default tiny)")
    p.add_argument("--jobs", type=int, default=4, metavar="N", help="jobs (default 4)")
    p.add_argument("--json", default=None, metavar="OUT", help="write the report as JSON")
    p.add_argument("--config", default=None, metavar="FILE", help="base config (default: built-in defaults)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override a config key, e.g. --set partition_workers=4 (repeatable; TOML values)")
    p.add_argument("--matrix", choices=("cuzk", "dealloc"), default=None, help="run a comparison table")
    p.add_argument("--record", default=None, metavar="FILE",
                   help="record the run's events to a session file (with --matrix, one file per variant, "
                   "named FILE with the variant inserted before the extension)")
    _add_cluster_arg(p)
    _add_watch_args(p)
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
    from engine.runner import bench_matrix, bench_pipeline

    if args.jobs < 1:
        raise CliError(f"--jobs must be at least 1, got {args.jobs}")
    if args.json is not None and not Path(args.json).parent.is_dir():
        raise CliError(f"--json: folder {Path(args.json).parent} does not exist")
    overrides = _overrides(args.set)
    watch = _watch(args)
    if args.cluster is not None:
        from engine.cluster.run import bench_cluster

        if args.matrix:
            raise CliError("--matrix runs on one machine; leave out --cluster")
        return bench_cluster(args.preset, args.jobs, args.json, args.config, overrides, args.record,
                             _cluster_address(args.cluster))
    if args.matrix:
        return bench_matrix(args.matrix, args.preset, args.jobs, args.json, args.config, overrides,
                            args.record, watch)
    return bench_pipeline(args.preset, args.jobs, args.json, args.config, overrides, args.record,
                          watch)


# ---------------------------------------------------------------- registry and main
def _add_cluster(sub) -> None:
    p = sub.add_parser("cluster", help="the proving farm: start a Dask scheduler or a farm worker",
                       description="A farm is Dask's scheduler and one worker per host, each holding one "
                       "sealtop engine (needs sealtop[cluster]). Jobs go there with run/bench --cluster ADDR.")
    csub = p.add_subparsers(dest="cluster_verb", metavar="WHAT", parser_class=_Parser)
    csub.required = True
    s = csub.add_parser("scheduler", help="run the farm's Dask scheduler")
    s.add_argument("--host", default="0.0.0.0", help="interface to listen on (default all)")
    s.add_argument("--port", type=int, default=8786, metavar="N", help="port (default 8786)")
    s.set_defaults(func=_cmd_cluster_scheduler)
    w = csub.add_parser("worker", help="run one farm host: a Dask worker holding one engine")
    w.add_argument("--scheduler", default=None, metavar="ADDR",
                   help="the scheduler (default: [cluster] scheduler of the config)")
    w.add_argument("--config", default=None, metavar="FILE", help="this host's engine config")
    w.add_argument("--name", default=None, help="the host's name in the farm (default: the hostname)")
    w.set_defaults(func=_cmd_cluster_worker)


def _cmd_cluster_scheduler(args: argparse.Namespace) -> int:
    from engine.cluster import ClusterError
    from engine.cluster.serve import run_scheduler

    if not 1 <= args.port <= 65535:
        raise CliError(f"--port must be in 1..65535, got {args.port}")
    try:
        return run_scheduler(args.host, args.port)
    except ClusterError as exc:
        raise CliError(str(exc)) from None


def _cmd_cluster_worker(args: argparse.Namespace) -> int:
    from engine.cluster import ClusterError
    from engine.cluster.serve import run_worker
    from engine.config import ConfigError, EngineConfig, load_config

    try:
        cfg = load_config(args.config) if args.config else EngineConfig()
    except ConfigError as exc:
        raise CliError(str(exc)) from None
    address = _cluster_address(args.scheduler) if args.scheduler else cfg.scheduler
    if not address:
        raise CliError("no scheduler: give --scheduler ADDR or [cluster] scheduler in the config")
    try:
        return run_worker(address, cfg, args.name)
    except ClusterError as exc:
        raise CliError(str(exc)) from None


VERBS: list[Callable] = [_add_setup, _add_prove, _add_verify, _add_export, _add_run, _add_replay, _add_bench,
                         _add_cluster]
BENCH_VERBS: list[Callable] = [_add_bench_kernels, _add_bench_prove, _add_bench_synth, _add_bench_pipeline]


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog=PROG, description="sealtop headless verbs (Groth16 over BLS12-381).")
    sub = parser.add_subparsers(dest="verb", metavar="VERB", parser_class=_Parser)
    sub.required = True
    for add in VERBS:
        add(sub)
    return parser


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra and not getattr(args, "passthrough", False):
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    args.extra = extra
    verb = " ".join(v for v in (args.verb, getattr(args, "bench_verb", None),
                                getattr(args, "cluster_verb", None)) if v)
    from engine.signals import stop_signals
    from kernels.backend import BackendUnavailable

    try:
        with stop_signals():  # SIGINT, SIGTERM and SIGHUP alike: a clean stop, exit 130
            return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print(f"{PROG} {verb}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # output piped into `head` and closed: stop quietly, as Unix tools do
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except (CliError, BackendUnavailable, ValueError, OSError) as exc:
        # KeyFileError, ProofFormatError, WitnessError, KeyMismatchError, VerifyError are ValueErrors
        print(f"{PROG} {verb}: error: {_one_line(exc)}", file=sys.stderr)
        return EXIT_USAGE
    except Exception as exc:  # a bug: still one line, unless debugging
        if os.environ.get("SEALTOP_DEBUG"):
            raise
        print(f"{PROG} {verb}: unexpected error: {type(exc).__name__}: {_one_line(exc)} "
              "(SEALTOP_DEBUG=1 shows the traceback)", file=sys.stderr)
        return 1
