"""Compile every CUDA module for sm_90 with the local nvcc, without a GPU.

    python scripts/cuda_build_check.py [OUTDIR] [--define NAME=VALUE ...] [--modules field,ntt,...]
                                       [--sass KERNEL,...]

Each module is assembled exactly as kernels/cuda/module.py hands it to NVRTC, compiled to a cubin
with ptxas' resource report (registers, spills per kernel), and the report is printed. This catches
compile errors and register spills before a lent GPU's time is spent on them. Exit status 1 when
any module fails to compile.

--sass counts the SASS instructions of the named kernels, and of each out-of-line function they
call, by kind (wide multiply-adds, other IMADs, ALU, local memory, calls): static counts, to
compare two builds of one kernel before a GPU times them. It needs cuobjdump (PyPI's
nvidia-cuda-cuobjdump has one) on PATH.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
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


_ALU = ("IADD3", "LOP3", "SEL", "SHF", "ISETP", "PRMT", "VIADD", "MOV", "IMNMX", "FLO", "POPC")


def sass_functions(listing: str, kernel: str) -> list[tuple[int, Counter[str]]]:
    """One kernel's SASS (from `cuobjdump -sass`) cut at its call targets: (start address, opcode
    counts) for the kernel's own code and for each out-of-line function it calls."""
    body: list[tuple[int, str]] = []
    inside = False
    for line in listing.splitlines():
        if "Function : " in line:
            inside = line.split("Function : ", 1)[1].strip() == kernel
            continue
        m = re.match(r"\s*/\*([0-9a-f]+)\*/\s+(.*?);", line)
        if inside and m:
            body.append((int(m.group(1), 16), m.group(2).strip()))
    targets = sorted({int(t, 16) for _, ins in body for t in re.findall(r"CALL\.REL\.NOINC (0x[0-9a-f]+)", ins)})
    bounds = [0, *targets, 1 << 62]
    out = []
    for lo, hi in zip(bounds, bounds[1:]):
        ops: Counter[str] = Counter()
        for addr, ins in body:
            if lo <= addr < hi:
                words = ins.split()
                ops[words[1] if words[0].startswith("@") else words[0]] += 1
        if ops:
            out.append((lo, ops))
    return out


def sass_line(ops: Counter[str]) -> str:
    """A function's counts: every instruction, the IMAD pipe's (wide ones apart), ALU, local memory."""
    def count(pred: Callable[[str], bool]) -> int:
        return sum(n for op, n in ops.items() if pred(op))
    wide = count(lambda op: op.startswith("IMAD.WIDE"))
    imad = count(lambda op: op.startswith("IMAD")) - wide
    alu = count(lambda op: op.split(".")[0] in _ALU)
    local = count(lambda op: op.split(".")[0] in ("LDL", "STL"))
    calls = count(lambda op: op.startswith("CALL"))
    return f"{sum(ops.values()):6d} instrs  {wide:5d} wide + {imad:5d} other IMAD  {alu:5d} ALU  {local:4d} local  {calls:3d} calls"


def sass_report(cubin: Path, kernels: list[str]) -> list[str]:
    listing = subprocess.run(["cuobjdump", "-sass", str(cubin)], capture_output=True, text=True, check=True).stdout
    lines = []
    for k in kernels:
        funcs = sass_functions(listing, k)
        if funcs:
            lines.append(f"   sass {k}:")
            lines += [f"     {'kernel' if lo == 0 else hex(lo):>9}  {sass_line(ops)}" for lo, ops in funcs]
    return lines


def main(argv: list[str] | None = None) -> int:
    from kernels.cuda.module import MODULES

    ap = OneLineParser(description=__doc__.splitlines()[0])
    ap.add_argument("outdir", nargs="?", default=None)
    ap.add_argument("--define", action="append", default=[], metavar="NAME=VALUE")
    ap.add_argument("--modules", default=",".join(MODULES))
    ap.add_argument("--sass", default="", metavar="KERNEL,...")
    args = ap.parse_args(argv)
    if shutil.which("nvcc") is None:
        print("nvcc is not on PATH", file=sys.stderr)
        return 2
    sass = [k for k in args.sass.split(",") if k]
    if sass and shutil.which("cuobjdump") is None:
        print("--sass needs cuobjdump on PATH (pip install nvidia-cuda-cuobjdump)", file=sys.stderr)
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
            if ok and sass:
                print("\n".join(sass_report(out / f"{name}.cubin", sass)))
    return 0 if ok_all else 1


if __name__ == "__main__":
    raise SystemExit(main())
