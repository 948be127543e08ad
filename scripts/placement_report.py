"""Print this host's NUMA placement for the GPUs NVML sees (or those named): each GPU's PCI
address, node, its synthesis workers' CPUs and its prover's. For a lent multi-GPU machine, next to
``nvidia-smi topo -m``.

    python3 scripts/placement_report.py [DEVICE ...]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.pipeline.placement import cpulist_text, nvml_pci, plan  # noqa: E402
from engine.telemetry.nvml import gpu_list  # noqa: E402
from kernels.textfmt import OneLineParser  # noqa: E402


def main(argv: list[str]) -> int:
    ap = OneLineParser(description=__doc__.split("\n\n")[0].replace("\n", " "))
    ap.add_argument("devices", nargs="*", type=int, metavar="DEVICE",
                    help="GPU indices (default: every GPU NVML sees, else the cpu backend's one)")
    args = ap.parse_args(argv)
    devices: list[int | None] = list(args.devices) or [g["index"] for g in gpu_list()] or [None]
    placement = plan(devices, nvml_pci(devices))
    print(placement.describe())
    print(f"allowed CPUs: {cpulist_text(placement.allowed)}")
    for g in placement.gpus:
        name = "cpu0" if g.device is None else f"gpu{g.device}"
        prover = placement.prover_cpus(g.device)
        print(f"{name}: pci {g.pci or 'N/A'} node {'N/A' if g.node is None else g.node} "
              f"synthesis CPUs {cpulist_text(g.cpus)} prover CPUs "
              f"{'all allowed' if prover is None else cpulist_text(prover)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
