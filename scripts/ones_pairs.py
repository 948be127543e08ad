"""Count the additions the ones' sums of a C2 partition take, point by point and by adjacent pairs.

Why: most of the small MSMs' GPU time (A, B1, L and B2) is the sum of the points whose scalar
is 1, one addition a one. With P_k + P_(k+1) kept beside each pair of a query's points, a pair
of 0/1 scalars costs one addition whenever either is 1 (P_k, P_(k+1) or the pair's sum), so the
ones' additions fall to P(not both 0) / (2 P(1)) of what they are. This script measures that
fraction on real witnesses, where the bits are whatever the circuit makes of its sector, before
any GPU work is written for it.

The sectors are sealed here with random data (a zero sector's data-side hashes are the same in
every proof, which would flatter any such count), so only sizes this machine can seal are
offered. The queries: L over the private variables, A and B over the variables whose column in
that matrix is not empty; a pair holding a general value adds its 0/1 member alone.

    python3 scripts/ones_pairs.py --sectors 6
"""

from __future__ import annotations

import argparse
import secrets
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.c2.assign import Partition
from engine.c2.circuit import build_c2
from engine.c2.public import Statement
from engine.seal.registry import seal_proof
from engine.seal.sealer import seal_sector
from kernels.textfmt import table

SIZES = {"2KiB": "StackedDrg2KiBV1_1", "8MiB": "StackedDrg8MiBV1_1"}


def kinds(z: np.ndarray) -> np.ndarray:
    """0, 1 or 2 (general) for each witness value (z[0] is the constant one)."""
    one = np.all(z == z[0], axis=1)
    zero = ~np.any(z, axis=1)
    return np.where(zero, 0, np.where(one, 1, 2)).astype(np.int8)


def additions(k: np.ndarray) -> tuple[int, int, int]:
    """(ones, general values, additions by adjacent pairs) of a query's scalar kinds ``k``."""
    m = len(k) // 2 * 2
    a, b = k[:m:2], k[1:m:2]
    both01 = (a < 2) & (b < 2)
    any_one = (a == 1) | (b == 1)
    by_pairs = int((both01 & any_one).sum()) + int((~both01 & any_one).sum())
    if len(k) % 2:
        by_pairs += int(k[-1] == 1)
    return int((k == 1).sum()), int((k == 2).sum()), by_pairs


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", default="2KiB", choices=sorted(SIZES), help="sector size (default 2KiB)")
    ap.add_argument("--sectors", type=int, default=4, help="sectors sealed and proved (default 4)")
    args = ap.parse_args(argv)
    if args.sectors < 1:
        print("ones_pairs: --sectors takes at least 1", file=sys.stderr)
        return 2
    proof = seal_proof(SIZES[args.size])
    with tempfile.TemporaryDirectory(prefix="sealtop-pairs-") as cache:
        circuit = build_c2(proof, cache)
        r = circuit.shape.r1cs
        queries = {"L": np.arange(r.num_inputs, r.num_vars)}
        for name in "AB":
            queries[name] = np.unique(np.asarray(getattr(r, name).indices))
        totals = {q: np.zeros(3, np.int64) for q in queries}
        z = np.empty((r.num_vars, 4), np.uint64)
        capacity = proof.sector_size // 128 * 127
        for _ in range(args.sectors):
            prover, sector = secrets.token_bytes(31) + b"\0", secrets.randbits(63)
            c1 = seal_sector(proof, secrets.token_bytes(capacity), prover, sector,
                             secrets.token_bytes(32), secrets.token_bytes(32)).c1
            statement = Statement(proof, prover, sector, c1.ticket, c1.seed, c1.comm_d, c1.comm_r)
            circuit.witness_of(Partition.of_c1(c1, 0), statement, z)
            k = kinds(z)
            for q, idx in queries.items():
                totals[q] += additions(k[idx])
    rows = [[q, f"{len(queries[q]):,}", f"{t[0] // args.sectors:,}", f"{t[1] // args.sectors:,}",
             f"{t[2] // args.sectors:,}", f"{t[2] / t[0]:.3f}"] for q, t in totals.items()]
    print(f"{proof.name}, partition 0 of {args.sectors} sectors of random data (means a proof):")
    print("\n".join(table(["query", "scalars", "ones", "general", "by pairs", "fraction"], rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
