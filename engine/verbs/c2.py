"""Filecoin's commit phase 2 on the command line: ``setup --sector-size`` (an INSECURE key for
the exact circuit, in bellperson's .params/.vk format), ``prove --c1`` (a C1 output and a params
file in, the sector's proof out: 192 bytes per partition, each verified before it is written)
and ``verify --sector-size`` (a proof against the public values alone). engine/verbs/proofs.py's
verbs hand these cases here.

Exit status: 0 proved / valid, 1 a proof that does not verify (or a C1 output for another
statement), 2 bad input (an argument, a damaged params, vk, proof or C1 file).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from engine.verbs.common import EXIT_OK, EXIT_REJECTED, PROG, CliError, backend, check_output, say
from engine.verbs.progress import Steps
from engine.verbs.seal import parse_hex32, parse_sector_id
from kernels.textfmt import error_line, fmt_bytes


def _proof_of(text: str, v1: bool) -> Any:
    """A registered seal proof by size or name; every size (32 GiB too) can be proven."""
    import re

    from engine.seal.registry import SEAL_PROOFS, by_size

    if text in SEAL_PROOFS:
        return SEAL_PROOFS[text]
    m = re.fullmatch(r"(\d+)\s*(KiB|MiB|GiB)", text)
    if m is None:
        raise CliError(f"--sector-size: {text!r} is neither a size (2KiB, 8MiB, 512MiB, 32GiB, 64GiB) "
                       "nor a registered seal proof name")
    try:
        return by_size(int(m.group(1)) << {"KiB": 10, "MiB": 20, "GiB": 30}[m.group(2)], v1_1=not v1)
    except ValueError as exc:
        raise CliError(f"--sector-size: {exc}") from None


def _circuit(proof: Any, steps: Steps) -> Any:
    from engine.c2.circuit import build_c2
    from engine.pipeline.circuits import circuit_cache_dir
    from engine.settings import default_param_cache

    steps.step(f"building {proof.name}'s C2 circuit (cached after the first time)")
    return build_c2(proof, circuit_cache_dir(Path(default_param_cache())), steps.note)


# ---------------------------------------------------------------- setup
def cmd_setup(args: argparse.Namespace) -> int:
    from engine.groth16.bellman import write_params, write_vk
    from engine.groth16.setup import INSECURE_LABEL, setup

    proof = _proof_of(args.sector_size, args.v1)
    params = Path(args.params or f"{proof.name}.params")
    vk = Path(args.vk or f"{proof.name}.vk")
    check_output(params, "--params")
    check_output(vk, "--vk")
    be = backend(args.backend)
    say(f"WARNING: {INSECURE_LABEL}: the toxic waste is derived from the seed; never use these keys for real proofs")
    t = time.perf_counter()
    with Steps("setup", 3) as steps:
        c = _circuit(proof, steps)
        r = c.shape.r1cs
        steps.step(f"{proof.name}: {r.num_constraints} constraints, {r.num_vars} variables: "
                   f"scalars and fixed-base MSMs on {be.name}")
        pk = setup(r, args.seed, be, progress=steps.note)
        steps.step(f"writing {params} and {vk} (bellperson's format)")
        write_params(params, pk, r)
        write_vk(vk, pk)
    print(f"{INSECURE_LABEL}: wrote {params} ({fmt_bytes(params.stat().st_size)}) and {vk} for "
          f"{proof.name} in {time.perf_counter() - t:.2f} s")
    return EXIT_OK


# ---------------------------------------------------------------- prove --c1
def cmd_prove(args: argparse.Namespace) -> int:
    from engine.c2.circuit import StatementMismatch
    from engine.c2.public import Statement, public_inputs
    from engine.groth16.bellman import read_params
    from engine.groth16.bellman_proofs import write_proofs
    from engine.groth16.prove import prove
    from engine.groth16.verify import verify
    from engine.groth16.vkey import verifying_key
    from engine.seal.c1json import read_c1
    from engine.seal.registry import seal_proof

    if args.params is None:
        raise CliError("--c1 needs --params FILE (a .params file for the sector's circuit: "
                       f"`{PROG} setup --sector-size SIZE` makes an INSECURE one)")
    if args.prover_id is None or args.sector_id is None:
        raise CliError("--c1 needs --prover-id and --sector-id (the C1 file does not hold them)")
    prover_id = parse_hex32(args.prover_id, "--prover-id")
    sector_id = parse_sector_id(args.sector_id)
    check_output(args.proof, "--proof")
    be = backend(args.backend)
    c1 = read_c1(args.c1)
    proof_type = seal_proof(c1.registered_proof)
    try:
        statement = Statement(proof_type, prover_id, sector_id, c1.ticket, c1.seed, c1.comm_d, c1.comm_r)
    except ValueError as exc:
        raise CliError(f"--c1: {args.c1}: {exc}") from None
    parts = len(c1.vanilla_proofs)
    t0 = time.perf_counter()
    proofs: list[bytes] = []
    with Steps("prove", 2 + 2 * parts) as steps:
        c = _circuit(proof_type, steps)
        steps.step(f"reading the parameter file {args.params}")
        pk = read_params(args.params, c.shape.r1cs)
        vk = verifying_key(pk)
        for k in range(parts):
            steps.step(f"partition {k + 1} of {parts}: the witness from the C1 output")
            try:
                z = c.witness(c1, k, statement)
            except StatementMismatch as exc:
                say(error_line(f"{PROG} prove", str(exc)))
                return EXIT_REJECTED
            steps.step(f"partition {k + 1} of {parts}: proving on {be.name}, then verifying")
            proof = prove(pk, c.shape.r1cs, z, be)
            if not verify(vk, public_inputs(statement, k), proof):
                say(error_line(f"{PROG} prove", f"partition {k}'s proof does not verify: nothing "
                               f"was written; is {args.params} the key of this circuit?"))
                return EXIT_REJECTED
            proofs.append(proof)
    write_proofs(args.proof, proofs)
    label = " with INSECURE TEST PARAMETERS" if pk.insecure else ""
    print(f"proved {c1.registered_proof}{label}: {parts} partitions, verified, in "
          f"{time.perf_counter() - t0:.1f} s: wrote {args.proof} ({len(proofs) * 192} bytes)")
    print(f"check it: {PROG} verify --vk VK --proof {args.proof} --sector-size {proof_type.name} "
          f"--prover-id {prover_id.hex()} --sector-id {sector_id} --ticket {c1.ticket.hex()} "
          f"--seed {c1.seed.hex()} --comm-d {c1.comm_d.hex()} --comm-r {c1.comm_r.hex()}")
    return EXIT_OK


# ---------------------------------------------------------------- verify --sector-size
_FIELDS = ("prover_id", "ticket", "seed", "comm_d", "comm_r")


def _statement(args: argparse.Namespace) -> Any:
    """The statement to verify against: the verifier's statement file (engine/c2/public.py
    writes and reads it), any flag given overriding its value, or the flags alone."""
    from engine.c2.public import Statement, StatementError, read_statement

    values: dict[str, Any] = {}
    if args.statement:
        try:
            st = read_statement(args.statement)
        except StatementError as exc:
            raise CliError(f"--statement: {exc}") from None
        values = {"registered_proof": st.proof.name, "sector_id": str(st.sector_id),
                  **{k: getattr(st, k).hex() for k in _FIELDS}}
    for name in ("sector_id", *_FIELDS):
        given = getattr(args, name, None)
        if given is not None:
            values[name] = given
    if args.sector_size is not None:
        values["registered_proof"] = _proof_of(args.sector_size, args.v1).name
    missing = [k for k in ("registered_proof", "sector_id", *_FIELDS) if values.get(k) is None]
    if missing:
        raise CliError(f"verify needs the statement's {', '.join(sorted(missing))} "
                       "(flags, or --statement FILE)")
    hexes = {k: parse_hex32(str(values[k]), f"--{k.replace('_', '-')}") for k in _FIELDS}
    try:
        return Statement(_proof_of(str(values["registered_proof"]), False), hexes["prover_id"],
                         parse_sector_id(str(values["sector_id"])), hexes["ticket"], hexes["seed"],
                         hexes["comm_d"], hexes["comm_r"])
    except ValueError as exc:
        raise CliError(f"verify: {exc}") from None


def cmd_verify(args: argparse.Namespace) -> int:
    from engine.c2.public import public_inputs
    from engine.groth16.bellman import read_vk
    from engine.groth16.bellman_proofs import read_proofs
    from engine.groth16.verify import malformed, verify

    if args.vk is None:
        raise CliError("--vk FILE is required (the sector's .vk)")
    st = _statement(args)
    vk = read_vk(args.vk)
    need = st.proof.partitions
    if vk.n_public != len(public_inputs(st, 0)):
        raise CliError(f"--vk: {args.vk} is the key of a circuit with {vk.n_public} public inputs, "
                       f"not {st.proof.name}'s")
    proofs = read_proofs(args.proof, partitions=need)
    for k, proof in enumerate(proofs):
        problem = malformed(proof)
        if problem is not None:
            raise CliError(f"malformed proof {args.proof}: partition {k}: {problem}")
    bad = [k for k, proof in enumerate(proofs) if not verify(vk, public_inputs(st, k), proof)]
    if bad:
        print(f"INVALID: partition {', '.join(map(str, bad))} of {need} does not verify for this "
              "statement and key")
        return EXIT_REJECTED
    print(f"valid: {need} partition proofs of {st.proof.name} verify"
          + (" (INSECURE TEST PARAMETERS)" if vk.insecure else ""))
    return EXIT_OK
