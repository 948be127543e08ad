"""Groth16 parameters, verifying keys and proofs in bellman/bellperson's file format: what a
Filecoin provider has in /var/tmp/filecoin-proof-parameters and what its verifier reads.

``.params`` (bellperson groth16/params.rs ``Parameters::write``): the verifying key, then h, l,
a, b_g1 and b_g2, each a u32 big-endian count and that many points. ``.vk``
(verifying_key.rs): alpha_g1, beta_g1, beta_g2, gamma_g2, delta_g1, delta_g2, a u32 count and
the IC points. Points are uncompressed in the zcash encoding: big-endian coordinates (G2: c1
before c0), the infinity flag 0x40 in the first byte, no compression flag. A proof is A, B, C
compressed (engine/groth16/serialize.py), 192 bytes; a sector's proof is its partitions' proofs
concatenated.

bellperson's generator drops the points at infinity from a, b_g1 and b_g2: a holds every input
and the aux variables that occur in A, b_g1 and b_g2 the inputs and aux variables that occur in
B, in variable order (the prover pairs them through the same densities). sealtop's ProvingKey
has a point per variable, so reading expands those queries with the circuit's densities and
writing filters them again.

Reading maps the file and converts the points in chunks (numba, every core) into sealtop's
storage layout (little-endian Montgomery), checking the flags, the coordinates' range and the
curve equation of every point; the prime-order subgroup is not checked (bellperson's mapped
parameters do not check it either). Every problem is one line naming the file.
"""

from __future__ import annotations

import json
import os
import struct
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
from numba import njit, prange

from engine.atomic import atomic_write
from engine.groth16.keyfile import KeyFileError, ProvingKey
from engine.groth16.r1cs import R1CS
from engine.groth16.serialize import PROOF_BYTES, g1_compress, g2_compress
from engine.groth16.vkey import VerifyingKey
from kernels.cpu.convert import g1_from_storage, g2_from_storage
from kernels.cpu.fp import fp_add, fp_eq, fp_from_mont, fp_mul, fp_to_mont
from kernels.cpu.fp2 import fp2_add, fp2_eq, fp2_mul

G1_RAW, G2_RAW = 96, 192
_VK_POINTS = (("alpha_g1", G1_RAW), ("beta_g1", G1_RAW), ("beta_g2", G2_RAW), ("gamma_g2", G2_RAW),
              ("delta_g1", G1_RAW), ("delta_g2", G2_RAW))
_QUERIES = (("h", G1_RAW), ("l", G1_RAW), ("a", G1_RAW), ("b_g1", G1_RAW), ("b_g2", G2_RAW))
_CHUNK = 1 << 18  # points converted per numba call
SIDECAR = ".sealtop.json"
"""Beside a file sealtop wrote: the circuit digest and the INSECURE label, which bellman's
format has no room for."""

_P = 0x1A0111EA397FE69A4B1BA7B6434BACD764774B84F38512BF6730D2A0F6B0F6241EABFFFEB153FFFFB9FEFFFFFFFFAAAB
_P_LIMBS = np.array([(_P >> (64 * i)) & (2**64 - 1) for i in range(6)], np.uint64)


class BellmanFileError(KeyFileError):
    """A params, vk or proof file that cannot be used; the message names it."""


# ---------------------------------------------------------------- point conversion (numba)
@njit(cache=True, inline="always")
def _limb(raw, i, off, k):
    """Limb k (little-endian order) of the 48 big-endian bytes at raw[i, off:]."""
    v = np.uint64(0)
    base = off + 40 - 8 * k
    for j in range(8):
        v = (v << np.uint64(8)) | np.uint64(raw[i, base + j])
    return v


@njit(cache=True, inline="always")
def _in_range(raw, i, c, p):
    """Whether coordinate c of row i (its flag bits cleared) is below p."""
    off = 48 * c
    for k in range(5, -1, -1):
        v = _limb(raw, i, off, k)
        if k == 5 and c == 0:
            v &= np.uint64(0x1FFFFFFFFFFFFFFF)
        if v != p[k]:
            return v < p[k]
    return False


@njit(cache=True, inline="always")
def _coord(raw, i, c, p):
    """Coordinate c (48 bytes) of row i in Montgomery form (checked below p by _in_range)."""
    off = 48 * c
    top = _limb(raw, i, off, 5)
    if c == 0:
        top &= np.uint64(0x1FFFFFFFFFFFFFFF)  # the flag bits
    v = (_limb(raw, i, off, 0), _limb(raw, i, off, 1), _limb(raw, i, off, 2),
         _limb(raw, i, off, 3), _limb(raw, i, off, 4), top)
    return fp_to_mont(v)


