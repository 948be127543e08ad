"""Print this host's NUMA placement for the GPUs NVML sees (or those named): each GPU's PCI
address, node, its synthesis workers' CPUs and its prover's. For a lent multi-GPU machine, next to
``nvidia-smi topo -m``.

    python3 scripts/placement_report.py [DEVICE ...]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.pipeline.placement import cpulist_text, host_plan  # noqa: E402
from engine.telemetry.nvml import gpu_list  # noqa: E402


def main(argv: list[str]) -> int:
    try:
        devices: list[int | None] = [int(a) for a in argv] or [g["index"] for g in gpu_list()]
    except ValueError:
        print(f"sealtop: devices are GPU indices such as 0 1, got {' '.join(argv)!r}", file=sys.stderr)
        return 2
    plan = host_plan(devices or [None], "auto")
    assert plan is not None
    print(plan.describe())
    print(f"allowed CPUs: {cpulist_text(plan.allowed)}")
    for g in plan.gpus:
        name = "cpu0" if g.device is None else f"gpu{g.device}"
        prover = plan.prover_cpus(g.device)
        print(f"{name}: pci {g.pci or 'N/A'} node {'N/A' if g.node is None else g.node} "
              f"synthesis CPUs {cpulist_text(g.cpus)} prover CPUs "
              f"{'all allowed' if prover is None else cpulist_text(prover)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
