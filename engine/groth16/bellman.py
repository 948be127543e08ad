"""Groth16 parameter (``.params``) and verifying-key (``.vk``) files in bellperson's format.

These are the files a Filecoin storage provider keeps in /var/tmp/filecoin-proof-parameters.
The layout, from bellperson 0.27 (src/groth16/verifying_key.rs ``VerifyingKey::write``, params.rs
``Parameters::write``; rust-fil-proofs' parameter_cache.rs writes ``.vk`` with the first and
``.params`` with the second):

    .vk      alpha_g1, beta_g1 (G1), beta_g2, gamma_g2 (G2), delta_g1 (G1), delta_g2 (G2),
             u32 n, then n IC points (G1)
    .params  the .vk bytes, then five sections h, l, a, b_g1 (G1) and b_g2 (G2), each a u32
             count followed by that many points

Every u32 is big-endian and every point uses the uncompressed zcash encoding (96 bytes G1, 192
G2, c1 before c0; kernels/cpu/be_points.py). There is no header, circuit identity or checksum
(Filecoin checks a blake2b digest listed in its parameters.json, outside the format), so a file
is bound to its circuit only through its section lengths; a file sealtop writes gets a sidecar
``<file>.sealtop.json`` with the circuit digest and the INSECURE label, which the format has no
room for.

Sparse A and B. bellperson's generator (generator.rs ``generate_parameters``) drops the points
at infinity from a, b_g1 and b_g2: the variables whose QAP polynomial is zero because no
constraint uses them there. Its prover (prover/mod.rs ``ProvingAssignment::enforce`` with lc.rs
``eval_with_trackers``) pairs the remaining points with variables through density trackers: a
variable is dense in a query once a constraint has a nonzero coefficient for it there. Inputs
are always dense in A (the ``x_i · 0 = 0`` input constraints put each one there). So a = [every
input, the aux variables A uses] and b_g1 = b_g2 = [the variables, inputs and aux, B uses].
sealtop keeps a point per variable (infinity for the unused ones): reading expands the sections
through the circuit's :class:`Density`, writing filters them again and checks that exactly the
dropped points are infinity, so the round trip is bit for bit.

Validation on read, each failure one line naming the file and what is wrong (a
:class:`BellmanFileError`, a KeyFileError, which the CLI turns into exit 2):
- every count against the bytes left, every section count against the circuit (IC: inputs,
  h: domain − 1, l: aux, a and b: the density), and no trailing bytes;
- every point: the flag bits, coordinates below p and the curve equation (what blst checks even
  on bellperson's unchecked path, which Filecoin reads parameters with: parameter_cache.rs,
  ``build_mapped_parameters(.., false)``), and no point at infinity in IC, h, l, a or b
  (bellperson refuses those; the six single points may be infinity, as its reader allows);
- the prime-order subgroup for every verifying-key point (bellperson reads those checked) and
  for a fresh random sample of ``subgroup_samples`` points of each large section plus its first
  and last, with py_arkworks_bls12381: a full check costs a scalar multiplication per point
  (about 40 µs in G1, 180 µs in G2: over eight hours on one core for the 32 GiB sector's
  ~700 million points); ``subgroup_samples=None`` asks for it anyway.

Reading maps the file and converts ``CHUNK_POINTS`` points at a time with the parallel numba
kernels straight into the key's arrays, then drops those pages from the mapping
(MADV_DONTNEED), so the peak resident memory is the key being built plus a chunk; no Python
object per point exists.
"""

from __future__ import annotations

import json
import mmap
import os
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import numpy as np

from engine.atomic import atomic_write
from engine.groth16.keyfile import KeyFileError, ProvingKey, not_a_file
from engine.groth16.qap import domain_log
from engine.groth16.r1cs import R1CS
from engine.groth16.vkey import VerifyingKey, verifying_key
from kernels.cpu import be_points

