"""`sealtop bench prove`: full proofs, timed, with the time broken down.

Two modes, chosen by the CLI (engine/verbs/cli.py is only the argument layer):

* chains (``--sizes``): multiplication chains of exactly 2^k constraints, proved end to end
  (key load (checksum verified on first load, then stamped), evaluation, NTTs, MSMs, assembly) against snarkjs's anchor times;
* presets (``--preset``): one partition of a preset's circuit (porep presets such as tiny,
  small, medium, large, porep-32g; also cubic and chain-N) proved the way a prover process does
  it: the key is made once if missing (:func:`engine.pipeline.proving.ensure_key`), loaded and
  placed where the MSMs run once per preset (:func:`engine.pipeline.proving.load_key`: at
  ``large`` the key is ~8.5 GB, so it is never reloaded per run), then after a warm-up every run
  does witness → a/b/c evaluation → ``proving.start`` → ``proving.finish``. Each run reports the
  host wall time of every step and the per-group times the backend measured
  (``handle.timings_ms``: upload, ntt, msm_h, msm_a, msm_b1, msm_l, b2, and whatever else a
  backend adds). The first timed proof is checked with the independent verifier.
"""

from __future__ import annotations

import gc
import os
import re
import secrets
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from engine.groth16.prove import TIMER_GROUPS
from engine.stream.schema import KERNEL_GROUPS
from kernels.textfmt import exc_line, fmt_bytes, table

# snarkjs 0.7.6 groth16 prove, wall seconds, 2-core machine (docs/ANCHORS.md), by log2 size
SNARKJS_PROVE_S = {10: 1.36, 12: 2.39, 14: 6.19, 16: 17.77}
# The prover's kernel groups in the order they are printed; unknown groups follow, sorted.
GROUP_ORDER = TIMER_GROUPS
# The seed of every partition witness in the preset bench (the warm-up makes its sector).
BENCH_SEED = 1

Log = Callable[[str], None]


def _say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- chains (--sizes)
def chain_key(circuit, backend, cache: Path, log: Log = _say) -> Path:
    """The chain's key in the cache (made by the engine's ensure_key on first use), timed."""
    from engine.pipeline import proving

    t = time.perf_counter()
    path, _ = proving.ensure_key(circuit, cache, backend.name, progress=lambda m: log(f"  {m}"))
    log(f"  key {path.name} ready in {time.perf_counter() - t:.1f} s")
    return path


