"""The proving key file: a versioned header, a checksum, and sections that memory-map as they are.

Layout (all integers little-endian):
- a 4096-byte header: magic ``SEALTPK1``, format version, flags (bit 0: INSECURE TEST
  PARAMETERS), the circuit digest (R1CS.digest()), a blake2b-256 checksum, the circuit shape
  (inputs, aux, constraints, log2 of the domain), the file size and a section table;
- the sections, each starting on a 4096-byte boundary (page aligned, so the GPU worker can pin
  and upload them directly), each exactly a storage array: G1 affine ``uint64[n, 12]``, G2 affine
  ``uint64[n, 24]``.

The checksum covers the header (with the checksum field zeroed) and every byte after it, so a
flipped bit anywhere is caught. :func:`load_proving_key` maps the sections with numpy, with no
per-element parsing; every problem is a one-line :class:`KeyFileError`.

Hashing a whole key costs about 10 s at ``large`` (8.5 GB), so it is done once: after a full
verification passes, a small sidecar ``<key>.verified`` (JSON) records the file's identity
(device, inode, size, mtime and ctime in ns) and its header checksum, and later loads that find
the same identity skip the hash (every structural header check still runs). Trade-off: a
change that keeps that identity (bit rot under an unchanged inode, or an in-place write within
the filesystem's timestamp granularity) is not caught until a load with ``verify="always"``
(parameter caches that verify once make the same trade-off).

The toxic waste is never part of the file: only the group elements setup derived from it.
"""

from __future__ import annotations

import hashlib
import json
import mmap
import os
import stat
import struct
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from engine.atomic import atomic_write

MAGIC = b"SEALTPK1"
VERSION = 1
ALIGN = 4096
HEADER_SIZE = 4096
FLAG_INSECURE = 1
_HEAD = struct.Struct("<8sIIII32s32sQQQQQ")  # magic ver flags header_size n_sections digest checksum inputs aux constraints log_n file_size
_ENTRY = struct.Struct("<16sQQQ")  # name offset rows cols(uint64 per row)
_CHECKSUM_AT = 8 + 4 * 4 + 32
STAMP_SUFFIX = ".verified"
_STAMP_FORMAT = 1
_STAT_FIELDS = ("st_size", "st_mtime_ns", "st_ctime_ns", "st_ino", "st_dev")
VERIFY_MODES = ("auto", "always")

# Section name -> uint64 words per row. Order is the order in the file.
SECTIONS: dict[str, int] = {
    "alpha_g1": 12,
    "beta_g1": 12,
    "beta_g2": 24,
    "gamma_g2": 24,
    "delta_g1": 12,
    "delta_g2": 24,
    "ic": 12,  # num_inputs points: (beta u_j + alpha v_j + w_j) / gamma
    "a": 12,  # num_vars points: u_j(tau)
    "b_g1": 12,  # num_vars points: v_j(tau)
    "b_g2": 24,  # num_vars points: v_j(tau)
    "l": 12,  # num_aux points: (beta u_j + alpha v_j + w_j) / delta
    "h": 12,  # domain - 1 points: tau^i Z(tau) / delta
}


class KeyFileError(ValueError):
    """A key file that cannot be used (bad magic, version, truncation, checksum, shape)."""


class NotAKeyFile(KeyFileError):
    """The key's path holds something that is no file at all (a directory, a pipe, a socket):
    not a damaged key, so running setup over it cannot help; the operator moves it away."""


