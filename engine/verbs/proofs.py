"""The proof verbs: ``setup``, ``prove``, ``verify`` and ``export`` (snarkjs JSON), with the
circuit arguments they share. ``setup`` and ``prove`` show their steps as they go
(engine/verbs/progress.py)."""

from __future__ import annotations

import argparse
import json
import secrets
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from engine.verbs.common import (
    EXIT_OK,
    EXIT_REJECTED,
    PROG,
    CliError,
    add_backend_arg,
    backend,
    check_output,
    say,
)
from engine.verbs.progress import Steps
from kernels.textfmt import error_line, fmt_bytes


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


def _check_circuit_args(args: argparse.Namespace) -> None:
    """The circuit arguments' usage errors, raised before any work (and before any progress)."""
    if getattr(args, "preset", None):
        from engine.circuit.porep import PRESETS

        if args.preset not in PRESETS:
            raise CliError(f"--preset: unknown porep preset {args.preset!r}; choose from {', '.join(PRESETS)}")
        return
    if args.circuit == "chain":
        if args.n is None and args.log_constraints is None:
            raise CliError("the chain circuit needs --n N or --log-constraints K")
        if args.log_constraints is not None:
            if not 2 <= args.log_constraints <= 26:
                raise CliError(f"--log-constraints must be in 2..26, got {args.log_constraints}")
        elif args.n < 1:
            raise CliError(f"--n must be at least 1, got {args.n}")


def _circuit(args: argparse.Namespace) -> Any:
    """The circuit the arguments name (checked by _check_circuit_args first)."""
    from engine.groth16 import examples

    _check_circuit_args(args)
    if getattr(args, "preset", None):
        return examples.porep_circuit(args.preset)
    if args.circuit == "chain" and args.log_constraints is not None:
        return examples.chain_for_constraints(1 << args.log_constraints)
    return examples.build(args.circuit, args.n)


def _circuit_label(args: argparse.Namespace) -> str:
    if getattr(args, "preset", None):
        return f"porep {args.preset}"
    if args.circuit == "chain":
        return f"chain of 2^{args.log_constraints} constraints" if args.log_constraints is not None \
            else f"chain of {args.n} multiplications"
    return args.circuit


def _compile_step(steps: Steps | None = None) -> bool:
    """Whether this install still has to compile the CPU kernels (numba, once per install);
    with ``steps``, compile them now as a step of their own, each kernel group a note, so a
    fresh install's first prove or setup says what its first half-minute goes to."""
    from engine.warmup import ensure_warm, is_warm

    if steps is None:
        return not is_warm()
    steps.step("compiling the CPU kernels (first run only; cached on disk)")
    ensure_warm(lambda m: steps.note(m.strip()) if m.startswith("  ") else None)
    return True


def _readable(path: str, what: str) -> None:
    """A usage error now, before any progress, for an input file that cannot be opened (a
    directory or a named pipe there is said to be one: opening a pipe waited for a writer)."""
    from engine.groth16.keyfile import not_a_file

    wrong = not_a_file(Path(path), what)
    if wrong is not None:
        raise CliError(str(wrong))
    try:
        with open(path, "rb"):
            pass
    except OSError as exc:
        raise CliError(f"cannot read {what} {path}: {exc.strerror or exc}") from None


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


@contextmanager
def _writing(path: str | Path, what: str, written: str = "") -> Iterator[None]:
    """A write that fails (a full disk, a file-size limit) is one line naming the file: the bare
    OSError of a write names none (``[Errno 28] No space left on device``). The writers are
    atomic, so the file that was there is left as it was; ``written`` names what this command
    already wrote (setup's proving key, when its verification key then fails)."""
    try:
        yield
    except OSError as exc:
        also = f"; {written} was written: run it again once there is room" if written else ""
        raise CliError(f"cannot write {what} {path}: {exc.strerror or exc} (the file there, if "
                       f"any, is unchanged{also})") from None


