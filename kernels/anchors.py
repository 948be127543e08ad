"""What the kernel benchmarks measure against and at which sizes: sppark's published figures
(docs/ANCHORS.md) and the default log2 sizes per backend. Held apart from the runners so the CPU
runner (kernels.bench) and the device runner (kernels.cuda.bench) both read them without either
importing the other for them.
"""

from __future__ import annotations

# Default log2 sizes per backend: on the CPU, MSMs at 2^12..2^16 and NTTs at 2^16 and 2^20, small
# enough for a laptop; on a GPU, up to the sizes a 32 GiB sector's proof runs.
DEFAULT_SIZES: dict[str, dict[str, list[int]]] = {
    "cpu": {"msm_g1": [12, 14, 16], "ntt": [16, 20]},
    "cuda": {
        "msm_g1": [16, 18, 20, 22, 23, 24, 25, 26],
        "msm_g2": [16, 18, 20, 22, 24],
        "ntt": list(range(16, 28)),
        "intt": [20, 22, 24, 26],
        "coset_ntt": [20, 22, 24, 26],
    },
}

# sppark on an NVIDIA H200 (docs/ANCHORS.md), milliseconds by log2 size.
ANCHORS_MS: dict[str, dict[int, float]] = {
    "msm_g1": {16: 7.7, 18: 21.0, 20: 21.0, 22: 53.0, 23: 90.0, 24: 155.0, 25: 289.0, 26: 557.0},
    "ntt": {20: 0.26, 22: 1.05, 24: 4.42, 26: 20.9},
    "intt": {20: 0.29, 22: 1.18, 24: 4.98, 26: 24.8},
    "coset_ntt": {20: 0.32, 22: 1.27, 24: 5.33, 26: 26.2},
}
ANCHOR_SOURCE = "sppark, NVIDIA H200, inputs GPU-resident (docs/ANCHORS.md)"