def not_a_file(path: Path, what: str = "proving key") -> NotAKeyFile | None:
    """The error for a key path that exists but is not a regular file (None when it is one, or
    is missing: opening it then says so). A pipe is refused before it is opened, which would
    wait for a writer forever."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return None
    if stat.S_ISREG(mode):
        return None
    kind = ("a directory" if stat.S_ISDIR(mode) else "a named pipe" if stat.S_ISFIFO(mode)
            else "a socket" if stat.S_ISSOCK(mode) else "a device" if stat.S_ISCHR(mode)
            or stat.S_ISBLK(mode) else "not a regular file")
    return NotAKeyFile(f"{path} is {kind}, not a {what} file: move it away or name the "
                       f"{what} file itself")


@dataclass
class ProvingKey:
    """A Groth16 proving key; arrays are read-only views of the mapped file (or in memory)."""

    num_inputs: int
    num_aux: int
    num_constraints: int
    log_n: int
    digest: bytes
    insecure: bool
    alpha_g1: np.ndarray
    beta_g1: np.ndarray
    beta_g2: np.ndarray
    gamma_g2: np.ndarray
    delta_g1: np.ndarray
    delta_g2: np.ndarray
    ic: np.ndarray
    a: np.ndarray
    b_g1: np.ndarray
    b_g2: np.ndarray
    l: np.ndarray
    h: np.ndarray
    path: Path | None = field(default=None, compare=False)

    @property
    def num_vars(self) -> int:
        return self.num_inputs + self.num_aux

    @property
    def domain_size(self) -> int:
        return 1 << self.log_n

    def expected_rows(self) -> dict[str, int]:
        one = {k: 1 for k in ("alpha_g1", "beta_g1", "beta_g2", "gamma_g2", "delta_g1", "delta_g2")}
        return one | {
            "ic": self.num_inputs,
            "a": self.num_vars,
            "b_g1": self.num_vars,
            "b_g2": self.num_vars,
            "l": self.num_aux,
            "h": self.domain_size - 1,
        }

    def check(self, kept: dict[str, int] | None = None) -> None:
        """Raise KeyFileError unless every section has the shape the circuit shape implies
        (``kept``: the sections that hold only their used rows, and how many: a device-made
        key's, engine.groth16.setup.device_key)."""
        for name, rows in (self.expected_rows() | (kept or {})).items():
            arr = getattr(self, name)
            if arr.shape != (rows, SECTIONS[name]) or arr.dtype != np.uint64:
                raise KeyFileError(
                    f"proving key section {name} has shape {list(arr.shape)}, expected [{rows}, {SECTIONS[name]}]"
                )

    def nbytes(self) -> int:
        return sum(getattr(self, k).nbytes for k in SECTIONS)


def _align(x: int) -> int:
    return -(-x // ALIGN) * ALIGN


def _layout(pk: ProvingKey) -> tuple[list[tuple[str, int, int, int]], int]:
    entries, off = [], HEADER_SIZE
    for name, cols in SECTIONS.items():
        rows = getattr(pk, name).shape[0]
        entries.append((name, off, rows, cols))
        off = _align(off + rows * cols * 8)
    return entries, off


def _header(pk: ProvingKey, entries: list[tuple[str, int, int, int]], size: int, checksum: bytes) -> bytes:
    head = _HEAD.pack(
        MAGIC,
        VERSION,
        FLAG_INSECURE if pk.insecure else 0,
        HEADER_SIZE,
        len(entries),
        pk.digest,
        checksum,
        pk.num_inputs,
        pk.num_aux,
        pk.num_constraints,
        pk.log_n,
        size,
    )
    table = b"".join(_ENTRY.pack(n.encode(), o, r, c) for n, o, r, c in entries)
    out = head + table
    return out + bytes(HEADER_SIZE - len(out))


def save_proving_key(pk: ProvingKey, path: str | os.PathLike) -> None:
    """Write the key to ``path`` atomically (a temp file in the same folder, then os.replace)."""
    pk.check()
    path = Path(path)
    # the new file gets a new inode anyway, but a stale stamp must never outlive its key
    stamp_path(path).unlink(missing_ok=True)
    entries, size = _layout(pk)
    h = hashlib.blake2b(digest_size=32)
    header = _header(pk, entries, size, bytes(32))
    h.update(header)
    with atomic_write(path, "wb") as f:
        f.write(header)
        pos = HEADER_SIZE
        for name, off, _rows, _cols in entries:
            pad = bytes(off - pos)
            data = np.ascontiguousarray(getattr(pk, name), dtype="<u8").tobytes()
            h.update(pad)
            h.update(data)
            f.write(pad)
            f.write(data)
            pos = off + len(data)
        tail = bytes(size - pos)
        h.update(tail)
        f.write(tail)
        f.seek(_CHECKSUM_AT)
        f.write(h.digest())


def _checksum(buf: mmap.mmap | bytes) -> bytes:
    h = hashlib.blake2b(digest_size=32)
    view = memoryview(buf)
    h.update(view[:_CHECKSUM_AT])
    h.update(bytes(32))
    step = 1 << 24
    for i in range(_CHECKSUM_AT + 32, len(view), step):
        h.update(view[i : i + step])
    view.release()
    return h.digest()


def read_header(path: str | os.PathLike) -> dict:
    """The header fields of a proving key file (no checksum check), for `info`-style output."""
    path = Path(path)
    if (wrong := not_a_file(path)) is not None:
        raise wrong
    try:
        with open(path, "rb") as f:
            raw = f.read(HEADER_SIZE)
    except OSError as exc:
        raise KeyFileError(f"cannot read proving key {path}: {exc.strerror or exc}") from None
    if not raw or raw[:8] != MAGIC[: len(raw)]:
        raise KeyFileError(f"{path} is not a sealtop proving key (bad magic)")
    if len(raw) >= 12 and (ver := int.from_bytes(raw[8:12], "little")) != VERSION:
        raise KeyFileError(f"{path}: proving key format version {ver}, this build reads version {VERSION}")
    if len(raw) < HEADER_SIZE:
        raise KeyFileError(f"{path}: proving key is truncated ({len(raw)} bytes, shorter than its header)")
    magic, ver, flags, hsize, nsec, digest, checksum, ni, na, nc, log_n, size = _HEAD.unpack_from(raw)
    if hsize != HEADER_SIZE or nsec != len(SECTIONS):
        raise KeyFileError(f"{path}: proving key header is malformed")
    entries = []
    for i in range(nsec):
        name, off, rows, cols = _ENTRY.unpack_from(raw, _HEAD.size + i * _ENTRY.size)
        entries.append((name.rstrip(b"\0").decode("ascii", "replace"), off, rows, cols))
    return {
        "version": ver,
        "insecure": bool(flags & FLAG_INSECURE),
        "digest": digest,
        "checksum": checksum,
        "num_inputs": ni,
        "num_aux": na,
        "num_constraints": nc,
        "log_n": log_n,
        "file_size": size,
        "sections": entries,
    }


def stamp_path(path: str | os.PathLike) -> Path:
    """The verified-stamp sidecar of a key file: ``<key>.verified``."""
    path = Path(path)
    return path.with_name(path.name + STAMP_SUFFIX)


def _identity(st: os.stat_result) -> dict[str, int]:
    return {name: int(getattr(st, name)) for name in _STAT_FIELDS}


def _stamp_matches(path: Path, st: os.stat_result, checksum: bytes) -> bool:
    """Whether the sidecar vouches for this very file: same identity and header checksum.
    A missing, unreadable or garbled sidecar simply does not match."""
    try:
        stamp = json.loads(stamp_path(path).read_text(encoding="utf-8"))
        return (
            isinstance(stamp, dict)
            and stamp.get("format") == _STAMP_FORMAT
            and stamp.get("checksum") == checksum.hex()
            and all(stamp.get(k) == v for k, v in _identity(st).items())
        )
    except (OSError, ValueError):  # ValueError covers bad JSON and bad UTF-8
        return False


def _write_stamp(path: Path, st: os.stat_result, checksum: bytes) -> None:
    """Record that the file with this identity passed a full verification. Best effort: a
    read-only folder only means the next load hashes again."""
    stamp = {"format": _STAMP_FORMAT, "checksum": checksum.hex(), **_identity(st)}
    try:
        with atomic_write(stamp_path(path), "w") as f:
            json.dump(stamp, f)
    except OSError:
        pass


def load_proving_key(path: str | os.PathLike, verify_checksum: bool = True, verify: str = "auto") -> ProvingKey:
    """Map a proving key file; sections are read-only numpy views of the mapping (no copy).

    ``verify="auto"`` hashes the whole file unless its verified stamp (see the module doc)
    matches, and writes the stamp after a hash that passes; ``verify="always"`` hashes every
    time. ``verify_checksum=False`` skips the checksum altogether (the caller asked for speed).
    """
    if verify not in VERIFY_MODES:
        raise ValueError(f"verify must be one of {', '.join(VERIFY_MODES)}, got {verify!r}")
    path = Path(path)
    head = read_header(path)
    try:
        f = open(path, "rb")
    except OSError as exc:
        raise KeyFileError(f"cannot read proving key {path}: {exc.strerror or exc}") from None
    with f:
        st = os.fstat(f.fileno())
        actual = st.st_size
        if actual < head["file_size"]:
            raise KeyFileError(f"{path}: proving key is truncated ({actual} of {head['file_size']} bytes)")
        if actual > head["file_size"]:
            raise KeyFileError(f"{path}: proving key has {actual - head['file_size']} unexpected trailing bytes")
        mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        if verify_checksum:
            # the mapped header must be the one read_header parsed (the path may have been replaced)
            mapped = bytes(mm[_CHECKSUM_AT : _CHECKSUM_AT + 32])
            if mapped != head["checksum"]:
                raise KeyFileError(f"checksum mismatch in {path}: the file changed while loading")
            if verify == "always" or not _stamp_matches(path, st, mapped):
                if _checksum(mm) != head["checksum"]:
                    raise KeyFileError(f"checksum mismatch in {path}: the proving key is damaged")
                if _identity(os.fstat(f.fileno())) == _identity(st):  # unchanged while hashing
                    _write_stamp(path, st, mapped)
    arrays = {}
    for (name, off, rows, cols), want in zip(head["sections"], SECTIONS.items()):
        if (name, cols) != want:
            raise KeyFileError(f"{path}: unexpected section {name!r} in the proving key")
        if off % ALIGN or off + rows * cols * 8 > actual:
            raise KeyFileError(f"{path}: section {name} lies outside the file")
        arrays[name] = np.frombuffer(mm, dtype="<u8", count=rows * cols, offset=off).reshape(rows, cols)
    pk = ProvingKey(
        num_inputs=head["num_inputs"],
        num_aux=head["num_aux"],
        num_constraints=head["num_constraints"],
        log_n=head["log_n"],
        digest=head["digest"],
        insecure=head["insecure"],
        path=path,
        **arrays,
    )
    pk.check()
    return pk


# ---------------------------------------------------------------------------- room on the disk

ROOM_MARGIN_FRACTION = 0.02  # free space to leave beyond the key: 2% of it plus ROOM_MARGIN_BYTES
ROOM_MARGIN_BYTES = 256 * 2**20


class KeyRoomError(KeyFileError):
    """The key cannot be stored: its folder has less free space than the key and a margin."""


def key_file_size(num_inputs: int, num_aux: int, num_constraints: int) -> int:
    """Bytes of the key file of a circuit of this shape (the header and every aligned section),
    computed from the shape alone, before setup makes any point."""
    from engine.groth16.qap import domain_log

    nv = num_inputs + num_aux
    rows = {k: 1 for k in ("alpha_g1", "beta_g1", "beta_g2", "gamma_g2", "delta_g1", "delta_g2")}
    rows |= {"ic": num_inputs, "a": nv, "b_g1": nv, "b_g2": nv, "l": num_aux,
             "h": (1 << domain_log(num_constraints)) - 1}
    off = HEADER_SIZE
    for name, cols in SECTIONS.items():
        off = _align(off + rows[name] * cols * 8)
    return off


def room_needed(key_bytes: int) -> int:
    """Free bytes a key of ``key_bytes`` needs: itself plus the margin."""
    return key_bytes + int(key_bytes * ROOM_MARGIN_FRACTION) + ROOM_MARGIN_BYTES


def check_room(directory: str | os.PathLike, key_bytes: int, what: str, device_key: str) -> None:
    """Raise KeyRoomError (one line: free vs needed bytes, and ``device_key``, what to do
    instead) unless ``directory`` has room for a key of ``key_bytes`` and the margin. The probe is
    shutil.disk_usage, so it sees what the filesystem reports to this user."""
    import shutil

    need = room_needed(key_bytes)
    free = shutil.disk_usage(directory).free
    if free < need:
        raise KeyRoomError(
            f"the proving key of {what} cannot be stored in {directory}: {key_bytes} bytes "
            f"({need} with the margin) needed, {free} free; {device_key}"
        )