def _write_bytes_atomic(path: str | Path, data: bytes) -> None:
    from engine.atomic import atomic_write

    with atomic_write(path, "wb") as f:
        f.write(data)


# ---------------------------------------------------------------- setup
def add_setup(sub) -> None:
    p = sub.add_parser("setup", help="make a proving key and verification key (INSECURE test parameters)",
                       description="Deterministic Groth16 setup from a seed for a built-in circuit. "
                       "The parameters are INSECURE TEST PARAMETERS: anyone with the seed can forge proofs.")
    _add_circuit_args(p)
    p.add_argument("--seed", default="sealtop", help="seed for the toxic waste (default 'sealtop')")
    p.add_argument("--pk", default=None, metavar="FILE", help="proving key file to write (default CIRCUIT.pk)")
    p.add_argument("--vk", default=None, metavar="FILE",
                   help="verification key to write (default CIRCUIT.vk.json; with --sector-size PROOF.vk)")
    p.add_argument("--sector-size", default=None, metavar="SIZE",
                   help="Filecoin's C2 circuit of a sector size (2KiB ... 64GiB) or registered seal proof "
                        "name instead: writes bellperson's .params and .vk")
    p.add_argument("--v1", action="store_true", help="--sector-size: the API V1 proof (default V1_1)")
    p.add_argument("--params", default=None, metavar="FILE",
                   help="--sector-size: the .params file to write (default PROOF.params)")
    add_backend_arg(p)
    p.set_defaults(func=_cmd_setup)


def _cmd_setup(args: argparse.Namespace) -> int:
    if args.sector_size is not None:
        from engine.verbs.c2 import cmd_setup

        return cmd_setup(args)
    from engine.groth16.keyfile import save_proving_key
    from engine.groth16.setup import INSECURE_LABEL, setup
    from engine.groth16.vkey import save_vk, verifying_key

    _check_circuit_args(args)
    for given, flag in ((args.pk, "--pk"), (args.vk, "--vk")):
        if given:
            check_output(given, flag)
    be = backend(args.backend)
    say(f"WARNING: {INSECURE_LABEL}: the toxic waste is derived from the seed; never use these keys for real proofs")
    t = time.perf_counter()
    cold = _compile_step()
    with Steps("setup", 3 + cold) as steps:
        if cold:
            _compile_step(steps)
        steps.step(f"building the circuit ({_circuit_label(args)})")
        circuit = _circuit(args)
        pk_path = Path(args.pk or f"{circuit.name}.pk")
        vk_path = Path(args.vk or f"{circuit.name}.vk.json")
        check_output(pk_path, "--pk")
        check_output(vk_path, "--vk")
        r1cs = circuit.r1cs
        steps.step(f"{circuit.name}: {r1cs.num_constraints} constraints, {r1cs.num_vars} variables: "
                   f"scalars and fixed-base MSMs on {be.name}")
        pk = setup(r1cs, args.seed, be, progress=steps.note)
        steps.step(f"writing {pk_path} and {vk_path}")
        with _writing(pk_path, "the proving key"):
            save_proving_key(pk, pk_path)
        with _writing(vk_path, "the verification key", f"the proving key {pk_path}"):
            save_vk(verifying_key(pk), vk_path)
    print(f"{INSECURE_LABEL}: wrote {pk_path} ({fmt_bytes(pk_path.stat().st_size)}) and {vk_path} "
          f"in {time.perf_counter() - t:.2f} s")
    return EXIT_OK


