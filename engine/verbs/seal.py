"""The ``seal`` verb (precommit phases 1 and 2 and commit phase 1 of a Filecoin sector on the
CPU, writing the C1 JSON) and ``verify --c1`` (vanilla verification of a C1 file from public
values), which engine/verbs/proofs.py's ``verify`` hands here.

Exit status: 0 sealed / accepted, 1 a vanilla proof rejected (one line: partition, challenge,
what failed), 2 bad input (an argument, a data file, a damaged or truncated C1 file).
"""

from __future__ import annotations

import argparse
import re
import secrets
from pathlib import Path
from typing import TYPE_CHECKING

from engine.verbs.common import EXIT_OK, EXIT_REJECTED, PROG, CliError, check_output, say
from engine.verbs.progress import Steps
from kernels.textfmt import error_line

if TYPE_CHECKING:
    from engine.seal.registry import SealProof

SEALABLE = ("2KiB", "8MiB", "512MiB")
"""Sector sizes sealed here (on the CPU); 32 GiB and 64 GiB are named but refused."""

_UNITS = {"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}


def parse_hex32(text: str, flag: str) -> bytes:
    """32 bytes given as 64 hex digits (an optional 0x)."""
    t = text[2:] if text.lower().startswith("0x") else text
    if not re.fullmatch(r"[0-9a-fA-F]{64}", t):
        raise CliError(f"{flag}: expected 32 bytes as 64 hex digits, got {text!r}")
    return bytes.fromhex(t)


def parse_sector_id(text: str) -> int:
    try:
        n = int(text, 0)
    except ValueError:
        raise CliError(f"--sector-id: expected a sector number, got {text!r}") from None
    if not 0 <= n < 1 << 64:
        raise CliError(f"--sector-id: {n} is not a u64")
    return n


def parse_sector(text: str, v1: bool) -> SealProof:
    """The registered seal proof named by a size (2KiB, 8MiB, 512MiB) or a proof name."""
    from engine.seal.registry import SEAL_PROOFS, by_size

    if text in SEAL_PROOFS:
        proof = SEAL_PROOFS[text]
    else:
        m = re.fullmatch(r"(\d+)\s*(KiB|MiB|GiB)", text)
        if m is None:
            raise CliError(f"--sector-size: {text!r} is neither a size ({', '.join(SEALABLE)}) nor a "
                           "registered seal proof name")
        try:
            proof = by_size(int(m.group(1)) * _UNITS[m.group(2)], v1_1=not v1)
        except ValueError as exc:
            raise CliError(f"--sector-size: {exc}") from None
    if proof.sector_size > 512 << 20:
        raise CliError(f"--sector-size: {proof.name} is not sealed here (the CPU seals "
                       f"{', '.join(SEALABLE)}; 32 GiB and 64 GiB need a sealing machine)")
    return proof


# ---------------------------------------------------------------- seal
def add_seal(sub) -> None:
    p = sub.add_parser(
        "seal", help="seal a sector on the CPU (precommit 1 and 2, commit 1) and write its C1 JSON",
        description="Precommit phase 1 (labels), phase 2 (tree_c, tree_r_last, comm_r) and commit "
                    "phase 1 (challenges and vanilla proofs) of a Filecoin sector of 2 KiB to 512 MiB, "
                    "writing filecoin-ffi's SealCommitPhase1Output JSON. Values not given are random "
                    "and printed. Check the output with `sealtop verify --c1 FILE ...` (the line it "
                    "prints).")
    p.add_argument("--sector-size", required=True, metavar="SIZE",
                   help=f"{'|'.join(SEALABLE)} or a registered seal proof name (StackedDrg2KiBV1_1, ...)")
    p.add_argument("--v1", action="store_true", help="the API V1 proof of that size (default V1_1)")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--data", metavar="FILE",
                     help="unpadded piece bytes (at most 127/128 of the sector; the rest is zero), "
                          "Fr32-padded here")
    src.add_argument("--zero", action="store_true", help="seal an all-zero (committed-capacity) sector")
    p.add_argument("--prover-id", metavar="HEX", help="32 bytes, hex (random when absent)")
    p.add_argument("--sector-id", metavar="N", help="the sector number, a u64 (random when absent)")
    p.add_argument("--ticket", metavar="HEX", help="32 bytes, hex: the precommit ticket (random when absent)")
    p.add_argument("--seed", metavar="HEX", help="32 bytes, hex: the interactive seed (random when absent)")
    p.add_argument("--out", required=True, metavar="FILE", help="the C1 JSON (written atomically)")
    p.set_defaults(func=_cmd_seal)