G1_RAW, G2_RAW = be_points.G1_UNCOMPRESSED, be_points.G2_UNCOMPRESSED
VK_SINGLES = (("alpha_g1", "g1"), ("beta_g1", "g1"), ("beta_g2", "g2"), ("gamma_g2", "g2"),
              ("delta_g1", "g1"), ("delta_g2", "g2"))
SECTIONS = (("h", "g1"), ("l", "g1"), ("a", "g1"), ("b_g1", "g1"), ("b_g2", "g2"))
SPARSE = ("a", "b_g1", "b_g2")
CHUNK_POINTS = 1 << 16
SUBGROUP_SAMPLES = 64
SIDECAR = ".sealtop.json"
_SIDECAR_FORMAT = "sealtop-bellman-sidecar"
_SIZE = {"g1": G1_RAW, "g2": G2_RAW}
_WORDS = {"g1": 12, "g2": 24}
_U32 = struct.Struct(">I")
_VK_FIELDS = tuple(n for n, _ in VK_SINGLES) + ("ic",)


class BellmanFileError(KeyFileError):
    """A params, vk or proof file that cannot be used, or a key that cannot be written as one."""


# ---------------------------------------------------------------------------- density

@dataclass(frozen=True)
class Density:
    """Which variables the A and B queries use, as bellperson's density trackers count them:
    ``a_aux[j]`` for aux variable j in A (inputs are always dense there), ``b[j]`` for
    variable j (inputs first) in B."""

    num_inputs: int
    a_aux: np.ndarray  # bool[num_aux]
    b: np.ndarray  # bool[num_vars]

    @property
    def num_vars(self) -> int:
        return len(self.b)

    def mask(self, section: str) -> np.ndarray:
        """bool[num_vars]: the variables whose point the section keeps."""
        if section == "a":
            return np.concatenate([np.ones(self.num_inputs, bool), self.a_aux])
        return self.b

    def count(self, section: str) -> int:
        if section == "a":
            return self.num_inputs + int(np.count_nonzero(self.a_aux))
        return int(np.count_nonzero(self.b))


def query_density(r: R1CS) -> Density:
    """The circuit's A and B densities. Rows are taken as merged linear combinations (one
    entry per variable, as bellpepper's LinearCombination keeps them); were two entries of a row
    to cancel, writing would see a used variable with a point at infinity and refuse."""
    return Density(r.num_inputs, r.A.used_columns(r.num_vars)[r.num_inputs:], r.B.used_columns(r.num_vars))


# ---------------------------------------------------------------------------- point helpers

def _kernel(group: str, decode: bool) -> Callable[..., None]:
    if decode:
        return be_points.g1_from_be if group == "g1" else be_points.g2_from_be
    return be_points.g1_to_be if group == "g1" else be_points.g2_to_be


def _first_bad(status: np.ndarray, infinity_ok: bool) -> int:
    bad = status != be_points.OK
    if infinity_ok:
        bad &= status != be_points.INFINITY
    return int(np.argmax(bad)) if bad.any() else -1


def decode_points(raw: np.ndarray, g2: bool, where: str, infinity_ok: bool = True) -> np.ndarray:
    """uint8[n, 96 | 192] uncompressed points -> storage rows uint64[n, 12 | 24]; one line
    naming ``where`` and the point for the first invalid one."""
    group = "g2" if g2 else "g1"
    out = np.zeros((len(raw), _WORDS[group]), np.uint64)
    status = np.empty(len(raw), np.uint8)
    _kernel(group, True)(np.ascontiguousarray(raw), np.arange(len(raw)), out, status)
    if (k := _first_bad(status, infinity_ok)) >= 0:
        raise BellmanFileError(f"{where}: point {k} {be_points.STATUS[int(status[k])]}")
    return out


def encode_points(points: np.ndarray, g2: bool) -> bytes:
    """Storage rows -> uncompressed bytes (infinity as 0x40 and zeros, as blst writes it)."""
    group = "g2" if g2 else "g1"
    pts = np.ascontiguousarray(points, dtype=np.uint64).reshape(-1, _WORDS[group])
    out = np.empty((len(pts), _SIZE[group]), np.uint8)
    _kernel(group, False)(pts, np.arange(len(pts)), out, np.empty(len(pts), np.uint8))
    return out.tobytes()


