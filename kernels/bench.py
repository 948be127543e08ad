"""Times the kernels alone, through the Backend interface: ``python -m kernels.bench``.

    python -m kernels.bench [--backend cpu|cuda] [--what msm_g1,ntt] [--sizes 12,14,16]
                            [--repeat N] [--json]

Each kernel is run once as a warm-up (this includes the first JIT compilation or module load),
then ``repeat`` times; the table shows the median, the rate, and where docs/ANCHORS.md has
a figure for that kernel and size, the anchor and the ratio ours / anchor (below 1.0 is faster).
The anchors are sppark's figures on an NVIDIA H200; beside a CPU run they are a reference only.

Inputs are fresh every run: uniformly random Fr scalars (full 255-bit values) and distinct
points, made as random multiples of the generator with the backend's own fixed-base kernel.
``run_bench`` returns the rows as dicts so ``sealtop bench kernels`` prints the same thing.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from kernels.anchors import ANCHOR_SOURCE, ANCHORS_MS, DEFAULT_SIZES
from kernels.backend import Backend, BackendUnavailable, get_backend
from kernels.constants import G1_GEN, G2_GEN, R_MOD
from kernels.textfmt import OneLineParser, error_line, table

KERNELS = ("msm_g1", "msm_g2", "ntt", "intt", "coset_ntt")

KERNEL_TITLES = {
    "msm_g1": "G1 MSM",
    "msm_g2": "G2 MSM",
    "ntt": "NTT forward",
    "intt": "NTT inverse",
    "coset_ntt": "NTT coset forward",
}

MAX_LOG = {"msm_g1": 26, "msm_g2": 26, "ntt": 27, "intt": 27, "coset_ntt": 27}

_R_TOP = R_MOD >> 192  # r's top limb: a top limb below it keeps a random value under r


class BenchError(ValueError):
    """A bad benchmark request (unknown kernel, size out of range); the message is one line."""


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def random_scalars(n: int, rng: np.random.Generator) -> np.ndarray:
    """n random Fr elements in storage form (uniform limbs, top limb below r's, so values < r)."""
    out = rng.integers(0, 2**64, size=(n, 4), dtype=np.uint64, endpoint=False)
    out[:, 3] = rng.integers(0, _R_TOP, size=n, dtype=np.uint64)
    return out


def _generator_rows() -> tuple[np.ndarray, np.ndarray]:
    from kernels.cpu.convert import g1_to_storage, g2_to_storage

    return g1_to_storage([G1_GEN])[0], g2_to_storage([G2_GEN])[0]


def distinct_points(backend: Backend, group: str, n: int, rng: np.random.Generator) -> np.ndarray:
    """n points k_i·G for random k_i: distinct with overwhelming probability, and cheap to make."""
    g1, g2 = _generator_rows()
    ks = random_scalars(n, rng)
    if group == "g1":
        return backend.fixed_base_g1(g1, ks)
    return backend.fixed_base_g2(g2, ks)


def _time(fn: Callable[[], Any], repeat: int) -> list[float]:
    """Wall milliseconds of ``repeat`` calls after one warm-up call."""
    fn()
    runs = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        runs.append((time.perf_counter() - t0) * 1e3)
    return runs


def _one(backend: Backend, kernel: str, log_n: int, repeat: int, rng: np.random.Generator) -> dict[str, Any]:
    n = 1 << log_n
    if kernel in ("msm_g1", "msm_g2"):
        group = kernel[-2:]
        _log(f"  {KERNEL_TITLES[kernel]} 2^{log_n}: making {n} distinct points ...")
        points = backend.resident(distinct_points(backend, group, n, rng))
        scalars = random_scalars(n, rng)
        msm = backend.msm_g1 if group == "g1" else backend.msm_g2
        fn: Callable[[], Any] = lambda: msm(points, scalars)  # noqa: E731
    else:
        a = random_scalars(n, rng)
        inverse = kernel == "intt"
        coset = kernel == "coset_ntt"
        fn = lambda: backend.ntt(a, inverse=inverse, coset=coset)  # noqa: E731
    _log(f"  {KERNEL_TITLES[kernel]} 2^{log_n}: warm-up and {repeat} timed runs ...")
    runs = _time(fn, repeat)
    ms = statistics.median(runs)
    anchor = ANCHORS_MS.get(kernel, {}).get(log_n)
    return {
        "backend": backend.name,
        "kernel": kernel,
        "title": KERNEL_TITLES[kernel],
        "log_n": log_n,
        "n": n,
        "ms": ms,
        "runs_ms": runs,
        "per_s": n / (ms / 1e3) if ms > 0 else float("inf"),
        "anchor_ms": anchor,
        "ratio": (ms / anchor) if anchor else None,
        "anchor_is_gpu": anchor is not None,
    }


def resolve_sizes(
    backend_name: str, what: Iterable[str] | None, sizes: Mapping[str, Sequence[int]] | Sequence[int] | None
) -> list[tuple[str, int]]:
    """The (kernel, log2 size) pairs to time: defaults per backend, or what the caller named.

    ``sizes`` may be one list of log2 sizes for every kernel in ``what``, or a mapping from
    kernel to its list. Raises BenchError for an unknown kernel or a size out of range.
    """
    defaults = DEFAULT_SIZES.get(backend_name, DEFAULT_SIZES["cpu"])
    kernels = list(what) if what else list(defaults)
    for k in kernels:
        if k not in KERNELS:
            raise BenchError(f"unknown kernel {k!r} (choose from {', '.join(KERNELS)})")
    plan: list[tuple[str, int]] = []
    for k in kernels:
        if sizes is None:
            logs = list(defaults.get(k, DEFAULT_SIZES["cuda"].get(k, [])))
        elif isinstance(sizes, Mapping):
            logs = list(sizes.get(k, defaults.get(k, [])))
        else:
            logs = list(sizes)
        for lg in logs:
            if not isinstance(lg, int) or not 1 <= lg <= MAX_LOG[k]:
                raise BenchError(f"size 2^{lg} out of range for {k} (2^1 to 2^{MAX_LOG[k]})")
            plan.append((k, lg))
    if isinstance(sizes, Mapping):
        for k in sizes:
            if k not in KERNELS:
                raise BenchError(f"unknown kernel {k!r} in sizes (choose from {', '.join(KERNELS)})")
            if k not in kernels:
                plan.extend((k, lg) for lg in sizes[k])
    return plan


def run_bench(
    backend: str | Backend = "cpu",
    what: Iterable[str] | None = None,
    sizes: Mapping[str, Sequence[int]] | Sequence[int] | None = None,
    repeat: int = 5,
) -> list[dict[str, Any]]:
    """Time each kernel at each size; one dict per (kernel, size), in the order timed.

    backend: a name for get_backend ("cpu", "cuda", "auto") or a Backend object.
    what: kernel names from KERNELS (default: the backend's default set).
    sizes: log2 sizes, one list for all kernels or a mapping kernel -> list.
    Raises BackendUnavailable when the backend cannot run here, BenchError on a bad request.
    """
    if repeat < 1:
        raise BenchError(f"repeat must be at least 1, got {repeat}")
    be = get_backend(backend) if isinstance(backend, str) else backend
    plan = resolve_sizes(be.name, what, sizes)
    if be.name == "cuda":
        # GPU rows are timed with CUDA events on device-resident inputs (kernels/cuda/bench.py).
        from kernels.cuda.bench import device_bench

        by_kernel: dict[str, list[int]] = {}
        for k, lg in plan:
            by_kernel.setdefault(k, []).append(lg)
        return device_bench(list(by_kernel), by_kernel, repeat)
    rng = np.random.default_rng()
    return [_one(be, k, lg, repeat, rng) for k, lg in plan]


def _fmt_rate(per_s: float) -> str:
    for unit, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if per_s >= scale:
            return f"{per_s / scale:.2f} {unit}/s"
    return f"{per_s:.0f} /s"


def format_table(rows: Sequence[dict[str, Any]]) -> str:
    """The rows as a plain-text table with a footnote on what the anchors are."""
    head = ("kernel", "size", "median ms", "elements/s", "anchor ms", "ratio")
    body = [
        (
            r["title"],
            f"2^{r['log_n']}",
            f"{r['ms']:.2f}",
            _fmt_rate(r["per_s"]),
            "-" if r["anchor_ms"] is None else f"{r['anchor_ms']:g}",
            "-" if r["ratio"] is None else f"{r['ratio']:.1f}x",
        )
        for r in rows
    ]
    lines = table(head, body, left=1, rule=True)
    backends = sorted({r["backend"] for r in rows})
    lines.append("")
    lines.append(f"backend: {', '.join(backends) or '-'}; median of the timed runs after one warm-up.")
    lines.append(f"anchor: {ANCHOR_SOURCE}; ratio = ours / anchor.")
    if "cpu" in backends:
        lines.append("the anchors are GPU figures: beside the cpu backend the ratio is a reference, not a target.")
    if "cuda" in backends:
        lines.append("cuda rows: GPU-resident inputs, CUDA events, as the sppark anchors were measured.")
    return "\n".join(lines)


def _parse_size(tok: str) -> int:
    """'16' or '2^16' is log2 16; a larger plain number must be a power of two (a count)."""
    t = tok.strip()
    if t.startswith("2^"):
        t = t[2:]
        if not t.isdigit():
            raise BenchError(f"bad size {tok!r}")
        return int(t)
    if not t.isdigit():
        raise BenchError(f"bad size {tok!r} (give log2 sizes like 16, 2^16, or a power-of-two count)")
    v = int(t)
    if v <= 32:
        return v
    if v & (v - 1):
        raise BenchError(f"size {v}: give a log2 size like 16 or 2^16, or a power-of-two count")
    return v.bit_length() - 1


def parse_sizes(tokens: Sequence[str]) -> dict[str, list[int]] | list[int] | None:
    """``--sizes`` tokens: ``12,14,16`` (every kernel) and/or ``KERNEL=12,14`` (one kernel)."""
    if not tokens:
        return None
    common: list[int] = []
    per: dict[str, list[int]] = {}
    for tok in tokens:
        if "=" in tok:
            k, _, vals = tok.partition("=")
            k = k.strip()
            if k not in KERNELS:
                raise BenchError(f"unknown kernel {k!r} in --sizes (choose from {', '.join(KERNELS)})")
            per.setdefault(k, []).extend(_parse_size(v) for v in vals.split(",") if v.strip())
        else:
            common.extend(_parse_size(v) for v in tok.split(",") if v.strip())
    if per and common:
        raise BenchError("--sizes: give either plain sizes or KERNEL=sizes, not both")
    return per or common


def build_parser(prog: str = "python -m kernels.bench") -> argparse.ArgumentParser:
    p = OneLineParser(prog=prog, description="Time the kernels alone (MSM, NTT) through the Backend interface.")
    p.add_argument("--backend", default="cpu", choices=["cpu", "cuda", "auto"], help="backend to time (default cpu)")
    p.add_argument(
        "--what",
        default=None,
        help=f"comma-separated kernels from {', '.join(KERNELS)} (default: the backend's set)",
    )
    p.add_argument(
        "--sizes",
        nargs="+",
        default=None,
        metavar="SIZES",
        help="log2 sizes, e.g. '12,14,16' for every kernel or 'msm_g1=12,14 ntt=16,20'",
    )
    p.add_argument("--repeat", type=int, default=5, help="timed runs per size after one warm-up (default 5)")
    p.add_argument("--json", action="store_true", help="print the rows as JSON instead of a table")
    return p


def main(argv: Sequence[str] | None = None, prog: str = "python -m kernels.bench") -> int:
    parser = build_parser(prog)
    args = parser.parse_args(argv)
    try:
        what = [w.strip() for w in args.what.split(",") if w.strip()] if args.what else None
        sizes = parse_sizes(args.sizes or [])
        if args.repeat < 1:
            raise BenchError(f"--repeat must be at least 1, got {args.repeat}")
        # validate the request before paying for a backend or any JIT compilation
        resolve_sizes(args.backend if args.backend != "auto" else "cpu", what, sizes)
        be = get_backend(args.backend)
        _log(f"benchmarking kernels on the {be.name} backend (first runs include JIT compilation)")
        rows = run_bench(be, what, sizes, args.repeat)
    except (BenchError, BackendUnavailable) as exc:
        print(error_line(prog, str(exc)), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(error_line(prog, "interrupted"), file=sys.stderr)
        return 130
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        print(format_table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