def _read_data(path: str, capacity: int) -> bytes:
    p = Path(path)
    if not p.is_file():
        raise CliError(f"--data: {p} is not a file")
    size = p.stat().st_size
    if size > capacity:
        raise CliError(f"--data: {p} holds {size} bytes, more than the sector's {capacity} unpadded bytes")
    return p.read_bytes()


def _cmd_seal(args: argparse.Namespace) -> int:
    from engine.seal.sealer import STEPS, seal_sector

    proof = parse_sector(args.sector_size, args.v1)
    capacity = proof.sector_size // 128 * 127
    check_output(args.out, "--out")
    data = None if args.zero else _read_data(args.data, capacity)
    prover_id = parse_hex32(args.prover_id, "--prover-id") if args.prover_id else secrets.token_bytes(32)
    sector_id = parse_sector_id(args.sector_id) if args.sector_id else secrets.randbits(63)
    ticket = parse_hex32(args.ticket, "--ticket") if args.ticket else secrets.token_bytes(32)
    seed = parse_hex32(args.seed, "--seed") if args.seed else secrets.token_bytes(32)
    for name, given, value in (("prover_id", args.prover_id, prover_id.hex()),
                               ("sector_id", args.sector_id, str(sector_id)),
                               ("ticket", args.ticket, ticket.hex()), ("seed", args.seed, seed.hex())):
        if not given:
            say(f"seal: {name} not given, using a random one: {value}")
    with Steps("seal", len(STEPS)) as steps:
        result = seal_sector(proof, data, prover_id, sector_id, ticket, seed,
                             step=steps.step, note=steps.note)
        steps.step("writing the C1 JSON")
        from engine.seal.c1json import write_c1

        write_c1(args.out, result.c1)
    print(f"sealed {proof.name}: comm_d {result.comm_d.hex()} comm_r {result.comm_r.hex()}")
    print(f"prover_id {prover_id.hex()} sector_id {sector_id} ticket {ticket.hex()} seed {seed.hex()}")
    print("phases: " + ", ".join(f"{k} {v:.2f} s" for k, v in result.timings.items()))
    print(f"check it: {PROG} verify --c1 {args.out} --prover-id {prover_id.hex()} --sector-id {sector_id}")
    return EXIT_OK


# ---------------------------------------------------------------- verify --c1
def add_c1_args(p: argparse.ArgumentParser) -> None:
    """verify's --c1 arguments (engine/verbs/proofs.py's verify calls this)."""
    p.add_argument("--c1", metavar="FILE", default=None,
                   help="vanilla-verify a C1 output (SealCommitPhase1Output JSON) instead of a Groth16 "
                        "proof; needs --prover-id and --sector-id, which the file does not hold")
    p.add_argument("--prover-id", metavar="HEX", default=None, help="--c1: the prover id (32 bytes, hex)")
    p.add_argument("--sector-id", metavar="N", default=None, help="--c1: the sector number")
    for flag in ("--ticket", "--seed", "--comm-d", "--comm-r"):
        p.add_argument(flag, metavar="HEX", default=None,
                       help=f"--c1: the {flag[2:].replace('-', '_')} the chain holds; the file's must equal it")


def cmd_verify_c1(args: argparse.Namespace) -> int:
    from engine.seal.c1json import read_c1
    from engine.seal.vanilla_verify import verify_c1

    if args.prover_id is None or args.sector_id is None:
        raise CliError("--c1 needs --prover-id and --sector-id (the C1 file does not hold them; "
                       "`sealtop seal` prints them)")
    prover_id = parse_hex32(args.prover_id, "--prover-id")
    sector_id = parse_sector_id(args.sector_id)
    expected = {name: parse_hex32(getattr(args, name), f"--{name.replace('_', '-')}")
                for name in ("ticket", "seed", "comm_d", "comm_r") if getattr(args, name) is not None}
    c1 = read_c1(args.c1)
    for name, value in expected.items():
        if getattr(c1, name) != value:
            say(error_line(f"{PROG} verify", f"rejected: the file's {name} is not --{name.replace('_', '-')}"))
            return EXIT_REJECTED
    verdict = verify_c1(c1, prover_id, sector_id)
    for part in verdict.partitions:
        print(part.line())
    reason = verdict.first_reason()
    if reason is not None:
        say(error_line(f"{PROG} verify", f"rejected: {reason}"))
        return EXIT_REJECTED
    print(f"valid: {c1.registered_proof} vanilla proofs verify against comm_d {c1.comm_d.hex()} "
          f"and comm_r {c1.comm_r.hex()}")
    return EXIT_OK