# ---------------------------------------------------------------------------- reading

class _Mapped:
    """A file mapped read-only and consumed front to back."""

    def __init__(self, path: Path, what: str) -> None:
        if (wrong := not_a_file(path, what)) is not None:
            raise BellmanFileError(str(wrong))
        self.path, self.what, self.pos = path, what, 0
        try:
            self.file = open(path, "rb")
        except OSError as exc:
            raise BellmanFileError(f"cannot read {what} {path}: {exc.strerror or exc}") from None
        try:
            self.size = os.fstat(self.file.fileno()).st_size
            if self.size == 0:
                raise BellmanFileError(f"{what} {path} is empty")
            self.mm = mmap.mmap(self.file.fileno(), 0, access=mmap.ACCESS_READ)
        except BaseException as exc:
            self.file.close()
            if isinstance(exc, OSError):
                raise BellmanFileError(f"cannot read {what} {path}: {exc.strerror or exc}") from None
            raise
        self.buf = np.frombuffer(self.mm, np.uint8)

    def fail(self, msg: str) -> BellmanFileError:
        return BellmanFileError(f"{self.what} {self.path}: {msg}")

    def take(self, nbytes: int, what: str) -> np.ndarray:
        left = self.size - self.pos
        if nbytes > left:
            raise self.fail(f"cut short: {what} needs {nbytes} bytes at offset {self.pos}, "
                            f"{left} are there")
        view = self.buf[self.pos:self.pos + nbytes]
        self.pos += nbytes
        return view

    def u32(self, what: str) -> int:
        return int(_U32.unpack(self.take(4, what).tobytes())[0])

    def release(self, lo: int, hi: int) -> None:
        """Drop the mapped pages of bytes [lo, hi) from this process (the page cache keeps them)."""
        lo -= lo % mmap.PAGESIZE
        if hi > lo:
            self.mm.madvise(mmap.MADV_DONTNEED, lo, hi - lo)

    def pread(self, lo: int, n: int) -> bytes:
        """Bytes [lo, lo + n) read, not mapped: a scattered sample through the mapping would
        map a whole folio (about a megabyte here) per point."""
        return os.pread(self.file.fileno(), n, lo)

    def close(self) -> None:
        del self.buf
        try:
            self.mm.close()
        except BufferError:  # a view is still held (by a failure's traceback): unmapped with it
            pass
        self.file.close()


def _ark_xy(raw: bytes, group: str) -> bytes:
    """Uncompressed zcash bytes -> py_arkworks' big-endian x‖y (its G2 puts c0 before c1)."""
    return raw if group == "g1" else raw[48:96] + raw[:48] + raw[144:] + raw[96:144]


def _sample(count: int, samples: int | None) -> np.ndarray:
    """Indices to subgroup-check: all, or the first, the last and a fresh random sample."""
    if samples is None or samples + 2 >= count:
        return np.arange(count)
    picks = np.random.default_rng().choice(count, samples, replace=False)
    return np.unique(np.concatenate([[0, count - 1], picks]))


def _subgroup(m: _Mapped, start: int, group: str, picks: np.ndarray,
              where: Callable[[int], str]) -> None:
    import py_arkworks_bls12381 as ark

    cls = ark.G1Point if group == "g1" else ark.G2Point
    size = _SIZE[group]
    for k in picks.tolist():
        raw = m.pread(start + k * size, size)
        if raw[0] & be_points.FLAG_INFINITY or not any(raw):
            continue  # infinity: allowed only where the decoder let it through
        try:
            cls.from_xy_bytes_be(_ark_xy(raw, group))
        except Exception:
            raise m.fail(f"{where(k)} is not in the prime-order subgroup") from None


