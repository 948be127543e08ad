"""Peak resident memory and time of reading a big bellperson ``.params`` file
(engine/groth16/bellman.py ``read_params``), in a fresh process.

    python3 scripts/bellman_rss.py --log-aux 20 --dir /tmp/rss     (about 2^22 points, 530 MB)

The circuit is synthetic: 2 inputs and 2^k aux variables, aux i used in A by row i and in B
by row i when i is even (so half of B is sparse and the reader expands it), plus the input
constraints: h holds 2^(k+1) - 1 points, l 2^k, a 2^k + 2, b_g1 and b_g2 2^(k-1) + 1 each. Its
points are real curve points (multiples of the generators from py_arkworks_bls12381) repeated,
so every check the reader makes passes; they are not the circuit's key, which only a setup of
that circuit could make, and the conversion costs the same.

The reader runs in a child process: it builds the circuit, warms the numba kernels on a small
file, resets its peak RSS (/proc/self/clear_refs), reads the big file and prints one JSON line:
the file's bytes and points, the key's bytes (its storage arrays), RSS before, peak RSS during
(VmHWM: anonymous and file-backed pages together, so mapped file pages that were not dropped
would show) and seconds.
"""

from __future__ import annotations

import argparse
import json
import struct
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def circuit(log_aux: int):
    """The synthetic R1CS of the module doc (input constraints included)."""
    from engine.groth16.r1cs import CSR, R1CS, with_input_constraints
    from kernels.cpu.convert import to_mont_fr

    n = 1 << log_aux
    one = to_mont_fr([1])[0]
    data = np.tile(one, (n, 1))
    i = np.arange(n)
    a = CSR(np.arange(n + 1, dtype=np.int64), (2 + i).astype(np.int32), data)
    b = CSR(np.arange(n + 1, dtype=np.int64), np.where(i % 2 == 0, 2 + i, 0).astype(np.int32), data)
    c = CSR(np.zeros(n + 1, np.int64), np.zeros(0, np.int32), np.zeros((0, 4), np.uint64))
    return with_input_constraints(R1CS(2, n, a, b, c), one)


def _points(group: str, distinct: int = 16) -> np.ndarray:
    """``distinct`` uncompressed points (zcash order) as uint8 rows."""
    import py_arkworks_bls12381 as ark

    rows = []
    for k in range(1, distinct + 1):
        if group == "g1":
            rows.append(bytes((ark.G1Point() * ark.Scalar(k)).to_xy_bytes_be()))
        else:
            xy = bytes((ark.G2Point() * ark.Scalar(k)).to_xy_bytes_be())  # c0 before c1
            rows.append(xy[48:96] + xy[:48] + xy[144:] + xy[96:144])
    return np.frombuffer(b"".join(rows), np.uint8).reshape(distinct, -1)


def write_file(path: Path, log_aux: int) -> int:
    """The synthetic circuit's .params file of repeated valid points; returns its point count."""
    from engine.groth16.bellman import SECTIONS, query_density
    from engine.groth16.qap import domain_log

    r = circuit(log_aux)
    dens = query_density(r)
    g = {"g1": _points("g1"), "g2": _points("g2")}
    counts = {"h": (1 << domain_log(r.num_constraints)) - 1, "l": r.num_aux,
              "a": dens.count("a"), "b_g1": dens.count("b_g1"), "b_g2": dens.count("b_g2")}
    total = 0
    with open(path, "wb") as f:
        for group in ("g1", "g1", "g2", "g2", "g1", "g2"):
            f.write(g[group][0].tobytes())
        f.write(struct.pack(">I", r.num_inputs))
        f.write(np.resize(g["g1"], (r.num_inputs, 96)).tobytes())
        for name, group in SECTIONS:
            n = counts[name]
            f.write(struct.pack(">I", n))
            for lo in range(0, n, 1 << 16):
                f.write(np.resize(g[group], (min(n - lo, 1 << 16), g[group].shape[1])).tobytes())
            total += n
    return total + 6 + r.num_inputs


def _status() -> dict[str, int]:
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            key, _, val = line.partition(":")
            if key in ("VmHWM", "VmRSS", "RssAnon", "RssFile"):
                out[key] = int(val.split()[0]) * 1024
    return out


def read_child(path: Path, small: Path, log_aux: int) -> dict:
    """In this process: warm up, reset the peak, read ``path``; the measurements."""
    from engine.groth16.bellman import read_params

    read_params(small, circuit(4))  # numba's cached kernels loaded, the oracle imported
    r = circuit(log_aux)
    r.digest()
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # VmHWM := VmRSS
    before = _status()
    t = time.perf_counter()
    pk = read_params(path, r)
    seconds = time.perf_counter() - t
    after = _status()
    return {"file_bytes": path.stat().st_size, "key_bytes": pk.nbytes(),
            "rss_before": before["VmRSS"], "peak_rss": after["VmHWM"],
            "peak_increase": after["VmHWM"] - before["VmRSS"], "rss_anon_after": after["RssAnon"],
            "seconds": round(seconds, 3)}


def measure(directory: Path, log_aux: int) -> dict:
    """Write both files, read the big one in a child process; its JSON plus the point count."""
    directory.mkdir(parents=True, exist_ok=True)
    big, small = directory / f"synthetic-{log_aux}.params", directory / "synthetic-4.params"
    points = write_file(big, log_aux)
    write_file(small, 4)
    res = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child", "--dir",
                          str(directory), "--log-aux", str(log_aux)],
                         capture_output=True, text=True, cwd=ROOT, check=False)
    if res.returncode != 0:
        raise RuntimeError(f"the reader failed: {res.stderr.strip().splitlines()[-1:]}")
    return {"log_aux": log_aux, "points": points, **json.loads(res.stdout.strip().splitlines()[-1])}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--log-aux", type=int, default=20)
    ap.add_argument("--dir", type=Path, required=True)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        print(json.dumps(read_child(a.dir / f"synthetic-{a.log_aux}.params",
                                    a.dir / "synthetic-4.params", a.log_aux)))
    else:
        print(json.dumps(measure(a.dir, a.log_aux)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