@njit(cache=True, inline="always")
def _put(out, i, c, v):
    for k in range(6):
        out[i, 6 * c + k] = v[k]


@njit(cache=True)
def _decode_row(raw, out, i, g2, p, b):
    """Row i of raw into out; returns 0, or what is wrong (1 flags, 2 range, 3 curve)."""
    flags = raw[i, 0] >> 5
    if flags & 5:  # the compression or sort flag: not an uncompressed point
        return 1
    if flags & 2:  # infinity: every other bit zero
        for j in range(out.shape[1]):
            out[i, j] = 0
        nz = raw[i, 0] & 0x1F
        for j in range(1, raw.shape[1]):
            nz |= raw[i, j]
        return 1 if nz else 0
    for c in range(4 if g2 else 2):
        if not _in_range(raw, i, c, p):
            return 2
    if g2:  # the file holds c1 before c0
        x = (_coord(raw, i, 1, p), _coord(raw, i, 0, p))
        y = (_coord(raw, i, 3, p), _coord(raw, i, 2, p))
        ok = fp2_eq(fp2_mul(y, y), fp2_add(fp2_mul(fp2_mul(x, x), x), (b, b)))  # b' = 4 + 4u
        _put(out, i, 0, x[0])
        _put(out, i, 1, x[1])
        _put(out, i, 2, y[0])
        _put(out, i, 3, y[1])
    else:
        x1 = _coord(raw, i, 0, p)
        y1 = _coord(raw, i, 1, p)
        ok = fp_eq(fp_mul(y1, y1), fp_add(fp_mul(fp_mul(x1, x1), x1), b))
        _put(out, i, 0, x1)
        _put(out, i, 1, y1)
    return 0 if ok else 3


@njit(cache=True, parallel=True)
def _decode(raw, out, g2, p, b, bad):
    """raw uint8[n, 96 | 192] → out uint64[n, 12 | 24]; bad[0] = a bad row or -1, bad[1] what
    was wrong (1 flags, 2 range, 3 curve). ``b`` is the curve constant 4 in Montgomery form."""
    for i in prange(raw.shape[0]):
        why = _decode_row(raw, out, i, g2, p, b)
        if why:
            bad[0] = i
            bad[1] = why


@njit(cache=True, parallel=True)
def _encode(points, raw, g2):
    n = points.shape[0]
    ncoord = 4 if g2 else 2
    for i in prange(n):
        zero = True
        for j in range(points.shape[1]):
            if points[i, j] != 0:
                zero = False
        for j in range(raw.shape[1]):
            raw[i, j] = 0
        if zero:
            raw[i, 0] = 0x40
            continue
        for c in range(ncoord):
            src = c ^ 1 if g2 else c  # c1 before c0
            v = fp_from_mont((points[i, 6 * src], points[i, 6 * src + 1], points[i, 6 * src + 2],
                              points[i, 6 * src + 3], points[i, 6 * src + 4], points[i, 6 * src + 5]))
            for k in range(6):
                limb = v[k]
                base = 48 * c + 48 - 8 * (k + 1)
                for j in range(8):
                    raw[i, base + 7 - j] = np.uint8((limb >> np.uint64(8 * j)) & np.uint64(0xFF))


_B_MONT = fp_to_mont((np.uint64(4),) + (np.uint64(0),) * 5)  # the curve's b = 4


def decode_points(raw: np.ndarray, g2: bool, where: str) -> np.ndarray:
    """uint8[n, 96 | 192] uncompressed points → storage uint64[n, 12 | 24]; BellmanFileError
    naming ``where`` and the point for a bad flag, coordinate or curve equation."""
    out = np.empty((raw.shape[0], 24 if g2 else 12), np.uint64)
    for s in range(0, raw.shape[0], _CHUNK):
        e = min(s + _CHUNK, raw.shape[0])
        bad = np.array([-1, 0], np.int64)
        _decode(np.ascontiguousarray(raw[s:e]), out[s:e], g2, _P_LIMBS, _B_MONT, bad)
        if bad[0] >= 0:
            what = {1: "bad flag bits", 2: "a coordinate not below p", 3: "not on the curve"}[int(bad[1])]
            raise BellmanFileError(f"{where}: point {s + int(bad[0])}: {what}")
    return out


def encode_points(points: np.ndarray, g2: bool) -> bytes:
    raw = np.empty((points.shape[0], G2_RAW if g2 else G1_RAW), np.uint8)
    if points.shape[0]:
        _encode(np.ascontiguousarray(points), raw, g2)
    return raw.tobytes()


