"""Compact resident forms of the R1CS matrices and of a witness, and their reference evaluation.

The matrices A, B and C are the same for every partition of a circuit; only the witness changes.
A GPU prover keeps the matrices resident in the form below and receives only a compact witness,
instead of three 32-byte-per-row vectors a, b, c (4.2 GB each at 2^27).

Matrix (per A, B, C), built once per circuit from the CSR form (36 bytes per nonzero there):
- ``rowptr``: uint32[rows + 1] (the nonzero count of one matrix stays below 2^32);
- ``cols``: int32[nnz], the variable of each nonzero;
- ``cidx``: uint16[nnz], the coefficient of each nonzero as an index into ``coefs``;
- ``coefs``: uint64[k, 4] (Fr Montgomery), the distinct coefficients of all three matrices,
  shared; entry 0 is +1 and entry 1 is -1 (present or not), the others in order of first
  appearance, so an evaluator can add or subtract
  without a multiplication. A porep circuit has about 1,340 distinct coefficients.
That is 6 bytes per nonzero plus 4 per row.

Witness, per partition (a PoRep witness is about 99.9% 0/1):
- ``bits``: uint8[ceil(n / 8)], bit i is 1 where z_i == 1 (little-endian bit order in a byte);
- ``general``: uint8[ceil(n / 8)], bit i is 1 where z_i is neither 0 nor 1;
- ``gidx``: int32[g], the variables that are neither, ascending;
- ``gval``: uint64[g, 4], their values (Fr Montgomery).
That is n / 4 bytes plus 36 per general value, against 32 n for the plain witness. The device
expands it into the full z anyway (the MSMs read z), so ``gidx`` makes that a plain scatter.

:func:`evaluate_compact` is the CPU reference of the device evaluation: a numba kernel fed exactly
the arrays of :meth:`CompactR1CS.arrays` and :meth:`CompactWitness.arrays`, the ones uploaded.
Its result equals engine.synthesis.evaluate on the CSR form bit for bit (field sums of canonical
values do not depend on the order of the terms).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit, prange

from engine.groth16 import sidecar
from engine.groth16.r1cs import CSR, R1CS, ThreeMatrices
from kernels.cpu.convert import to_mont_fr
from kernels.cpu.fr import FR_ONE, FR_ZERO, fr_add, fr_load, fr_mul, fr_store, fr_sub

ONE_MONT = np.array(FR_ONE, np.uint64)
NEG_ONE_MONT = to_mont_fr([-1])[0]
COEF_ONE, COEF_NEG_ONE = 0, 1  # fixed entries of every coefficient table
MAX_COEFS = 1 << 16  # cidx is uint16
PLAIN_BYTES_PER_NNZ = 36  # the CSR form: int32 column + 32-byte coefficient


class CompactError(ValueError):
    """A circuit or witness that does not fit the compact form (one line)."""


@dataclass(frozen=True)
class CompactMatrix:
    """One of A, B, C: row pointers, columns and coefficient indices (see the module doc)."""

    rowptr: np.ndarray  # uint32[rows + 1]
    cols: np.ndarray  # int32[nnz]
    cidx: np.ndarray  # uint16[nnz]

    @property
    def rows(self) -> int:
        return len(self.rowptr) - 1

    @property
    def nnz(self) -> int:
        return len(self.cols)

    def nbytes(self) -> int:
        return self.rowptr.nbytes + self.cols.nbytes + self.cidx.nbytes


@dataclass(frozen=True)
class CompactR1CS(ThreeMatrices):
    """A, B and C in compact form sharing one coefficient table."""

    num_inputs: int
    num_vars: int
    coefs: np.ndarray  # uint64[k, 4], entry 0 = +1, entry 1 = -1
    A: CompactMatrix
    B: CompactMatrix
    C: CompactMatrix

    def nbytes(self) -> int:
        return self.coefs.nbytes + sum(m.nbytes() for m in (self.A, self.B, self.C))

    def arrays(self) -> dict[str, np.ndarray]:
        """The exact contiguous arrays a device upload sends, by name."""
        out = {"coefs": self.coefs}
        for name, m in (("a", self.A), ("b", self.B), ("c", self.C)):
            out |= {f"{name}_rowptr": m.rowptr, f"{name}_cols": m.cols, f"{name}_cidx": m.cidx}
        return out


@dataclass(frozen=True)
class CompactWitness:
    """A witness as two bitmaps plus its general values (see the module doc)."""

    num_vars: int
    bits: np.ndarray  # uint8[ceil(n / 8)]
    general: np.ndarray  # uint8[ceil(n / 8)]
    gidx: np.ndarray  # int32[g]
    gval: np.ndarray  # uint64[g, 4]

    def nbytes(self) -> int:
        return self.bits.nbytes + self.general.nbytes + self.gidx.nbytes + self.gval.nbytes

    def arrays(self) -> dict[str, np.ndarray]:
        """The exact contiguous arrays a device upload sends, by name."""
        return {"bits": self.bits, "general": self.general, "gidx": self.gidx, "gval": self.gval}


HASH_BITS = 18  # a 2^18-slot open-addressing table: at most MAX_COEFS entries, a quarter full


@njit(cache=True)
def _intern(data, keys, count, slots, idx):
    """idx[j] = the table index of value data[j], adding values not seen yet after the
    ``count`` already in ``keys``; returns the new count, or -1 once more than keys holds."""
    mask = slots.shape[0] - 1
    cap = keys.shape[0]
    for j in range(data.shape[0]):
        d0, d1, d2, d3 = data[j, 0], data[j, 1], data[j, 2], data[j, 3]
        h = ((d0 ^ (d1 * np.uint64(0x9E3779B97F4A7C15)) ^ d2 ^ d3) * np.uint64(0xBF58476D1CE4E5B9))
        at = np.int64(h >> np.uint64(64 - HASH_BITS)) & mask
        while True:
            e = slots[at]
            if e < 0:
                if count >= cap:
                    return -1
                keys[count, 0], keys[count, 1], keys[count, 2], keys[count, 3] = d0, d1, d2, d3
                slots[at] = count
                idx[j] = count
                count += 1
                break
            if keys[e, 0] == d0 and keys[e, 1] == d1 and keys[e, 2] == d2 and keys[e, 3] == d3:
                idx[j] = e
                break
            at = (at + 1) & mask
    return count


def _coef_table(mats: tuple[CSR, ...]) -> tuple[np.ndarray, list[np.ndarray]]:
    """The shared table (+1, -1, then the other distinct values in the order they first
    appear) and, per matrix, each nonzero's index into it. One pass over the nonzeros with a
    hash table (porep-32g has 778 M nonzeros and about 2,300 distinct values)."""
    keys = np.zeros((MAX_COEFS, 4), np.uint64)
    slots = np.full(1 << HASH_BITS, -1, np.int64)
    fixed = np.stack([ONE_MONT, NEG_ONE_MONT])
    count = _intern(fixed, keys, 0, slots, np.empty(2, np.uint16))
    parts = []
    for m in mats:
        data = np.ascontiguousarray(m.data, np.uint64).reshape(-1, 4)
        idx = np.empty(len(data), np.uint16)
        got = _intern(data, keys, count, slots, idx) if len(data) else count
        if got < 0:
            raise CompactError(f"the circuit has more than {MAX_COEFS} distinct coefficients, "
                               f"the compact form holds {MAX_COEFS}")
        count = got
        parts.append(idx)
    return np.ascontiguousarray(keys[:count]), parts


def resident_bytes_bound(r: R1CS) -> int:
    """Bytes the compact matrices of ``r`` take where they are resident, at most (the
    coefficient table counted full): 6 per nonzero, 4 per row pointer, 32 per table entry.
    For a memory plan made before the form is built."""
    return 6 * r.nnz + 3 * 4 * (r.num_constraints + 1) + 32 * MAX_COEFS


def compact_r1cs(r: R1CS) -> CompactR1CS:
    """The compact form of ``r``; CompactError if it does not fit. The coefficient table and
    indices are read from the circuit's cache entry when made there before."""
    r.check()
    if r.num_vars >= 1 << 31:
        raise CompactError(f"the circuit has {r.num_vars} variables, int32 columns hold fewer than 2^31")
    mats = (r.A, r.B, r.C)
    for name, m in zip("ABC", mats):
        if m.nnz >= 1 << 32:
            raise CompactError(f"matrix {name} has {m.nnz} nonzeros, uint32 row pointers hold fewer than 2^32")
    names = ["compact_coefs", "A_cidx", "B_cidx", "C_cidx"]

    def valid(got: list[np.ndarray]) -> bool:
        t = got[0]
        return (t.dtype == np.uint64 and t.ndim == 2 and t.shape[1] == 4 and 2 <= len(t) <= MAX_COEFS
                and np.array_equal(t[COEF_ONE], ONE_MONT) and np.array_equal(t[COEF_NEG_ONE], NEG_ONE_MONT)
                and all(ix.dtype == np.uint16 and ix.shape == (m.nnz,) for ix, m in zip(got[1:], mats)))

    def make() -> list[np.ndarray]:
        table, parts = _coef_table(mats)
        return [table, *parts]

    # kept in the circuit's cache entry (engine/groth16/sidecar.py): one serial pass over every
    # coefficient per circuit, not per prover process
    table, *idx = sidecar.kept(sidecar.entry_of(r.A), names, make, valid)
    out = [
        CompactMatrix(
            np.ascontiguousarray(m.indptr, np.uint32),
            np.ascontiguousarray(m.indices, np.int32),
            np.ascontiguousarray(ix, np.uint16),
        )
        for m, ix in zip(mats, idx)
    ]
    return CompactR1CS(r.num_inputs, r.num_vars, table, *out)