# ---------------------------------------------------------------- prove
def add_prove(sub) -> None:
    p = sub.add_parser("prove", help="prove with a proving key file",
                       description="Build the example witness from --x and prove it with the key file.")
    _add_circuit_args(p)
    p.add_argument("--pk", default=None, metavar="FILE", help="proving key file (from setup)")
    p.add_argument("--c1", default=None, metavar="FILE",
                   help="Filecoin's commit phase 2 instead: prove every partition of this C1 output "
                        "(SealCommitPhase1Output JSON) with --params; --proof gets 192 bytes per partition")
    p.add_argument("--params", default=None, metavar="FILE",
                   help="--c1: the sector's .params file (bellperson's format)")
    p.add_argument("--prover-id", default=None, metavar="HEX", help="--c1: the prover id (32 bytes, hex)")
    p.add_argument("--sector-id", default=None, metavar="N", help="--c1: the sector number")
    p.add_argument("--x", default=None, help="the private input x (decimal; default random)")
    p.add_argument("--proof", default="proof.bin", metavar="FILE", help="192-byte proof to write (default proof.bin)")
    p.add_argument("--public", default="public.json", metavar="FILE",
                   help="public inputs to write, JSON list of decimal strings (default public.json)")
    p.add_argument("--no-precheck", action="store_true", help="skip the witness pre-check (a∘b = c)")
    p.add_argument("--no-checksum", action="store_true", help="skip the key file checksum check")
    p.add_argument("--no-verify", action="store_true",
                   help="write the proof without checking it first (by default prove verifies it "
                   "with the independent pairing and writes nothing, exit 1, if it does not verify)")
    add_backend_arg(p)
    p.set_defaults(func=_cmd_prove)


def _cmd_prove(args: argparse.Namespace) -> int:
    if args.c1 is not None:
        from engine.verbs.c2 import cmd_prove

        return cmd_prove(args)
    if args.pk is None:
        raise CliError("--pk FILE is required (or --c1 FILE --params FILE for a Filecoin sector)")
    from engine.groth16.examples import public_inputs
    from engine.groth16.keyfile import load_proving_key
    from engine.groth16.prove import prove
    from engine.groth16.vkey import write_json_atomic
    from kernels.constants import R_MOD

    _check_circuit_args(args)
    try:
        x = secrets.randbelow(R_MOD) if args.x is None else int(args.x, 0)
    except ValueError:
        raise CliError(f"--x must be an integer, got {args.x!r}") from None
    _readable(args.pk, "proving key")
    check_output(args.proof, "--proof")
    check_output(args.public, "--public")
    be = backend(args.backend)
    timings: dict[str, float] = {}
    checked = ""
    cold = _compile_step()
    with Steps("prove", 4 + (not args.no_verify) + cold) as steps:
        if cold:
            _compile_step(steps)
        steps.step(f"building the circuit ({_circuit_label(args)})")
        circuit = _circuit(args)
        steps.step(f"loading the proving key {args.pk}"
                   + (" (checksum skipped)" if args.no_checksum else " (checking its checksum)"))
        pk = load_proving_key(args.pk, verify_checksum=not args.no_checksum)
        if bytes(pk.digest) != circuit.r1cs.digest():  # said now, not after the witness
            raise CliError(f"--pk: {args.pk} is the proving key of a different circuit (digest "
                           f"mismatch), not of {circuit.name}")
        steps.step("computing the witness")
        z = circuit.witness(x)
        steps.step(f"proving on {be.name}: evaluation, NTTs, the MSMs")
        t = time.perf_counter()
        proof = prove(pk, circuit.r1cs, z, be, precheck=not args.no_precheck, timings=timings)
        wall = time.perf_counter() - t
        public = public_inputs(circuit.r1cs, z)
        if not args.no_verify:
            from engine.groth16.verify import verify
            from engine.groth16.vkey import verifying_key

            steps.step("verifying the proof with the independent pairing")
            problem = _malformed(proof)
            if problem is not None or not verify(verifying_key(pk), public, proof):
                why = f"it is malformed ({problem})" if problem else "it does not verify"
                failed = (f"the proof was not written: {why}; the proving key {args.pk} may be "
                          "damaged (load it without --no-checksum to check)")
            else:
                failed = ""
                checked = ", verified"
        else:
            failed = ""
    if failed:
        say(error_line(f"{PROG} prove", failed))
        return EXIT_REJECTED
    with _writing(args.proof, "the proof"):
        _write_bytes_atomic(args.proof, proof)
    with _writing(args.public, "the public inputs", f"the proof {args.proof}"):
        write_json_atomic(args.public, circuit.statement(x) if circuit.statement
                          else [str(v) for v in public])
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
def add_verify(sub) -> None:
    from engine.verbs.seal import add_c1_args

    p = sub.add_parser("verify", help="verify a proof (py_arkworks_bls12381 pairing) or a C1 output (--c1)",
                       description="Exit 0 if the proof is valid, 1 if it is rejected, 2 on bad input.")
    p.add_argument("--vk", default=None, metavar="FILE", help="verification key JSON (from setup; required without --c1)")
    p.add_argument("--proof", default="proof.bin", metavar="FILE", help="192-byte proof (default proof.bin)")
    p.add_argument("--public", default="public.json", metavar="FILE", help="public inputs JSON (default public.json)")
    add_c1_args(p)
    p.add_argument("--sector-size", default=None, metavar="SIZE",
                   help="a Filecoin sector's proof (bellperson's .vk; 192 bytes per partition) against "
                        "the public values --prover-id, --sector-id, --ticket, --seed, --comm-d, --comm-r")
    p.add_argument("--v1", action="store_true", help="--sector-size: the API V1 proof (default V1_1)")
    p.add_argument("--statement", default=None, metavar="FILE",
                   help="the sector's public values as JSON (registered_proof, prover_id, sector_id, "
                        "ticket, seed, comm_d, comm_r) instead of the flags; a flag given overrides it")
    p.set_defaults(func=_cmd_verify)