def _read_points(m: _Mapped, n: int, group: str, what: str, samples: int | None,
                 mask: np.ndarray | None = None, infinity_ok: bool = False) -> np.ndarray:
    """Read n points into a new storage array: row k for point k, or with ``mask`` the points
    in order into the rows where it is true (the others stay zero: infinity)."""
    size = _SIZE[group]
    start = m.pos
    body = m.take(n * size, f"{what} ({n} points)").reshape(n, size)
    dst = np.zeros((n if mask is None else len(mask), _WORDS[group]), np.uint64)
    kernel = _kernel(group, True)
    seen = 0
    for v0 in range(0, len(dst), CHUNK_POINTS):
        v1 = min(len(dst), v0 + CHUNK_POINTS)
        rows = np.arange(v0, v1) if mask is None else np.flatnonzero(mask[v0:v1]) + v0
        k = len(rows)
        status = np.empty(k, np.uint8)
        kernel(body[seen:seen + k], rows, dst, status)
        if (j := _first_bad(status, infinity_ok)) >= 0:
            var = "" if mask is None else f" (variable {rows[j]})"
            raise m.fail(f"{what} point {seen + j}{var} {be_points.STATUS[int(status[j])]}")
        m.release(start + seen * size, start + (seen + k) * size)
        seen += k
    _subgroup(m, start, group, _sample(n, samples), lambda k: f"{what} point {k}")
    return dst


def _read_vk_points(m: _Mapped) -> dict[str, Any]:
    out: dict[str, Any] = {name: _read_points(m, 1, group, name, None, infinity_ok=True)
           for name, group in VK_SINGLES}
    n = m.u32("the IC count")
    out["ic"] = _read_points(m, n, "g1", "IC", None)
    return out


def _params_tail_fits(m: _Mapped) -> bool:
    """Whether the bytes after the verifying key walk exactly as the five params sections."""
    pos = m.pos
    for _name, group in SECTIONS:
        if pos + 4 > m.size:
            return False
        pos += 4 + int(_U32.unpack(m.buf[pos:pos + 4].tobytes())[0]) * _SIZE[group]
    return pos == m.size


def _sidecar(path: Path) -> dict:
    try:
        side = json.loads(Path(str(path) + SIDECAR).read_text())
    except (OSError, ValueError):
        return {}
    return side if isinstance(side, dict) and side.get("format") == _SIDECAR_FORMAT else {}


def _digest_of(side: dict) -> bytes:
    try:
        return bytes.fromhex(str(side.get("circuit_digest", "")))
    except ValueError:
        return b""


def read_vk_points(path: str | os.PathLike) -> dict[str, Any]:
    """The verifying key of a ``.vk`` file as storage rows (alpha_g1, beta_g1, beta_g2,
    gamma_g2, delta_g1, delta_g2, ic), every point fully checked. A ``.params`` file reads
    too (it starts with its verifying key); any other trailing bytes are refused."""
    m = _Mapped(Path(path), "verifying key")
    try:
        vk = _read_vk_points(m)
        if m.pos != m.size and not _params_tail_fits(m):
            raise m.fail(f"{m.size - m.pos} bytes after its IC points (it ends at offset {m.pos})")
        return vk
    finally:
        m.close()


def read_vk(path: str | os.PathLike) -> VerifyingKey:
    """sealtop's verifying key from a ``.vk`` (or ``.params``) file; the circuit digest and the
    INSECURE label come from the sidecar sealtop writes beside it (empty and False without)."""
    vk = read_vk_points(path)
    side = _sidecar(Path(path))
    stub = ProvingKey(len(vk["ic"]), 0, 0, 1, _digest_of(side), bool(side.get("insecure", False)),
                      **vk, a=_NONE1, b_g1=_NONE1, b_g2=_NONE2, l=_NONE1, h=_NONE1)
    return verifying_key(stub)


_NONE1 = np.zeros((0, 12), np.uint64)
_NONE2 = np.zeros((0, 24), np.uint64)