def bench_chains(sizes: Sequence[int], backend, repeat: int, cache: Path, log: Log = _say) -> list[dict]:
    """Median full-prove wall time per size, with the kernel-group split and the snarkjs ratio."""
    from engine.groth16 import examples
    from engine.groth16.keyfile import load_proving_key
    from engine.groth16.prove import prove
    from engine.groth16.verify import verify
    from engine.groth16.vkey import verifying_key
    from kernels.constants import R_MOD

    rows = []
    warm = examples.chain_for_constraints(1 << 6)
    wpk = load_proving_key(chain_key(warm, backend, cache, log=log))
    log("  warm-up (loads or compiles the kernels)")
    prove(wpk, warm.r1cs, warm.witness(3), backend)
    for k in sizes:
        circuit = examples.chain_for_constraints(1 << k)
        path = chain_key(circuit, backend, cache, log=log)
        times, splits, ok = [], [], True
        for i in range(repeat + 1):
            z = circuit.witness(secrets.randbelow(R_MOD))
            tm: dict[str, float] = {}
            cpu0 = os.times()
            t = time.perf_counter()
            pk = load_proving_key(path)
            tm["load"] = (time.perf_counter() - t) * 1e3
            proof = prove(pk, circuit.r1cs, z, backend, precheck=False, timings=tm)
            wall = time.perf_counter() - t
            cpu1 = os.times()
            tm["cpu"] = (cpu1.user - cpu0.user + cpu1.system - cpu0.system) * 1e3
            if i == 0:  # the first run at a size warms the page cache and NTT tables
                ok = verify(verifying_key(pk), examples.public_inputs(circuit.r1cs, z), proof)
                continue
            times.append(wall)
            splits.append(tm)
            log(f"  2^{k}: run {i}: {wall:.2f} s wall, {tm['cpu'] / 1e3:.2f} s cpu")
        med = statistics.median(times)
        mid = splits[times.index(sorted(times)[len(times) // 2])]
        anchor = SNARKJS_PROVE_S.get(k)
        rows.append({
            "log_constraints": k,
            "constraints": circuit.r1cs.num_constraints,
            "prove_s": round(med, 3),
            "cpu_s": round(mid["cpu"] / 1e3, 3),
            "snarkjs_s": anchor,
            "ratio": round(med / anchor, 3) if anchor else None,
            "verified": ok,
            "ms": {key: round(v, 1) for key, v in mid.items()},
            "backend": backend.name,
        })
    return rows


def format_chains(rows: Sequence[dict]) -> str:
    # the chain run's own steps around the kernel groups (upload is timed only on a device)
    groups = ("load", "eval", *(g for g in KERNEL_GROUPS if g != "upload"), "b2")
    head = ["constraints", "prove s", "snarkjs s", "ratio", "cpu s", "verified", *[f"{g} ms" for g in groups]]
    body = []
    for r in rows:
        body.append([
            f"2^{r['log_constraints']}", f"{r['prove_s']:.2f}",
            f"{r['snarkjs_s']:.2f}" if r["snarkjs_s"] else "-",
            f"{r['ratio']:.2f}" if r["ratio"] else "-",
            f"{r['cpu_s']:.2f}",
            "yes" if r["verified"] else "NO",
            *[f"{r['ms'].get(g, 0):.0f}" for g in groups],
        ])
    lines = table(head, body)
    lines.append("prove s: median wall time (key load (checksum verified on first load, then stamped), evaluation, NTTs, MSMs, assembly); cpu s: "
                 "process CPU time of that run (wall well above cpu/cores means the machine is shared).")
    lines.append("ratio = ours / snarkjs 0.7.6 groth16 prove (wall, 2-core machine, docs/ANCHORS.md); "
                 "below 1.0 is faster. Keys: INSECURE TEST PARAMETERS.")
    if rows:
        lines.append(f"backend: {rows[0]['backend']}; host CPUs: {os.cpu_count()}")
    return "\n".join(lines)


# ---------------------------------------------------------------- presets (--preset)
def parse_presets(text: str) -> list[str]:
    """The comma-separated preset names, all checked before any work starts (a typo in the last
    one should not surface after an hour of proving). PresetError names what exists."""
    from engine.pipeline.circuits import MAX_CHAIN, PresetError, preset_names

    names = [p.strip() for p in text.split(",") if p.strip()]
    known = [n for n in preset_names() if n != "chain-N"]
    if not names:
        raise PresetError(f"no preset given (presets: {', '.join(preset_names())})")
    for name in names:
        chain = re.fullmatch(r"chain-(\d+)", name)
        if chain and 1 <= int(chain.group(1)) <= MAX_CHAIN:
            continue
        if name not in known:
            raise PresetError(f"unknown preset {name!r} (presets: {', '.join(preset_names())})")
    return names


def order_groups(names: Sequence[str]) -> list[str]:
    """Kernel-group names in print order: GROUP_ORDER first, then the rest sorted."""
    seen = set(names)
    return [g for g in GROUP_ORDER if g in seen] + sorted(seen - set(GROUP_ORDER))


def _sync(backend) -> None:
    """Wait for the device so a host timer covers the work queued on it (no-op on the CPU)."""
    try:
        backend.synchronize()
    except Exception:
        pass


def _release(backend) -> None:
    """Hand back the previous preset's device memory before the next preset's key goes up."""
    gc.collect()
    try:
        backend.release_pools()
    except Exception:
        pass


def _one_run(circuit, plan, key, backend, z, abc) -> tuple[dict[str, float], dict[str, float], Any, bytes]:
    """One partition prove: (host step ms, backend group ms, z, proof)."""
    from engine.pipeline import proving
    from engine.synthesis import evaluate

    t0 = time.perf_counter()
    z = circuit.witness(BENCH_SEED, 0, 1, z)
    t1 = time.perf_counter()
    evaluate(circuit.r1cs, z, out=abc, plan=plan)
    t2 = time.perf_counter()
    a, b, c = abc
    handle = proving.start(key, a, b, c, z, backend)
    t3 = time.perf_counter()
    proof = proving.finish(handle, "auto", key)
    t4 = time.perf_counter()
    steps = {
        "witness_ms": (t1 - t0) * 1e3,
        "eval_ms": (t2 - t1) * 1e3,
        "start_wall_ms": (t3 - t2) * 1e3,
        "finish_wall_ms": (t4 - t3) * 1e3,
        "total_ms": (t4 - t0) * 1e3,
    }
    return steps, proving.kernel_timings(handle), z, proof


def bench_preset(name: str, backend, repeat: int, param_dir: Path, log: Log = _say) -> dict:
    """One preset: build (or load) the circuit, ensure and load its key once, a warm-up run,
    then ``repeat`` timed runs; medians per column, the first timed proof verified."""
    import numpy as np

    from engine.pipeline import proving
    from engine.pipeline.circuits import circuit_cache_dir, resolve
    from engine.synthesis import alloc_abc, eval_plan

    t = time.perf_counter()
    circuit = resolve(name, circuit_cache_dir(param_dir))
    circuit_s = time.perf_counter() - t
    r1cs = circuit.r1cs
    log(f"bench prove {name}: {r1cs.num_constraints:,} constraints, {r1cs.num_vars:,} variables "
        f"(circuit ready in {circuit_s:.1f} s)")

    t = time.perf_counter()
    path, vk = proving.ensure_key(circuit, param_dir, backend.name, progress=lambda m: log(f"  {m}"))
    setup_s = time.perf_counter() - t
    log(f"  key {path} ({fmt_bytes(path.stat().st_size)}) ready in {setup_s:.1f} s")

    t = time.perf_counter()
    key = proving.load_key(str(path), backend)
    _sync(backend)
    load_s = time.perf_counter() - t
    log(f"  key load + upload: {load_s:.2f} s")
    log_n = key.pk.log_n

    z = np.empty((r1cs.num_vars, 4), np.uint64)
    abc = alloc_abc(r1cs)
    plan = eval_plan(r1cs)
    runs: list[dict] = []
    verified = False
    try:
        log("  warm-up run (compiles or loads the kernels, makes the sector)")
        _one_run(circuit, plan, key, backend, z, abc)
        for i in range(1, repeat + 1):
            steps, groups, zz, proof = _one_run(circuit, plan, key, backend, z, abc)
            if i == 1:
                public = circuit.public_inputs(BENCH_SEED, 0, 1)  # the verifier's, not from z
                verified = proving.verify(vk, public, proof)
                log(f"  first timed proof {'verifies' if verified else 'does NOT verify'}")
            runs.append({**steps, "groups_ms": groups})
            log(f"  run {i}: {steps['total_ms'] / 1e3:.2f} s ("
                + ", ".join(f"{g} {groups[g]:.0f} ms" for g in order_groups(list(groups))) + ")")
    finally:
        del key
    names = order_groups([g for r in runs for g in r["groups_ms"]])
    med = {k: statistics.median(r[k] for r in runs)
           for k in ("witness_ms", "eval_ms", "start_wall_ms", "finish_wall_ms", "total_ms")}
    return {
        "preset": name,
        "constraints": r1cs.num_constraints,
        "variables": r1cs.num_vars,
        "log_n": log_n,
        "backend": backend.name,
        "repeat": repeat,
        "circuit_s": round(circuit_s, 3),
        "setup_s": round(setup_s, 3),
        "key_load_s": round(load_s, 3),
        "key_bytes": path.stat().st_size,
        **{k: round(v, 1) for k, v in med.items()},
        "groups_ms": {g: round(statistics.median(r["groups_ms"][g] for r in runs if g in r["groups_ms"]), 1)
                      for g in names},
        "prove_s": round(med["total_ms"] / 1e3, 3),
        "verified": bool(verified),
        "runs": [{k: (round(v, 1) if isinstance(v, float) else {g: round(x, 1) for g, x in v.items()})
                  for k, v in r.items()} for r in runs],
    }


def bench_presets(presets: Sequence[str], backend, repeat: int, param_dir: Path, log: Log = _say) -> list[dict]:
    """:func:`bench_preset` for each preset in turn, releasing device memory in between. A preset
    that fails (say, out of device memory at porep-32g) becomes a row with its error, so the
    presets that fit still report; such a row counts as not verified."""
    rows = []
    for name in presets:
        try:
            rows.append(bench_preset(name, backend, repeat, param_dir, log))
        except Exception as exc:
            msg = exc_line(exc)
            log(f"  {name} failed: {type(exc).__name__}: {msg}")
            rows.append({"preset": name, "backend": backend.name, "verified": False,
                         "error": f"{type(exc).__name__}: {msg}"})
        finally:
            _release(backend)
    return rows


def format_presets(rows: Sequence[dict]) -> str:
    """The preset table, then one line per preset with its setup and key-load times."""
    ok = [r for r in rows if "error" not in r]
    groups = order_groups([g for r in ok for g in r["groups_ms"]])
    head = ["preset", "constraints", "domain", "witness ms", "eval ms", *[f"{g} ms" for g in groups],
            "start ms", "finish ms", "prove s", "verified"]
    body = [[
        r["preset"], f"{r['constraints']:,}", f"2^{r['log_n']}", f"{r['witness_ms']:.1f}", f"{r['eval_ms']:.1f}",
        *[f"{r['groups_ms'][g]:.1f}" if g in r["groups_ms"] else "-" for g in groups],
        f"{r['start_wall_ms']:.1f}", f"{r['finish_wall_ms']:.1f}", f"{r['prove_s']:.3f}",
        "yes" if r["verified"] else "NO",
    ] for r in ok]
    lines = table(head, body)
    for r in rows:
        if "error" in r:
            lines.append(f"{r['preset']}: FAILED: {r['error']}")
    if ok:
        repeat = ok[0]["repeat"]
        lines.append(f"Medians of {repeat} run(s) after a warm-up, each column on its own. prove s: one partition, "
                     "witness + eval + start + finish (host wall).")
        lines.append("start/finish ms: host wall of proving.start (H, G1 MSMs) and proving.finish (B2, assembly); "
                     "group ms: as the backend measured them; witness ms excludes the sector (the warm-up makes it).")
    for r in ok:
        lines.append(f"{r['preset']}: circuit {r['circuit_s']:.2f} s; key setup/check (ensure_key) "
                     f"{r['setup_s']:.2f} s; key load + upload {r['key_load_s']:.2f} s "
                     f"({fmt_bytes(r['key_bytes'])})")
    if rows:
        lines.append(f"backend: {rows[0]['backend']}; host CPUs: {os.cpu_count()}; "
                     "keys: INSECURE TEST PARAMETERS")
    return "\n".join(lines)
