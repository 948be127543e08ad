"""Time the witness of one partition of Filecoin's C2 circuit, without its matrices.

Why: a synthesis worker's witness is most of its time per partition, and porep-32g's matrices
(27 GiB) do not fit a small machine, so `sealtop bench synth` cannot build that circuit there.
The witness needs only the shape's program (engine.circuit.builder.CircuitBuilder.compile with
matrices=False), so its time per partition is measurable anywhere. What is timed is what the
worker runs (C2Circuit.witness_of: the aux values from the C1 partition, fill_inputs, the
numba interpreter) on one partition of a synthetic sector, into a buffer kept between rounds
as the worker keeps its own, after a warm-up round (JIT, first-touch page faults); then the
compact form the worker writes with abc_eval = "gpu" (its "eval" timer), median of the rounds.
Each thread count runs three paths to the compact form on the same inputs, each into buffers
of its own: what the worker runs (bit-only stages in groups of instances, engine.circuit.bitslice,
their bits kept apart from z for the compact form), the same into the whole z, and every instance
through the interpreter (the path before both); the last column says whether each compact form
is the worker's, byte for byte.
First, the time to make a synthetic sector's first partition's share (its trees, then partition
0's vanilla proofs): what a job's dispatcher waits for before it hands out the job's first
partition; and the whole sector.

    python3 scripts/witness_bench.py --preset porep-32g --threads 1,2 --repeat 3
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numba
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.c2.assign import Partition
from engine.c2.circuit import build_c2
from engine.c2.preset import PRESETS, synthetic_prover_id
from engine.c2.public import Statement
from engine.c2.synthetic import synthetic_c1, synthetic_sector
from engine.groth16.compact import WitnessLayout, write_compact
from engine.seal.registry import seal_proof
from engine.synthesis import general_capacity
from kernels.textfmt import table


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--preset", default="porep-32g", help=f"a C2 preset: {', '.join(PRESETS)}")
    ap.add_argument("--threads", default="1", help="numba thread counts, comma-separated (default 1)")
    ap.add_argument("--repeat", type=int, default=3, help="timed rounds per thread count (default 3)")
    args = ap.parse_args(argv)
    if args.preset not in PRESETS:
        print(f"witness_bench: unknown preset {args.preset!r}; choose from {', '.join(PRESETS)}", file=sys.stderr)
        return 2
    try:
        threads = [int(t) for t in args.threads.split(",")]
    except ValueError:
        threads = []
    most = numba.config.NUMBA_NUM_THREADS  # type: ignore[attr-defined]
    if not threads or any(not 1 <= t <= most for t in threads) or args.repeat < 1:
        print(f"witness_bench: --threads takes counts 1..{most}, --repeat at least 1", file=sys.stderr)
        return 2

    t0 = time.perf_counter()
    proof = seal_proof(PRESETS[args.preset])
    circuit = build_c2(proof, matrices=False)
    prover = synthetic_prover_id(1)
    c1 = synthetic_c1(proof, 1, prover_id=prover, sector_id=1, partitions=1)
    statement = Statement(proof, prover, 1, c1.ticket, c1.seed, c1.comm_d, c1.comm_r)
    part = Partition.of_c1(c1, 0)
    z = np.empty((circuit.shape.num_vars, 4), np.uint64)
    circuit.witness_of(part, statement, z)  # warm-up: JIT and first touch
    print(f"{args.preset}: {circuit.shape.num_vars:,} variables; circuit, sector and warm-up "
          f"{time.perf_counter() - t0:.1f} s", flush=True)
    # what a job's dispatcher makes before its first partition can start: the sector's trees
    # and partition 0's vanilla proofs (the rest are made as their partitions are dispatched)
    first, made = [], []
    for seed in range(2, 2 + args.repeat):
        t = time.perf_counter()
        sec = synthetic_sector(proof, seed, prover_id=synthetic_prover_id(seed), sector_id=1)
        sec.vanilla(0)
        first.append(time.perf_counter() - t)
        sec.c1()
        made.append(time.perf_counter() - t)
    print(f"a synthetic sector: its first partition's share {statistics.median(first):.3f} s, the whole "
          f"sector ({proof.partitions} partitions) {statistics.median(made):.3f} s (medians of {len(made)})",
          flush=True)

    # the three ways to the compact form (abc_eval = "gpu"), each into buffers of its own kept
    # between rounds as a worker keeps them: what the worker runs (bit-only stages sliced, their
    # bits kept apart from z), sliced into the whole z, and the interpreter (the path before)
    layout = WitnessLayout(circuit.shape.num_vars, general_capacity(circuit.shape))
    paths = {"worker": dict(sliced=True, known=np.full(circuit.shape.num_vars, 2, np.uint8)),
             "sliced, whole z": dict(sliced=True, known=None), "interpreter": dict(sliced=False, known=None)}
    bufs = {name: (z if name == "worker" else np.empty_like(z), np.zeros(layout.words, np.uint64)) for name in paths}
    for name, how in paths.items():  # warm-up: JIT and first touch
        circuit.witness_of(part, statement, bufs[name][0], **how)
        write_compact(bufs[name][0], bufs[name][1], layout, how["known"])
    rows = []
    for n in threads:
        numba.set_num_threads(n)
        first = None
        for name, how in paths.items():
            into, words = bufs[name]
            wall, cpu, packed = [], [], []
            for _ in range(args.repeat):
                t, c = time.perf_counter(), time.process_time()
                circuit.witness_of(part, statement, into, **how)
                wall.append(time.perf_counter() - t)
                cpu.append(time.process_time() - c)
                t = time.perf_counter()
                write_compact(into, words, layout, how["known"])
                packed.append(time.perf_counter() - t)
            total = min(wall) + statistics.median(packed)
            first = first or total
            same = np.array_equal(words, bufs["worker"][1])
            rows.append([str(n), name, f"{min(wall):.3f}", f"{statistics.median(wall):.3f}", f"{min(cpu):.3f}",
                         f"{statistics.median(packed):.3f}", f"{total:.3f}", f"{total / first:.2f}", str(same)])
    print("\n".join(table(["threads", "path", "witness min s", "median s", "min CPU s", "compact s",
                           "both s", "x worker", "same compact"], rows)))
    print(f"host CPUs: {numba.config.NUMBA_NUM_THREADS}")  # type: ignore[attr-defined]
    return 0


if __name__ == "__main__":
    sys.exit(main())