def read_params(path: str | os.PathLike, r: R1CS, *, subgroup_samples: int | None = SUBGROUP_SAMPLES,
                density: Density | None = None) -> ProvingKey:
    """A ``.params`` file for the circuit ``r`` (with its input constraints) as sealtop's
    proving key, in memory, one point per variable; its verifying key is
    ``vkey.verifying_key(pk)``. Every count is checked against the circuit before any point is
    converted. The key takes ``r``'s digest; it is INSECURE when sealtop's sidecar for this
    circuit says so. ``density``: :func:`query_density` of ``r``, when already computed."""
    p = Path(path)
    dens = density if density is not None else query_density(r)
    if (dens.num_inputs, dens.num_vars) != (r.num_inputs, r.num_vars):
        raise ValueError("the density given is not the circuit's")
    log_n = domain_log(r.num_constraints)
    want = {"h": ((1 << log_n) - 1, f"the circuit's domain 2^{log_n} needs"),
            "l": (r.num_aux, "the circuit's aux variables are"),
            "a": (dens.count("a"), "the variables the circuit's A uses are"),
            "b_g1": (dens.count("b_g1"), "the variables the circuit's B uses are"),
            "b_g2": (dens.count("b_g2"), "the variables the circuit's B uses are")}
    m = _Mapped(p, "parameter file")
    try:
        sections = _read_vk_points(m)
        if len(sections["ic"]) != r.num_inputs:
            raise m.fail(f"not for this circuit: its verifying key has {len(sections['ic'])} IC "
                         f"points, the circuit {r.num_inputs} inputs")
        for name, group in SECTIONS:
            n = m.u32(f"the count of {name}")
            need, why = want[name]
            if n != need:
                raise m.fail(f"not for this circuit: {name} holds {n} points, {why} {need}")
            mask = dens.mask(name) if name in SPARSE else None
            sections[name] = _read_points(m, n, group, name, subgroup_samples, mask)
        if m.pos != m.size:
            raise m.fail(f"{m.size - m.pos} bytes after its last section (it ends at offset {m.pos})")
    finally:
        m.close()
    side = _sidecar(p)
    insecure = bool(side.get("insecure", False)) and _digest_of(side) == r.digest()
    pk = ProvingKey(num_inputs=r.num_inputs, num_aux=r.num_aux, num_constraints=r.num_constraints,
                    log_n=log_n, digest=r.digest(), insecure=insecure, path=p, **sections)
    pk.check()
    return pk


def params_counts(path: str | os.PathLike) -> dict[str, int]:
    """The point counts of a ``.params`` file (ic, h, l, a, b_g1, b_g2), read from its count
    fields alone (no point decoded): enough to tell which circuit a file is for."""
    m = _Mapped(Path(path), "parameter file")
    try:
        for _name, group in VK_SINGLES:
            m.take(_SIZE[group], "the verifying key")
        counts = {"ic": m.u32("the IC count")}
        m.take(counts["ic"] * G1_RAW, "the IC points")
        for name, group in SECTIONS:
            counts[name] = m.u32(f"the count of {name}")
            m.take(counts[name] * _SIZE[group], name)
        return counts
    finally:
        m.close()


def find_params(where: str | os.PathLike, r: R1CS) -> Path | None:
    """The ``.params`` file for circuit ``r``: ``where`` itself, or the one file in the folder
    ``where`` (Filecoin's /var/tmp/filecoin-proof-parameters) whose counts are the circuit's
    (IC, the domain's h, the aux variables' l, and A's and B's densities); None if none is."""
    p = Path(where)
    files = sorted(p.glob("*.params")) if p.is_dir() else [p]
    dens = query_density(r)
    want = {"ic": r.num_inputs, "h": (1 << domain_log(r.num_constraints)) - 1, "l": r.num_aux,
            "a": dens.count("a"), "b_g1": dens.count("b_g1"), "b_g2": dens.count("b_g2")}
    for f in files:
        try:
            if params_counts(f) == want:
                return f
        except BellmanFileError:
            continue
    return None


# ---------------------------------------------------------------------------- writing