@njit(cache=True)
def value_kinds(z, kind, lo, hi):
    """kind[i] = 0 if z_i == 0, 1 if z_i == 1, 2 otherwise, for i in lo..hi: the three kinds of
    witness value the compact form tells apart (synthesis flags its values with this too). The
    values are read in the loop, not through a per-value helper: inlined into a plain loop, that
    kept numba's reference counts of its array arguments there (engine/circuit/witness.py)."""
    for i in range(lo, hi):
        if (z[i, 0] | z[i, 1] | z[i, 2] | z[i, 3]) == 0:
            kind[i] = 0
        elif z[i, 0] == FR_ONE[0] and z[i, 1] == FR_ONE[1] and z[i, 2] == FR_ONE[2] and z[i, 3] == FR_ONE[3]:
            kind[i] = 1
        else:
            kind[i] = 2


KIND_CHUNK = 4096  # values a parallel iteration of classify_values takes


@njit(cache=True, parallel=True)
def classify_values(z, kind):
    """value_kinds over all of z, in parallel chunks."""
    n = z.shape[0]
    for c in prange((n + KIND_CHUNK - 1) // KIND_CHUNK):
        value_kinds(z, kind, c * KIND_CHUNK, min(n, (c + 1) * KIND_CHUNK))


def compact_witness(z: np.ndarray) -> CompactWitness:
    """The compact form of a witness z (uint64[n, 4], Montgomery)."""
    if z.dtype != np.uint64 or z.ndim != 2 or z.shape[1] != 4:
        raise CompactError(f"a witness must be uint64[n, 4], got {z.dtype}{list(z.shape)}")
    if z.shape[0] >= 1 << 31:
        raise CompactError(f"the witness has {z.shape[0]} values, int32 indices hold fewer than 2^31")
    z = np.ascontiguousarray(z)
    kind = np.empty(z.shape[0], np.uint8)
    classify_values(z, kind)
    gidx = np.flatnonzero(kind == 2).astype(np.int32)
    return CompactWitness(
        z.shape[0],
        np.packbits(kind == 1, bitorder="little"),
        np.packbits(kind == 2, bitorder="little"),
        gidx,
        np.ascontiguousarray(z[gidx]),
    )


def expand_witness(w: CompactWitness) -> np.ndarray:
    """The full witness back from its compact form (what the device scatter produces)."""
    n = w.num_vars
    z = np.zeros((n, 4), np.uint64)
    ones = np.unpackbits(w.bits, count=n, bitorder="little").astype(bool)
    z[ones] = ONE_MONT
    z[w.gidx] = w.gval
    return z


# -- the compact witness in a shared-memory segment ------------------------------------------
SEGMENT_MAGIC = 0x5345414C43575431  # "SEALCWT1": a compact witness segment, version 1
HEADER_WORDS = 4  # magic, num_vars, capacity, g (the general values written)
BLOCK_VARS = 64  # one bitmap word per 64 variables


@dataclass(frozen=True)
class WitnessLayout:
    """Where a compact witness lies in a segment of uint64 words, from the circuit alone.

    ``capacity`` is the most general values a witness of the circuit can hold (the variables
    no bit operation writes, engine.synthesis.general_capacity); the layout reserves exactly
    that, so the segment's size is known before synthesis and the budget can count it. Words:
    the header, the value bitmap and the general bitmap (one word per 64 variables each, bit i
    of the bytes in little-endian order as in :class:`CompactWitness`), ``gidx`` (int32, two
    per word) and ``gval`` (four words per value)."""

    num_vars: int
    capacity: int

    def __post_init__(self) -> None:
        if not 0 <= self.capacity <= self.num_vars or self.num_vars >= 1 << 31:
            raise CompactError(f"a compact witness layout holds up to 2^31 - 1 variables and at most "
                               f"one general value each, got {self.num_vars} and {self.capacity}")

    @property
    def bitmap_words(self) -> int:
        return (self.num_vars + BLOCK_VARS - 1) // BLOCK_VARS

    @property
    def words(self) -> int:
        return HEADER_WORDS + 2 * self.bitmap_words + (self.capacity + 1) // 2 + 4 * self.capacity

    @property
    def nbytes(self) -> int:
        return 8 * self.words

    def views(self, buf: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(header, value bitmap words, general bitmap words, gidx[capacity], gval[capacity, 4]):
        views of a uint64 buffer of at least ``words`` words (a segment's array)."""
        flat = np.asarray(buf).reshape(-1)
        if flat.dtype != np.uint64 or len(flat) < self.words:
            raise CompactError(f"a compact witness segment must be uint64[{self.words}] or more, "
                               f"got {flat.dtype}[{len(flat)}]")
        nb, cap = self.bitmap_words, self.capacity
        at = HEADER_WORDS
        bits, at = flat[at : at + nb], at + nb
        general, at = flat[at : at + nb], at + nb
        gw = (cap + 1) // 2
        gidx, at = flat[at : at + gw].view(np.int32)[:cap], at + gw
        gval = flat[at : at + 4 * cap].reshape(cap, 4)
        return flat[:HEADER_WORDS], bits, general, gidx, gval


_NONE_KNOWN = np.zeros(0, np.uint8)  # every value in z


_NOT_BITS = np.uint64(0xFEFEFEFEFEFEFEFE)  # a byte of known above 1: not kept apart
_GATHER = np.uint64(0x0102040810204080)  # eight 0/1 bytes times this: their bits in the top byte


@njit(cache=True, parallel=True)
def _pack_blocks(z, known, known8, one, bits, general, counts):
    """Per block of 64 variables: the value and general bitmap words and the general count.
    Where ``known`` has entries, a 0 or 1 there is the variable's bit (z is not read); a block
    whose 64 are all so is packed from ``known8`` (the same bytes, eight a word)."""
    n = z.shape[0]
    some = len(known) > 0
    for blk in prange(bits.shape[0]):
        if some and 8 * blk + 8 <= len(known8):
            bw = np.uint64(0)
            for q in range(8):
                w = known8[8 * blk + q]
                if w & _NOT_BITS:
                    break
                bw |= ((w * _GATHER) >> np.uint64(56)) << np.uint64(8 * q)
            else:
                bits[blk] = bw
                general[blk] = np.uint64(0)
                counts[blk] = 0
                continue
        bw = np.uint64(0)
        gw = np.uint64(0)
        cnt = 0
        for i in range(blk * 64, min(n, blk * 64 + 64)):
            m = np.uint64(1) << np.uint64(i - blk * 64)
            if some and known[i] < 2:
                if known[i]:
                    bw |= m
                continue
            if (z[i, 0] | z[i, 1] | z[i, 2] | z[i, 3]) == 0:
                continue
            if z[i, 0] == one[0] and z[i, 1] == one[1] and z[i, 2] == one[2] and z[i, 3] == one[3]:
                bw |= m
            else:
                gw |= m
                cnt += 1
        bits[blk] = bw
        general[blk] = gw
        counts[blk] = cnt


@njit(cache=True, parallel=True)
def _gather_general(z, general, starts, gidx, gval):
    """gidx/gval of the general variables, block by block at each block's start."""
    for blk in prange(general.shape[0]):
        gw = general[blk]
        if gw == 0:
            continue
        k = starts[blk]
        for j in range(64):
            if (gw >> np.uint64(j)) & np.uint64(1):
                i = blk * 64 + j
                gidx[k] = i
                for w in range(4):
                    gval[k, w] = z[i, w]
                k += 1


def write_compact(z: np.ndarray, buf: np.ndarray, layout: WitnessLayout, known: np.ndarray | None = None) -> int:
    """Write the compact form of witness ``z`` into segment words ``buf`` laid out by
    ``layout`` (what a synthesis worker sends instead of a, b, c); returns the number of
    general values. ``known`` (uint8[num_vars]): the bits a witness kept apart from z (0 or 1;
    2 where the value is in z: engine.circuit.witness.witness_numba). CompactError (one line)
    if z does not fit the layout."""
    if z.dtype != np.uint64 or z.ndim != 2 or z.shape[1] != 4 or z.shape[0] != layout.num_vars:
        raise CompactError(f"a witness for this layout must be uint64[{layout.num_vars}, 4], "
                           f"got {z.dtype}{list(z.shape)}")
    if known is not None and (known.dtype != np.uint8 or known.shape != (layout.num_vars,)):
        raise CompactError(f"known bits for this layout must be uint8[{layout.num_vars}], "
                           f"got {known.dtype}{list(known.shape)}")
    header, bits, general, gidx, gval = layout.views(buf)
    counts = np.empty(layout.bitmap_words, np.int64)
    kept = _NONE_KNOWN if known is None else np.ascontiguousarray(known)
    whole = len(kept) // 8 * 8
    _pack_blocks(np.ascontiguousarray(z), kept, kept[:whole].view(np.uint64), ONE_MONT, bits, general, counts)
    starts = np.zeros(len(counts), np.int64)
    np.cumsum(counts[:-1], out=starts[1:])
    g = int(counts.sum())
    if g > layout.capacity:
        raise CompactError(f"the witness has {g} general values, its circuit's layout holds "
                           f"{layout.capacity}")
    _gather_general(z, general, starts, gidx, gval)
    header[:] = (SEGMENT_MAGIC, layout.num_vars, layout.capacity, g)
    return g


def read_compact(buf: np.ndarray, layout: WitnessLayout) -> CompactWitness:
    """The compact witness in segment words ``buf`` (views, no copy), its header checked
    against ``layout`` (CompactError, one line, on a mismatch)."""
    header, bits, general, gidx, gval = layout.views(buf)
    magic, nv, cap, g = (int(x) for x in header)
    if magic != SEGMENT_MAGIC or nv != layout.num_vars or cap != layout.capacity or g > cap:
        raise CompactError(f"the segment holds no compact witness of {layout.num_vars} variables "
                           f"(header {magic:#x}, {nv}, {cap}, {g})")
    nb = (nv + 7) // 8
    return CompactWitness(nv, bits.view(np.uint8)[:nb], general.view(np.uint8)[:nb],
                          gidx[:g], gval[:g])


def witness_rows(w: CompactWitness, start: int, stop: int) -> np.ndarray:
    """Rows start..stop of the full witness from its compact form (e.g. the public inputs)."""
    idx = np.arange(start, min(stop, w.num_vars))
    out = np.zeros((len(idx), 4), np.uint64)
    ones = (w.bits[idx >> 3] >> (idx & 7)) & 1
    out[ones.astype(bool)] = ONE_MONT
    if len(w.gidx):
        at = np.minimum(np.searchsorted(w.gidx, idx), len(w.gidx) - 1)
        hit = w.gidx[at] == idx
        out[hit] = w.gval[at[hit]]
    return out


@njit(cache=True, inline="always")
def _bit(bitmap, i):
    return (bitmap[i >> 3] >> (i & 7)) & 1


@njit(cache=True, parallel=True)
def _scatter(gidx, gval, z):
    for j in prange(gidx.shape[0]):
        for w in range(4):
            z[gidx[j], w] = gval[j, w]


@njit(cache=True, parallel=True)
def _ones(bits, general, one, z):
    """z_i = 1 where the value bit is set and the general bit is not (the device's expand)."""
    for i in prange(z.shape[0]):
        if _bit(bits, i) and not _bit(general, i):
            for w in range(4):
                z[i, w] = one[w]


@njit(cache=True, parallel=True)
def _eval_rows(rowptr, cols, cidx, coefs, bits, general, z, out):
    """One row per iteration: a 0/1 variable adds its coefficient or nothing; a general one
    adds, subtracts, or multiplies by its coefficient."""
    for r in prange(rowptr.shape[0] - 1):
        acc = FR_ZERO
        for k in range(np.int64(rowptr[r]), np.int64(rowptr[r + 1])):
            col = cols[k]
            ci = np.int64(cidx[k])
            if _bit(general, col):
                v = fr_load(z, col)
                if ci == 0:
                    acc = fr_add(acc, v)
                elif ci == 1:
                    acc = fr_sub(acc, v)
                else:
                    acc = fr_add(acc, fr_mul(fr_load(coefs, ci), v))
            elif _bit(bits, col):
                acc = fr_add(acc, fr_load(coefs, ci))
        fr_store(out, r, acc)


def _check_uploads(cm: dict[str, np.ndarray], cw: dict[str, np.ndarray], num_vars: int) -> None:
    want = {"coefs": np.uint64, "bits": np.uint8, "general": np.uint8, "gidx": np.int32, "gval": np.uint64}
    for m in "abc":
        want |= {f"{m}_rowptr": np.uint32, f"{m}_cols": np.int32, f"{m}_cidx": np.uint16}
    arrays = cm | cw
    for name, dt in want.items():
        a = arrays.get(name)
        if a is None or a.dtype != dt or not a.flags.c_contiguous:
            raise CompactError(f"compact array {name} is missing, not {np.dtype(dt).name} or not contiguous")
    nb = (num_vars + 7) // 8
    if len(cw["bits"]) != nb or len(cw["general"]) != nb:
        raise CompactError(f"the witness bitmaps must hold {nb} bytes for {num_vars} variables")
    for m in "abc":
        if len(cm[f"{m}_cols"]) and int(cm[f"{m}_cols"].max()) >= num_vars:
            raise CompactError(f"matrix {m.upper()} refers to more variables than the witness has")
        if len(cm[f"{m}_cidx"]) and int(cm[f"{m}_cidx"].max()) >= len(cm["coefs"]):
            raise CompactError(f"matrix {m.upper()} refers to a coefficient outside the table")


def _evaluate_into(cm: CompactR1CS, w: CompactWitness, outs: tuple[np.ndarray, ...]) -> np.ndarray:
    """z, with A·z, B·z, C·z written into ``outs`` (each uint64[constraints, 4], contiguous),
    from the uploaded arrays alone: the general values are scattered into a zeroed z as the
    device does, then each row reads the bitmaps, the table and that z."""
    if w.num_vars != cm.num_vars:
        raise CompactError(f"the witness has {w.num_vars} values, the circuit {cm.num_vars} variables")
    up_m, up_w = cm.arrays(), w.arrays()
    _check_uploads(up_m, up_w, cm.num_vars)
    z = np.zeros((cm.num_vars, 4), np.uint64)
    _scatter(up_w["gidx"], up_w["gval"], z)
    _ones(up_w["bits"], up_w["general"], ONE_MONT, z)
    for m, o in zip("abc", outs):
        _eval_rows(up_m[f"{m}_rowptr"], up_m[f"{m}_cols"], up_m[f"{m}_cidx"], up_m["coefs"],
                   up_w["bits"], up_w["general"], z, o)
    return z


def evaluate_compact(cm: CompactR1CS, w: CompactWitness) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """a = A·z, b = B·z, c = C·z from the uploaded arrays alone (the device's reference)."""
    outs = tuple(np.empty((cm.num_constraints, 4), np.uint64) for _ in range(3))
    _evaluate_into(cm, w, outs)
    return outs[0], outs[1], outs[2]


def evaluate_abc_host(cm: CompactR1CS, w: CompactWitness, abc: np.ndarray) -> np.ndarray:
    """The CPU backend's prover-side evaluation, the same capability as the device's
    (kernels/cuda/abc.py evaluate_abc): z, with A·z, B·z, C·z written straight into the rows of
    ``abc`` (uint64[3, domain, 4], contiguous), whose rows past the constraints are zeroed."""
    rows = cm.num_constraints
    if abc.dtype != np.uint64 or abc.ndim != 3 or abc.shape[0] != 3 or abc.shape[2] != 4 \
            or abc.shape[1] < rows or not abc.flags.c_contiguous:
        raise CompactError(f"the H input must be a contiguous uint64[3, >= {rows}, 4], "
                           f"got {abc.dtype}{list(abc.shape)}")
    abc[:, rows:] = 0
    return _evaluate_into(cm, w, (abc[0, :rows], abc[1, :rows], abc[2, :rows]))


def layout_of(buf: np.ndarray) -> WitnessLayout:
    """The layout a segment's header names (a prover reads the segment without knowing the
    circuit's capacity); CompactError if the words hold no compact witness or too few words."""
    flat = np.asarray(buf).reshape(-1)
    if flat.dtype != np.uint64 or len(flat) < HEADER_WORDS or int(flat[0]) != SEGMENT_MAGIC:
        raise CompactError("the segment holds no compact witness (no header)")
    layout = WitnessLayout(int(flat[1]), int(flat[2]))
    layout.views(flat)  # checks the length
    return layout


def public_inputs(w: CompactWitness, num_inputs: int) -> list[int]:
    """z[1:num_inputs] as integers, read from the compact witness (num_inputs counts the one)."""
    from kernels.cpu.convert import from_mont_fr

    return list(from_mont_fr(witness_rows(w, 1, num_inputs))) if num_inputs > 1 else []


def sizes(cm: CompactR1CS, w: CompactWitness | None = None) -> dict[str, float]:
    """Bytes of the compact forms against the plain ones, for reports."""
    rows = cm.num_constraints
    plain_m = PLAIN_BYTES_PER_NNZ * cm.nnz + 3 * 8 * (rows + 1)
    out: dict[str, float] = {
        "nnz": cm.nnz,
        "coefs": len(cm.coefs),
        "matrix_bytes": cm.nbytes(),
        "matrix_bytes_plain": plain_m,
        "bytes_per_nnz": cm.nbytes() / max(cm.nnz, 1),
        "bytes_per_nnz_plain": plain_m / max(cm.nnz, 1),
    }
    if w is not None:
        out |= {
            "witness_bytes": w.nbytes(),
            "witness_bytes_plain": 32 * w.num_vars,
            "general_values": len(w.gidx),
        }
    return out
