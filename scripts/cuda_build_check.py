"""Compile every CUDA module for sm_90 with the local nvcc, without a GPU.

    python scripts/cuda_build_check.py [OUTDIR] [--define NAME=VALUE ...] [--modules field,ntt,...]

Each module is assembled exactly as kernels/cuda/module.py hands it to NVRTC, compiled to a cubin
with ptxas' resource report (registers, spills per kernel), and the report is printed. This catches
compile errors and register spills before a lent GPU's time is spent on them. Exit status 1 when
any module fails to compile.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kernels.textfmt import OneLineParser  # noqa: E402


def compile_module(name: str, out: Path, defines: dict[str, str]) -> tuple[str, bool, str, float]:
    from kernels.cuda.module import MODULES, OPTIONS
    from kernels.cuda.source import assemble

    src = out / f"{name}.cu"
    src.write_text(assemble(MODULES[name], defines))
    t = time.perf_counter()
    proc = subprocess.run(
        ["nvcc", "-cubin", "-arch=sm_90", *OPTIONS, "-Xptxas", "-v", "-o", str(out / f"{name}.cubin"), str(src)],
        capture_output=True, text=True,
    )
    return name, proc.returncode == 0, proc.stdout + proc.stderr, time.perf_counter() - t


def main(argv: list[str] | None = None) -> int:
    from kernels.cuda.module import MODULES

    ap = OneLineParser(description=__doc__.splitlines()[0])
    ap.add_argument("outdir", nargs="?", default=None)
    ap.add_argument("--define", action="append", default=[], metavar="NAME=VALUE")
    ap.add_argument("--modules", default=",".join(MODULES))
    args = ap.parse_args(argv)
    if shutil.which("nvcc") is None:
        print("nvcc is not on PATH", file=sys.stderr)
        return 2
    out = Path(args.outdir or tempfile.mkdtemp(prefix="sealtop-cubin-"))
    out.mkdir(parents=True, exist_ok=True)
    defines = dict(d.split("=", 1) for d in args.define)
    names = [n for n in args.modules.split(",") if n]
    ok_all = True
    with ThreadPoolExecutor(max_workers=len(names)) as ex:
        for name, ok, log, secs in ex.map(lambda n: compile_module(n, out, defines), names):
            ok_all &= ok
            print(f"== {name}: {'ok' if ok else 'FAILED'} in {secs:.1f} s")
            for line in log.splitlines():
                if "error" in line or "Used" in line or "spill" in line and "0 bytes spill" not in line or "Compiling entry" in line:
                    print("   " + line.strip())
    return 0 if ok_all else 1


if __name__ == "__main__":
    raise SystemExit(main())