# ---------------------------------------------------------------- densities
def densities(r: R1CS) -> tuple[np.ndarray, np.ndarray]:
    """(variables kept in a, in b_g1/b_g2): every input in a (the x·0 = 0 rows), and the
    variables each of A and B mentions."""
    in_a = np.zeros(r.num_vars, bool)
    in_a[np.asarray(r.A.indices)] = True
    in_a[: r.num_inputs] = True
    in_b = np.zeros(r.num_vars, bool)
    in_b[np.asarray(r.B.indices)] = True
    return in_a, in_b


# ---------------------------------------------------------------- files
def _open_map(path: Path, what: str) -> np.ndarray:
    """The file as a read-only memory-mapped uint8 array (no copy; pages load as they are read)."""
    from engine.groth16.keyfile import not_a_file

    wrong = not_a_file(path, what)
    if wrong is not None:
        raise BellmanFileError(str(wrong))
    try:
        if os.stat(path).st_size == 0:
            raise BellmanFileError(f"{what} {path} is empty")
        return np.memmap(path, dtype=np.uint8, mode="r")
    except OSError as exc:
        raise BellmanFileError(f"cannot read {what} {path}: {exc.strerror or exc}") from None


def _walk(buf: np.ndarray, path: Path, what: str, names: tuple[tuple[str, int], ...], off: int
          ) -> tuple[dict[str, tuple[int, int, int]], int]:
    """Offsets (start, count, point size) of length-prefixed point arrays from ``off``."""
    out = {}
    for name, size in names:
        if off + 4 > len(buf):
            raise BellmanFileError(f"{what} {path} is cut short before its {name} count")
        (count,) = struct.unpack(">I", bytes(buf[off : off + 4]))
        off += 4
        if off + count * size > len(buf):
            raise BellmanFileError(f"{what} {path} is cut short: {name} holds {count} points, "
                                   f"{(len(buf) - off) // size} are there")
        out[name] = (off, count, size)
        off += count * size
    return out, off


def _vk_layout(buf: np.ndarray, path: Path, what: str) -> tuple[dict[str, tuple[int, int, int]], int]:
    out = {}
    off = 0
    for name, size in _VK_POINTS:
        if off + size > len(buf):
            raise BellmanFileError(f"{what} {path} is cut short inside its verifying key ({name})")
        out[name] = (off, 1, size)
        off += size
    ic, off = _walk(buf, path, what, (("ic", G1_RAW),), off)
    return out | ic, off


def _points(buf: np.ndarray, spot: tuple[int, int, int], where: str) -> np.ndarray:
    start, count, size = spot
    return decode_points(buf[start : start + count * size].reshape(count, size), size == G2_RAW, where)


def _sidecar(path: Path) -> dict:
    try:
        return json.loads(Path(str(path) + SIDECAR).read_text())
    except (OSError, ValueError):
        return {}


def _vk_from(buf: np.ndarray, lay: dict, path: Path, digest: bytes, insecure: bool) -> VerifyingKey:
    g1 = lambda n: g1_from_storage(_points(buf, lay[n], f"{path}: {n}"))  # noqa: E731
    g2 = lambda n: g2_from_storage(_points(buf, lay[n], f"{path}: {n}"))  # noqa: E731
    return VerifyingKey(alpha_g1=g1_compress(g1("alpha_g1")[0]), beta_g2=g2_compress(g2("beta_g2")[0]),
                        gamma_g2=g2_compress(g2("gamma_g2")[0]), delta_g2=g2_compress(g2("delta_g2")[0]),
                        ic=tuple(g1_compress(p) for p in g1("ic")), digest=digest, insecure=insecure)


def read_vk(path: str | os.PathLike) -> VerifyingKey:
    """A ``.vk`` file (or the verifying key at the head of a ``.params``)."""
    p = Path(path)
    buf = _open_map(p, "verifying key")
    lay, _ = _vk_layout(buf, p, "verifying key")
    side = _sidecar(p)
    return _vk_from(buf, lay, p, bytes.fromhex(side.get("circuit_digest", "")),
                    bool(side.get("insecure", False)))