def _host(pk: ProvingKey, name: str) -> np.ndarray:
    arr = getattr(pk, name)
    if not isinstance(arr, np.ndarray):
        raise BellmanFileError(f"the key's {name} is in device memory: a bellperson file is "
                               "written from a key in host memory")
    return np.ascontiguousarray(arr, dtype=np.uint64)


def _encoded(arr: np.ndarray, group: str, what: str, mask: np.ndarray | None = None,
             infinity_ok: bool = False) -> Iterator[np.ndarray]:
    """A section's points as uncompressed bytes, CHUNK_POINTS rows at a time; with ``mask``
    only the rows it keeps, once every row it drops is checked to be infinity."""
    kernel = _kernel(group, False)
    for v0 in range(0, len(arr), CHUNK_POINTS):
        v1 = min(len(arr), v0 + CHUNK_POINTS)
        if mask is None:
            rows = np.arange(v0, v1)
        else:
            rows = np.flatnonzero(mask[v0:v1]) + v0
            dropped = np.flatnonzero(~mask[v0:v1]) + v0
            kept = dropped[arr[dropped].any(axis=1)]
            if len(kept):
                raise BellmanFileError(
                    f"cannot write {what}: the circuit does not use variable {kept[0]} there, "
                    "but its point is not infinity (the key is not this circuit's)")
        out = np.empty((len(rows), _SIZE[group]), np.uint8)
        status = np.empty(len(rows), np.uint8)
        kernel(arr, rows, out, status)
        if (j := _first_bad(status, infinity_ok)) >= 0:
            var = f"variable {rows[j]}" if mask is not None else f"point {rows[j]}"
            raise BellmanFileError(f"cannot write {what}: {var} is the point at infinity, which "
                                   "bellperson refuses there")
        yield out


def _u32(n: int, what: str) -> bytes:
    if n >= 1 << 32:
        raise BellmanFileError(f"cannot write {what}: {n} points do not fit the format's u32 count")
    return _U32.pack(n)


def _write_vk(f: IO[Any], pk: ProvingKey) -> None:
    for name, group in VK_SINGLES:
        for chunk in _encoded(_host(pk, name), group, name, infinity_ok=True):
            f.write(chunk.tobytes())
    ic = _host(pk, "ic")
    f.write(_u32(len(ic), "IC"))
    for chunk in _encoded(ic, "g1", "IC"):
        f.write(chunk.tobytes())


def _write_sidecar(path: Path, pk: ProvingKey) -> None:
    with atomic_write(Path(str(path) + SIDECAR), "w") as f:
        json.dump({"format": _SIDECAR_FORMAT, "circuit_digest": bytes(pk.digest).hex(),
                   "insecure": bool(pk.insecure)}, f)


def write_vk(path: str | os.PathLike, pk: ProvingKey) -> None:
    """``pk``'s verifying key as a ``.vk`` file (atomically), and its sidecar."""
    p = Path(path)
    with atomic_write(p, "wb") as f:
        _write_vk(f, pk)
    _write_sidecar(p, pk)


def write_params(path: str | os.PathLike, pk: ProvingKey, r: R1CS, *,
                 density: Density | None = None) -> None:
    """``pk`` (the key of ``r``, in host memory) as a ``.params`` file (atomically), and its
    sidecar. a, b_g1 and b_g2 are filtered to the circuit's densities as bellperson's generator
    leaves them; a dropped point that is not infinity, or a kept one that is (or one in IC, h or
    l), is refused: bellperson could not pair it with its variable, or read it back."""
    pk.check()
    if bytes(pk.digest) != r.digest():
        raise BellmanFileError("cannot write the parameter file: the proving key is not this "
                               "circuit's (their digests differ)")
    dens = density if density is not None else query_density(r)
    p = Path(path)
    with atomic_write(p, "wb") as f:
        _write_vk(f, pk)
        for name, group in SECTIONS:
            arr = _host(pk, name)
            mask = dens.mask(name) if name in SPARSE else None
            f.write(_u32(len(arr) if mask is None else dens.count(name), name))
            for chunk in _encoded(arr, group, name, mask):
                f.write(chunk.data)
    _write_sidecar(p, pk)
