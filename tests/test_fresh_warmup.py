"""The warm-up compiles what `prove`, the console's first job and the dispatch of a C2 job run,
and progress says "compiling" while numba compiles.

A first `prove --log-constraints 14` spent 77.6 s of its msm_h in JIT after the warm-up had
run: a key read back from its file is read-only, which numba compiles apart, and the warm-up
only ever passed arrays made in memory. The oracle here is numba itself: every (function,
signature) a run uses must already be one the warm-up made (compiled or loaded: the set does
not depend on the state of the on-disk cache).
"""

from __future__ import annotations

import io
import json
import os
import random
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# In a fresh interpreter: the signatures after the warm-up, then after a first job of the
# console's preset (as its synthesis worker and cpu prover run it) and `prove` from a key file.
_COVERAGE = r"""
import gc, json, sys, tempfile
from pathlib import Path
import numpy as np
np.seterr(all="ignore")
from numba.core.dispatcher import Dispatcher

def signatures():
    gc.collect()
    return sorted(f"{d.py_func.__module__}.{d.py_func.__qualname__} {s}"
                  for d in gc.get_objects() if isinstance(d, Dispatcher) for s in d.signatures)

from engine.warmup import compile_all
compile_all(lambda m: None)
warm = set(signatures())

# the console's first job: synthesis as a worker does it, key, proof and check as the prover
from engine.pipeline import proving
from engine.pipeline.circuits import circuit_cache_dir, resolve
from engine.synthesis import eval_plan, evaluate
from kernels.backend import get_backend
be = get_backend("cpu")
d = Path(tempfile.mkdtemp())
c = resolve("tiny", circuit_cache_dir(d))
r = c.r1cs
z = np.empty((r.num_vars, 4), np.uint64)
c.witness(SEED, 0, 1, z)
a, b, cc = (np.empty((r.num_constraints, 4), np.uint64) for _ in range(3))
evaluate(r, z, out=(a, b, cc), plan=eval_plan(r))
path, vk = proving.ensure_key(c, d, "cpu")
key = proving.load_key(str(path), be)
proof = proving.finish(proving.start(key, a, b, cc, z, be), "auto", key)
ok = proving.verify(vk, proving.public_inputs(r.num_inputs, z), proof)

# `sealtop setup` and `sealtop prove` of a chain, through the verbs themselves
from engine.verbs.cli import main
pk, vkj = d / "chain.pk", d / "chain.vk.json"
assert main(["setup", "--log-constraints", "LOGN", "--pk", str(pk), "--vk", str(vkj)]) == 0
assert main(["prove", "--log-constraints", "LOGN", "--pk", str(pk), "--proof", str(d / "p.bin"),
             "--public", str(d / "public.json")]) == 0
# the dispatcher's part of a 32 GiB C2 job: its synthetic sector (one partition's challenges),
# a partition's share and the verifier's public inputs
from engine.c2.assign import Partition
from engine.c2.public import Statement, public_inputs
from engine.c2.synthetic import synthetic_c1
from engine.seal.registry import seal_proof
proof32 = seal_proof("StackedDrg32GiBV1_1")
c1 = synthetic_c1(proof32, SEED, prover_id=bytes(32), partitions=1)
public_inputs(Statement(proof32, bytes(32), 1, c1.ticket, c1.seed, c1.comm_d, c1.comm_r), 0)
Partition.of_c1(c1, 0)
print(json.dumps({"verified": ok, "new": sorted(set(signatures()) - warm)}))
"""


@pytest.mark.slow
def test_the_warm_up_covers_the_first_job_and_prove(tmp_path):
    code = (_COVERAGE.replace("SEED", str(random.randint(1, 1 << 20)))
            .replace("LOGN", str(random.choice([12, 13, 14]))))
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, cwd=ROOT, timeout=1500)
    assert out.returncode == 0, out.stderr[-2000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["verified"] is True
    assert got["new"] == [], "compiled after the warm-up:\n" + "\n".join(got["new"])


def test_progress_says_compiling_while_numba_compiles():
    import numba
    import numpy as np

    from engine.verbs.progress import Steps

    salt = random.randrange(1 << 30)

    @numba.njit(cache=False)
    def mix(a):  # cold on every run: cache off
        s = salt
        for i in range(a.shape[0]):
            s = (s * 31 + a[i]) % 1000003
        return s

    out = io.StringIO()
    seen: list[str | None] = []
    with Steps("prove", 2, stream=out, fancy=False, heartbeat_s=0.05) as steps:
        steps.step("proving on cpu: evaluation, NTTs, the MSMs")
        watcher = threading.Thread(target=lambda: [seen.append(steps.compiling()) or time.sleep(0.01)
                                                   for _ in range(200)])
        watcher.start()
        mix(np.arange(10, dtype=np.int64))
        watcher.join()
        assert steps.compiling() is None  # done compiling: nothing named any more
        steps.step("verifying")
    text = out.getvalue()
    assert "prove 1/2: proving on cpu: evaluation, NTTs, the MSMs: compiling numba kernels" in text
    assert "test_fresh_warmup" in text and "mix" in text
    assert any(s and s.endswith("mix") for s in seen)
    assert text.count("compiling numba kernels") == 1  # one line per step, not per function
    assert "verifying" in text.splitlines()[-1]


def test_a_warm_step_says_nothing_of_compiling():
    from engine.verbs.progress import Steps

    out = io.StringIO()
    with Steps("setup", 1, stream=out, fancy=False, heartbeat_s=0.05) as steps:
        steps.step("writing the key")
        time.sleep(0.15)
    assert "compiling" not in out.getvalue() and "still running" in out.getvalue()
