"""The orchestrator's memory does not grow with the circuit's matrices.

The orchestrator resolves a job's preset (engine.pipeline.circuits.resolve), derives public
inputs, key paths and partition sizes from it; it never evaluates the matrices, so it must keep
them memory-mapped from the circuit cache (page cache, shared with the workers), not copied
into anonymous memory. A process whose cache missed used to keep the arrays it had just built:
at porep-32g that was 29.6 GiB of RssAnon in the orchestrator, the CSR matrices' size.

Each measurement runs in a fresh interpreter (a clean RssAnon), at ``small``, in a fresh cache
folder: first the process that builds the circuit, then one that loads it. What may grow is the
witness program (shape.pkl, unpickled: at small about half the CSR bytes, a fixed cost per
preset that does not scale with the instances) and a little heap; the matrices must not.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

_PROBE = r"""
import ctypes, gc, json, os, sys
from pathlib import Path
import numpy as np

def anon():
    gc.collect()
    ctypes.CDLL("libc.so.6").malloc_trim(0)  # count what is held, not glibc's free lists
    with open(f"/proc/{os.getpid()}/status") as f:
        for line in f:
            if line.startswith("RssAnon:"):
                return int(line.split()[1]) * 1024

preset, cache, seeds = sys.argv[1], sys.argv[2], [int(s) for s in sys.argv[3:]]
import numba  # noqa: F401  (imports are not the circuit's)
from engine.pipeline import circuits, proving
import engine.synthesis, engine.circuit.porep  # noqa: F401, E401
from engine.groth16.r1cs import _faults
# nor is numba's thread pool (~29 MB here), which the first parallel kernel starts in any process
# (the R1CS check's, here): start it with an empty check first
_faults(np.zeros(1, np.int64), np.zeros(0, np.int32), 1)
a0 = anon()
c = circuits.resolve(preset, cache)
a1 = anon()
publics = [c.public_inputs(s, p, 2) for s in seeds for p in (0, 1)]
proving.key_path(Path(cache), c.name, c.r1cs)
sizes = [c.partition_bytes("cpu"), c.partition_bytes("gpu"), c.general_capacity]
a2 = anon()
r = c.r1cs
arrays = [getattr(getattr(r, m), p) for m in "ABC" for p in ("indptr", "indices", "data")]
print(json.dumps({
    "resolve": a1 - a0, "after": a2 - a0,
    "csr": sum(a.nbytes for a in arrays),
    "mapped": [isinstance(a, np.memmap) and str(Path(a.filename).resolve()).startswith(
        str(Path(cache).resolve())) and not a.flags.writeable for a in arrays],
    "publics": [[str(x) for x in p] for p in publics], "sizes": sizes,
}))
"""


def _probe(cache: Path, seeds: list[int]) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", _PROBE, "small", str(cache), *map(str, seeds)],
                         capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_orchestrator_keeps_the_matrices_mapped(tmp_path: Path) -> None:
    seeds = [int.from_bytes(os.urandom(6), "little") for _ in range(2)]
    cache = tmp_path / "circuits"
    built = _probe(cache, seeds)  # the cache misses: this process builds the circuit
    (entry,) = [d for d in cache.iterdir() if (d / "shape.pkl").exists()]
    program = (entry / "shape.pkl").stat().st_size  # the witness program, loaded by design
    loaded = _probe(cache, seeds)  # a second process finds the entry
    csr = built["csr"]
    assert csr == loaded["csr"] and csr > 40_000_000  # small's matrices, about 53 MB
    # the structural fix: every CSR array a read-only map of the cache entry, in both processes
    assert all(built["mapped"]) and all(loaded["mapped"])
    # RssAnon: the matrices are not copied. The old build path held about 2.2 x csr here.
    assert built["resolve"] - program < csr // 2, (built, program)
    assert loaded["resolve"] - program < csr // 10, (loaded, program)
    assert built["after"] < built["resolve"] + csr // 2  # public inputs, key path, sizes
    # both processes derive the same statements and sizes; different seeds are different
    # sectors, and a sector's partitions share its commitments (replica_id, comm_d, comm_r).
    # small challenges one node of eight, so two partitions' challenges may coincide.
    assert built["publics"] == loaded["publics"] and built["sizes"] == loaded["sizes"]
    assert built["publics"][0][:3] != built["publics"][2][:3]
    assert built["publics"][0][:3] == built["publics"][1][:3]


def test_coefficient_tags_are_shared_from_the_cache_entry(tmp_path: Path) -> None:
    """A synthesis worker's coefficient tags (1 B per nonzero, 0.72 GiB a worker at porep-32g)
    are kept in the circuit's cache entry and memory-mapped, equal to tags computed from the
    coefficients as Python integers; an in-memory circuit still gets them computed."""
    import random

    import numpy as np

    from engine.circuit.porep import build_porep
    from engine.synthesis import eval_plan
    from kernels.constants import R_MOD
    from kernels.cpu.convert import from_mont_fr

    built = build_porep("tiny", tmp_path)
    plan = eval_plan(built.r1cs)
    entry = Path(built.r1cs.A.data.filename).parent
    assert sorted(p.name for p in entry.glob("*_tags.npy")) == ["A_tags.npy", "B_tags.npy", "C_tags.npy"]
    again = eval_plan(build_porep("tiny", tmp_path).r1cs)  # another process's view: the files
    rnd = random.Random()
    seen: set[int] = set()
    for m, tags, other in zip((built.r1cs.A, built.r1cs.B, built.r1cs.C), plan.tags, again.tags):
        assert isinstance(other, np.memmap) and not other.flags.writeable
        assert np.array_equal(tags, other) and tags.shape == (m.nnz,)
        ks = rnd.sample(range(m.nnz), min(m.nnz, 300))
        coefs = from_mont_fr(np.asarray(m.data)[ks])
        want = [1 if v == 1 else 2 if v == R_MOD - 1 else 0 for v in coefs]
        assert [int(tags[k]) for k in ks] == want
        seen |= set(np.unique(np.asarray(tags)).tolist())
    assert seen == {0, 1, 2}  # general, +1 and -1 coefficients all occur
    fresh = eval_plan(build_porep("tiny", None).r1cs)  # not mapped: computed, nothing written
    assert not any(isinstance(t, np.memmap) for t in fresh.tags)
    assert all(np.array_equal(a, b) for a, b in zip(fresh.tags, plan.tags))
