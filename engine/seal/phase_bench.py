"""Wall time of each CPU sealing phase of one sector (parents, Fr32 + tree_d, labels, column
hashes + tree_c, encoding + tree_r_last), for the benchmark tables.

    python -m engine.seal.phase_bench 2KiB 8MiB [512MiB]

Random data and ids: no phase's cost depends on the values. The first sector of a run also pays
numba's load from its cache, so a run times a 2 KiB warm-up sector first and reports it apart.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from typing import TypeVar

import numpy as np

from engine.seal import commitments, labels, trees
from engine.seal.fr32 import fr32_pad_array, unpadded_size
from engine.seal.hashing import mont_to_nodes
from engine.seal.registry import KIB, SealProof, by_size

T = TypeVar("T")

_SIZES = {"2KiB": 2 * KIB, "8MiB": 8 << 20, "512MiB": 512 << 20, "32GiB": 32 << 30, "64GiB": 64 << 30}


class _Phases(dict[str, float]):
    """Seconds per phase, in order; ``report`` hears each phase as it ends."""

    def __init__(self, report: Callable[[str, float], None] | None) -> None:
        super().__init__()
        self.report = report


def _timed(out: _Phases, name: str, fn: Callable[[], T]) -> T:
    t0 = time.perf_counter()
    value = fn()
    out[name] = time.perf_counter() - t0
    if out.report is not None:
        out.report(name, out[name])
    return value


def time_phases(proof: SealProof, report: Callable[[str, float], None] | None = None) -> dict[str, float]:
    """Seconds per phase of sealing one random sector as ``proof`` (precommit 1 and 2);
    ``report`` is called with each phase's name and seconds as it ends."""
    from engine.seal.graph import sdr_parents

    t = _Phases(report)
    raw = np.frombuffer(os.urandom(unpadded_size(proof.sector_size)), np.uint8)
    parents = _timed(t, "parents", lambda: sdr_parents(proof))
    nodes = _timed(t, "fr32", lambda: fr32_pad_array(raw))
    tree_d = _timed(t, "tree_d", lambda: trees.tree_d(nodes))
    rid = labels.replica_id(os.urandom(32), 1, os.urandom(32), tree_d.root, proof.porep_id)
    layers = _timed(t, "labels", lambda: labels.label_layers(proof, rid, parents))
    cols = _timed(t, "column_hashes", lambda: labels.column_hashes_mont(layers))
    tree_c = _timed(t, "tree_c", lambda: trees.poseidon_tree(mont_to_nodes(cols), proof.tree_arities,
                                                             leaves_mont=cols))
    replica = _timed(t, "encode", lambda: labels.encode(layers[-1], nodes))
    tree_r = _timed(t, "tree_r_last", lambda: trees.poseidon_tree(replica, proof.tree_arities))
    _timed(t, "comm_r", lambda: commitments.comm_r(tree_c.root, tree_r.root))
    return t


def main(argv: list[str]) -> int:
    names = argv or ["2KiB", "8MiB"]
    unknown = [n for n in names if n not in _SIZES]
    if unknown:
        print(f"sealtop: phase_bench: unknown size {unknown[0]!r} (sizes: {', '.join(_SIZES)})",
              file=sys.stderr)
        return 2
    warm = time_phases(by_size(2 * KIB))
    print(f"warm-up 2KiB (numba cache load): {sum(warm.values()):.2f} s")
    for name in names:
        proof = by_size(_SIZES[name])
        big = proof.sector_size >= 512 << 20
        t = time_phases(proof, (lambda k, v: print(f"  {k}: {v:.2f} s", flush=True)) if big else None)
        row = "  ".join(f"{k} {v:.3f}" for k, v in t.items())
        load = " / ".join(f"{x:.1f}" for x in os.getloadavg())
        print(f"{proof.name} ({os.cpu_count()} CPUs, load {load}): {row}  total {sum(t.values()):.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
