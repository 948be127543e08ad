"""scripts/cuda_build_check.py's SASS counts (--sass) on listings in cuobjdump's format, made up
here with random instruction mixes: each kernel's own code and each function it calls counted
apart, and nothing of another kernel's listing counted in."""

from __future__ import annotations

import importlib.util
import random
from collections import Counter
from pathlib import Path

_spec = importlib.util.spec_from_file_location(
    "cuda_build_check", Path(__file__).resolve().parents[1] / "scripts" / "cuda_build_check.py")
assert _spec is not None and _spec.loader is not None
cbc = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cbc)

OPS = ["IMAD.WIDE.U32", "IMAD.WIDE.U32.X", "IMAD", "IMAD.HI.U32", "IADD3.X", "LOP3.LUT", "SEL", "LDL", "STL", "LDG.E"]


def _listing(name: str, parts: list[Counter[str]], rng: random.Random) -> tuple[str, list[int]]:
    """A kernel whose code is parts[0], with parts[1:] as functions it calls (at their starts)."""
    sizes = [sum(p.values()) + (len(parts) - 1 if i == 0 else 1) for i, p in enumerate(parts)]
    starts = [16 * sum(sizes[:i]) for i in range(len(parts))]
    lines = [f"\t\tFunction : {name}", '\t.headerflags\t@"EF_CUDA_SM90"']
    addr = 0
    for i, part in enumerate(parts):
        body = [op for op, n in part.items() for _ in range(n)]
        rng.shuffle(body)
        if i == 0:
            body += [f"CALL.REL.NOINC {starts[j]:#x}" for j in range(1, len(parts))]
        else:
            body.append("RET.REL.NODEC R2 0x0")
        for ins in body:
            pred = "@P0 " if rng.random() < 0.1 else ""
            lines.append(f"        /*{addr:04x}*/                   {pred}{ins} R1, R2 ;   /* 0x000000 */")
            addr += 16
    return "\n".join(lines) + "\n\t\t..........\n", starts


def test_counts_per_function_match_what_was_listed() -> None:
    rng = random.Random()
    parts = [Counter({op: rng.randrange(0, 40) for op in OPS}) for _ in range(rng.randrange(1, 4))]
    text, starts = _listing("k_main", parts, rng)
    other, _ = _listing("k_other", [Counter({"IMAD": 7})], rng)
    got = cbc.sass_functions(other + text, "k_main")
    assert [lo for lo, _ in got] == starts
    for i, ((_, ops), want) in enumerate(zip(got, parts)):
        extra = Counter({"CALL.REL.NOINC": len(parts) - 1} if i == 0 else {"RET.REL.NODEC": 1})
        assert ops == +(want + extra)
    wide = parts[0]["IMAD.WIDE.U32"] + parts[0]["IMAD.WIDE.U32.X"]
    other_imad = parts[0]["IMAD"] + parts[0]["IMAD.HI.U32"]
    line = cbc.sass_line(got[0][1])
    assert f"{wide:5d} wide + {other_imad:5d} other IMAD" in line
    assert f"{parts[0]['LDL'] + parts[0]['STL']:4d} local" in line


def test_a_kernel_not_in_the_listing_has_no_functions() -> None:
    text, _ = _listing("k_main", [Counter({"IMAD": 3})], random.Random())
    assert cbc.sass_functions(text, "k_missing") == []