def _cmd_verify(args: argparse.Namespace) -> int:
    from engine.groth16.verify import verify
    from engine.groth16.vkey import load_vk

    if args.c1 is not None:
        from engine.verbs.seal import cmd_verify_c1

        return cmd_verify_c1(args)
    if args.sector_size is not None or args.statement is not None:
        from engine.verbs.c2 import cmd_verify as cmd_verify_c2

        return cmd_verify_c2(args)
    if args.vk is None:
        raise CliError("--vk FILE is required (or --c1 FILE for a C1 output)")
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
def add_export(sub) -> None:
    p = sub.add_parser("export", help="write snarkjs JSON for a key, proof and public inputs",
                       description="Writes verification_key.json, and with --proof, proof.json and public.json.")
    p.add_argument("--vk", required=True, metavar="FILE", help="verification key JSON (from setup)")
    p.add_argument("--proof", default=None, metavar="FILE", help="192-byte proof to export")
    p.add_argument("--public", default=None, metavar="FILE", help="public inputs JSON to export")
    p.add_argument("--out-dir", default=".", metavar="DIR",
                   help="where to write the snarkjs files, made if missing inside an existing folder (default .)")
    p.set_defaults(func=_cmd_export)


def _cmd_export(args: argparse.Namespace) -> int:
    from engine.groth16 import snarkjs
    from engine.groth16.serialize import ProofFormatError
    from engine.groth16.vkey import load_vk, write_json_atomic

    out = Path(args.out_dir)
    if not out.parent.is_dir():  # one new level, as README's `--out-dir snarkjs/`; not a path of them
        raise CliError(f"--out-dir: folder {out.parent} does not exist (the folder {out.name} is "
                       "made inside an existing one)")
    if out.exists() and not out.is_dir():
        raise CliError(f"--out-dir: {out} exists and is not a folder")
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
    out.mkdir(exist_ok=True)  # only once every input has been read and checked
    for name, obj in files.items():
        with _writing(out / name, "the snarkjs file"):
            write_json_atomic(out / name, obj)
    print(f"wrote {', '.join(str(out / n) for n in files)} (snarkjs groth16, curve bls12381)")
    return EXIT_OK