def read_params(path: str | os.PathLike, r: R1CS) -> ProvingKey:
    """A ``.params`` file for the circuit ``r``, expanded to sealtop's ProvingKey; every count
    is checked against the circuit first (a file for another circuit is one line)."""
    p = Path(path)
    buf = _open_map(p, "parameter file")
    vk_lay, off = _vk_layout(buf, p, "parameter file")
    q, end = _walk(buf, p, "parameter file", _QUERIES, off)
    if end != len(buf):
        raise BellmanFileError(f"parameter file {p} has {len(buf) - end} bytes after its last query")
    log_n = max(1, (r.num_constraints - 1).bit_length())
    in_a, in_b = densities(r)
    want = {"ic": r.num_inputs, "h": (1 << log_n) - 1, "l": r.num_aux,
            "a": int(in_a.sum()), "b_g1": int(in_b.sum()), "b_g2": int(in_b.sum())}
    for name, n in want.items():
        got = (vk_lay | q)[name][1]
        if got != n:
            raise BellmanFileError(f"parameter file {p} is not for this circuit: {name} holds "
                                   f"{got} points, the circuit needs {n}")
    side = _sidecar(p)
    sections = {name: _points(buf, spot, f"{p}: {name}") for name, spot in (vk_lay | q).items()}
    del buf
    for name, mask in (("a", in_a), ("b_g1", in_b), ("b_g2", in_b)):
        full = np.zeros((r.num_vars, sections[name].shape[1]), np.uint64)
        full[mask] = sections[name]
        sections[name] = full
    return ProvingKey(num_inputs=r.num_inputs, num_aux=r.num_aux, num_constraints=r.num_constraints,
                      log_n=log_n, digest=r.digest(), insecure=bool(side.get("insecure", False)),
                      path=p, **sections)


@contextmanager
def _writing(path: Path) -> Iterator[object]:
    with atomic_write(path, "wb", encoding=None) as f:
        yield f


def _vk_bytes(pk: ProvingKey) -> bytes:
    out = b"".join(encode_points(getattr(pk, name), size == G2_RAW) for name, size in _VK_POINTS)
    return out + struct.pack(">I", pk.ic.shape[0]) + encode_points(pk.ic, False)


def _write_sidecar(path: Path, pk: ProvingKey) -> None:
    with atomic_write(Path(str(path) + SIDECAR), "w") as f:
        json.dump({"format": "sealtop-bellman-sidecar", "circuit_digest": bytes(pk.digest).hex(),
                   "insecure": pk.insecure}, f)


def write_params(path: str | os.PathLike, pk: ProvingKey, r: R1CS) -> None:
    """``pk`` as a ``.params`` file (atomically), a, b_g1 and b_g2 filtered to the circuit's
    densities as bellperson's generator leaves them."""
    p = Path(path)
    in_a, in_b = densities(r)
    with _writing(p) as f:
        f.write(_vk_bytes(pk))  # type: ignore[attr-defined]
        for name, size in _QUERIES:
            pts = getattr(pk, name)
            mask = in_a if name == "a" else in_b if name.startswith("b_") else None
            n = int(mask.sum()) if mask is not None else pts.shape[0]
            f.write(struct.pack(">I", n))  # type: ignore[attr-defined]
            rows = np.flatnonzero(mask) if mask is not None else None
            for s in range(0, n, _CHUNK):
                chunk = pts[rows[s : s + _CHUNK]] if rows is not None else pts[s : s + _CHUNK]
                f.write(encode_points(chunk, size == G2_RAW))  # type: ignore[attr-defined]
    _write_sidecar(p, pk)


def write_vk(path: str | os.PathLike, pk: ProvingKey) -> None:
    p = Path(path)
    with _writing(p) as f:
        f.write(_vk_bytes(pk))  # type: ignore[attr-defined]
    _write_sidecar(p, pk)


def read_proofs(path: str | os.PathLike, partitions: int | None = None) -> list[bytes]:
    """A proof file: 192 bytes per partition, concatenated."""
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise BellmanFileError(f"cannot read proof {p}: {exc.strerror or exc}") from None
    if not data or len(data) % PROOF_BYTES:
        raise BellmanFileError(f"proof {p} is {len(data)} bytes, not a multiple of {PROOF_BYTES}")
    proofs = [data[i : i + PROOF_BYTES] for i in range(0, len(data), PROOF_BYTES)]
    if partitions is not None and len(proofs) != partitions:
        raise BellmanFileError(f"proof {p} holds {len(proofs)} partition proofs, the sector has {partitions}")
    return proofs


def write_proofs(path: str | os.PathLike, proofs: list[bytes]) -> None:
    if any(len(x) != PROOF_BYTES for x in proofs):
        raise ValueError("a partition proof is 192 bytes")
    with _writing(Path(path)) as f:
        f.write(b"".join(proofs))  # type: ignore[attr-defined]
