"""Generate a preset's proving key in GPU memory and prove partitions with it, outside the engine.

    python3 scripts/device_key_probe.py PRESET [--params DIR] [--proofs N] [--json OUT]

What the engine's prover does with a device source (engine.pipeline.proving.make_device_key),
timed phase by phase: the circuit from the cache, the key by section (host QAP phases and
each section's device time), then N partitions proved with the key (witness, a/b/c evaluation,
the GPU half by kernel group, B2 and assembly) and each proof checked by the oracle's pairing.
Device memory: the CUDA runtime's used bytes after the key and the highest reading of a 20 ms
sampler (NVML-free: memGetInfo) during the proofs; host: peak RSS. For docs/PLAN-32G.md.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kernels.textfmt import OneLineParser  # noqa: E402


def main() -> int:
    ap = OneLineParser(description=__doc__.splitlines()[0])
    ap.add_argument("preset")
    ap.add_argument("--params", default=os.environ.get("SEALTOP_PARAMS", ".params"))
    ap.add_argument("--proofs", type=int, default=1)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()

    import cupy as cp

    from engine.groth16.prove import evaluate
    from engine.pipeline import proving
    from engine.pipeline.circuits import circuit_cache_dir, resolve
    from kernels.backend import get_backend

    t0 = time.perf_counter()

    def say(msg: str) -> None:
        print(f"{time.perf_counter() - t0:8.1f} s  {msg}", flush=True)

    cache = circuit_cache_dir(Path(args.params))
    circuit = resolve(args.preset, cache)
    say(f"circuit {args.preset}: {circuit.constraints} constraints, {circuit.r1cs.num_vars} variables")
    gpu = get_backend("cuda")
    total = cp.cuda.runtime.memGetInfo()[1]
    base_used = total - cp.cuda.runtime.memGetInfo()[0]
    tk = time.perf_counter()
    key, vk = proving.make_device_key(proving.device_source(circuit, cache), gpu, 1, say)
    cp.cuda.Device().synchronize()
    key_s = time.perf_counter() - tk
    pool = cp.get_default_memory_pool()
    used_key = total - cp.cuda.runtime.memGetInfo()[0]
    say(f"device key: {key_s:.1f} s; device used {used_key / 2**30:.2f} GiB (pool {pool.used_bytes() / 2**30:.2f} "
        f"GiB in use, context and others {base_used / 2**30:.2f} GiB before); compacted sections: "
        f"{[k for k, q in key.tables.items() if q.index is not None]}")

    peak = [used_key]
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            peak[0] = max(peak[0], total - cp.cuda.runtime.memGetInfo()[0])
            time.sleep(0.02)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    rows = []
    for i in range(args.proofs):
        t1 = time.perf_counter()
        z = circuit.witness(1, i, max(args.proofs, 1))
        t2 = time.perf_counter()
        a, b, c = evaluate(circuit.r1cs, z)
        t3 = time.perf_counter()
        handle = proving.start(key, a, b, c, z, gpu)
        del a, b, c
        t4 = time.perf_counter()
        proof = proving.finish(handle, "gpu", key)
        t5 = time.perf_counter()
        ok = proving.verify(vk, circuit.public_inputs(1, i, max(args.proofs, 1)), proof)
        row = {"partition": i, "witness_s": t2 - t1, "eval_s": t3 - t2, "start_s": t4 - t3,
               "finish_s": t5 - t4, "kernels_ms": proving.kernel_timings(handle), "verified": ok}
        rows.append(row)
        say(f"partition {i}: witness {row['witness_s']:.2f} s, eval {row['eval_s']:.2f} s, GPU start "
            f"{row['start_s']:.2f} s, finish {row['finish_s']:.2f} s, kernels "
            + ", ".join(f"{k} {v:.0f}" for k, v in row["kernels_ms"].items()) + f" ms; verified {ok}")
        del handle, z
    stop.set()
    sampler.join()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    say(f"peak device used {peak[0] / 2**30:.2f} GiB of {total / 2**30:.2f} GiB; peak host RSS {rss / 2**30:.2f} GiB")
    if args.json:
        Path(args.json).write_text(json.dumps({
            "preset": args.preset, "key_s": key_s, "device_used_after_key": used_key,
            "device_peak": peak[0], "device_total": total, "host_peak_rss": rss, "proofs": rows}, indent=1))
    return 0 if all(r["verified"] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
