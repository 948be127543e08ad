"""The two hashes of a sealed sector over its byte form: SHA-256 (numba compression, for labels
and tree_d) truncated to a field element as Filecoin truncates, and neptune's Poseidon on
32-byte little-endian field elements (the numba batch of engine/circuit/native.py).

A node is 32 bytes, a canonical field element little-endian (Filecoin's ``Domain`` form).
Filecoin turns a SHA-256 digest into one by clearing the two top bits of byte 31
(``trim_to_fr32``, ``bytes_into_fr_repr_safe``); every SHA-256 output here is so truncated.

Filecoin's trees and column hashes use Poseidon arities 2 (binary trees, column of 2 layers,
comm_r), 8 (the oct base and sub trees) and 11 (column of 11 layers); all three have neptune's
constants in engine/circuit/poseidon_params.py, so no other arity is needed.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange, uint32

from engine.circuit.poseidon_params import ARITIES
from engine.circuit.sha256 import IV, K
from engine.seal.poseidon_sparse import poseidon_sparse_mont
from kernels.cpu.fr import fr_from_mont, fr_to_mont

NODE_BYTES = 32

_K = np.array(K, np.uint32)  # SHA-256's round constants and IV, as engine/circuit/sha256.py holds them
SHA256_IV = np.array(IV, np.uint32)

R_LIMBS = np.array(
    [0xFFFFFFFF00000001, 0x53BDA402FFFE5BFE, 0x3339D80809A1D805, 0x73EDA753299D7D48], np.uint64
)
"""The modulus r of Fr as four little-endian u64 limbs."""


@njit(cache=True, inline="always")
def _rotr(x, n):
    return uint32((x >> uint32(n)) | (x << uint32(32 - n)))


@njit(cache=True)
def compress(state, w):
    """One SHA-256 compression of ``state`` (uint32[8]) in place, with the block's 16
    big-endian words already in ``w[0:16]`` (uint32[64]; words 16.. are overwritten)."""
    for i in range(16, 64):
        x = w[i - 15]
        y = w[i - 2]
        s0 = _rotr(x, 7) ^ _rotr(x, 18) ^ uint32(x >> uint32(3))
        s1 = _rotr(y, 17) ^ _rotr(y, 19) ^ uint32(y >> uint32(10))
        w[i] = uint32(w[i - 16] + s0 + w[i - 7] + s1)
    a = state[0]
    b = state[1]
    c = state[2]
    d = state[3]
    e = state[4]
    f = state[5]
    g = state[6]
    h = state[7]
    for i in range(64):
        s1 = _rotr(e, 6) ^ _rotr(e, 11) ^ _rotr(e, 25)
        ch = uint32((e & f) ^ (~e & g))
        t1 = uint32(h + s1 + ch + _K[i] + w[i])
        s0 = _rotr(a, 2) ^ _rotr(a, 13) ^ _rotr(a, 22)
        mj = uint32((a & b) ^ (a & c) ^ (b & c))
        t2 = uint32(s0 + mj)
        h = g
        g = f
        f = e
        e = uint32(d + t1)
        d = c
        c = b
        b = a
        a = uint32(t1 + t2)
    state[0] = uint32(state[0] + a)
    state[1] = uint32(state[1] + b)
    state[2] = uint32(state[2] + c)
    state[3] = uint32(state[3] + d)
    state[4] = uint32(state[4] + e)
    state[5] = uint32(state[5] + f)
    state[6] = uint32(state[6] + g)
    state[7] = uint32(state[7] + h)


@njit(cache=True, inline="always")
def load_words(w, at, src, off):
    """Eight big-endian 32-bit words of the 32 bytes ``src[off:off + 32]`` into ``w[at:at + 8]``."""
    for k in range(8):
        j = off + 4 * k
        w[at + k] = uint32(
            (uint32(src[j]) << uint32(24))
            | (uint32(src[j + 1]) << uint32(16))
            | (uint32(src[j + 2]) << uint32(8))
            | uint32(src[j + 3])
        )


@njit(cache=True, inline="always")
def store_digest(state, out, off, trim):
    """The digest of ``state`` (uint32[8]) as 32 bytes into ``out[off:off + 32]``; with ``trim``, byte 31's
    two top bits cleared (Filecoin's digest → field element)."""
    for k in range(8):
        v = state[k]
        out[off + 4 * k] = np.uint8(v >> uint32(24))
        out[off + 4 * k + 1] = np.uint8((v >> uint32(16)) & uint32(0xFF))
        out[off + 4 * k + 2] = np.uint8((v >> uint32(8)) & uint32(0xFF))
        out[off + 4 * k + 3] = np.uint8(v & uint32(0xFF))
    if trim:
        out[off + 31] &= np.uint8(0x3F)


@njit(cache=True, parallel=True)
def _sha256_rows(msgs, lengths, out, trim):
    for r in prange(msgs.shape[0]):
        length = lengths[r]
        total = (length + 9 + 63) // 64 * 64
        w = np.empty(64, np.uint32)
        state = SHA256_IV.copy()
        block = np.zeros(64, np.uint8)
        for start in range(0, total, 64):
            for j in range(64):
                p = start + j
                if p < length:
                    block[j] = msgs[r, p]
                elif p == length:
                    block[j] = np.uint8(0x80)
                elif p >= total - 8:
                    block[j] = np.uint8(((8 * length) >> (8 * (total - 1 - p))) & 0xFF)
                else:
                    block[j] = np.uint8(0)
            load_words(w, 0, block, 0)
            load_words(w, 8, block, 32)
            compress(state, w)
        store_digest(state, out[r], 0, trim)


def sha256_rows(msgs: np.ndarray, trim: bool = False, lengths: np.ndarray | None = None) -> np.ndarray:
    """SHA-256 of each row of uint8[n, width] → uint8[n, 32]: the whole row, or its first
    ``lengths[r]`` bytes (messages of different lengths in one batch); with ``trim`` each digest
    is truncated to a field element as Filecoin truncates."""
    m = np.ascontiguousarray(msgs, np.uint8)
    if m.ndim != 2:
        raise ValueError(f"SHA-256 rows need uint8[n, length], got shape {m.shape}")
    if lengths is None:
        lens = np.full(m.shape[0], m.shape[1], np.int64)
    else:
        lens = np.ascontiguousarray(lengths, np.int64)
        if lens.shape != (m.shape[0],) or (len(lens) and (lens.min() < 0 or lens.max() > m.shape[1])):
            raise ValueError(f"SHA-256 rows: lengths must be n = {m.shape[0]} values in 0..{m.shape[1]}")
    out = np.empty((m.shape[0], 32), np.uint8)
    _sha256_rows(m, lens, out, trim)
    return out


# the padding block of a 64-byte message: 0x80, zeros, bit length 512
_PAD64 = np.zeros(16, np.uint32)
_PAD64[0] = 0x80000000
_PAD64[15] = 512


@njit(cache=True, parallel=True)
def _sha256_pairs(nodes, out):
    # Scratch per chunk of pairs, not per pair: two allocations and frees per pair (each with
    # its meminfo's atomic reference count, see engine/circuit/witness.py's comment on its op
    # loop) cost about a tenth of the two compressions.
    n = out.shape[0]
    chunk = 1024
    for c in prange((n + chunk - 1) // chunk):
        w = np.empty(64, np.uint32)
        state = np.empty(8, np.uint32)
        for r in range(c * chunk, min(n, (c + 1) * chunk)):
            state[:] = SHA256_IV
            load_words(w, 0, nodes[2 * r], 0)
            load_words(w, 8, nodes[2 * r + 1], 0)
            compress(state, w)
            w[:16] = _PAD64
            compress(state, w)
            store_digest(state, out[r], 0, True)


def sha256_pairs(nodes: np.ndarray) -> np.ndarray:
    """tree_d's node hash over consecutive pairs of uint8[2n, 32] → uint8[n, 32]: SHA-256 of the
    64 bytes left || right, truncated (filecoin-hashers' Sha256 ``node``; also piece_hash)."""
    a = np.ascontiguousarray(nodes, np.uint8)
    if a.ndim != 2 or a.shape[1] != NODE_BYTES or a.shape[0] % 2:
        raise ValueError(f"SHA-256 pairs need uint8[2n, 32], got shape {a.shape}")
    out = np.empty((a.shape[0] // 2, NODE_BYTES), np.uint8)
    _sha256_pairs(a, out)
    return out


def sha256_trunc(data: bytes) -> bytes:
    """SHA-256 of ``data`` truncated to a field element (32 bytes LE, top two bits clear)."""
    return bytes(sha256_rows(np.frombuffer(data, np.uint8).reshape(1, -1), trim=True)[0])


@njit(cache=True)
def _not_canonical(limbs):
    """Index of the first row of uint64[n, 4] (LE) that is not below r, else -1."""
    for i in range(limbs.shape[0]):
        for k in range(3, -1, -1):
            if limbs[i, k] < R_LIMBS[k]:
                break
            if limbs[i, k] > R_LIMBS[k] or k == 0:
                return i
    return -1


@njit(cache=True, parallel=True)
def _to_mont(limbs, out):
    for i in prange(limbs.shape[0]):
        v = fr_to_mont((limbs[i, 0], limbs[i, 1], limbs[i, 2], limbs[i, 3]))
        out[i, 0] = v[0]
        out[i, 1] = v[1]
        out[i, 2] = v[2]
        out[i, 3] = v[3]


@njit(cache=True, parallel=True)
def _from_mont(mont, out):
    for i in prange(mont.shape[0]):
        v = fr_from_mont((mont[i, 0], mont[i, 1], mont[i, 2], mont[i, 3]))
        out[i, 0] = v[0]
        out[i, 1] = v[1]
        out[i, 2] = v[2]
        out[i, 3] = v[3]


def canonical_limbs(nodes: np.ndarray) -> np.ndarray:
    """uint8[n, 32] canonical LE field elements as uint64[n, 4] LE limbs (not Montgomery);
    ValueError for a node that is not below r (Filecoin's ``from_repr`` refuses it too)."""
    a = np.ascontiguousarray(nodes, np.uint8)
    if a.ndim != 2 or a.shape[1] != NODE_BYTES:
        raise ValueError(f"nodes need uint8[n, 32], got shape {a.shape}")
    limbs = a.view("<u8").astype(np.uint64)
    bad = _not_canonical(limbs)
    if bad >= 0:
        raise ValueError(f"node {bad} is not a canonical field element (not below r)")
    return limbs


def nodes_to_mont(nodes: np.ndarray) -> np.ndarray:
    """uint8[n, 32] canonical LE field elements → Fr storage uint64[n, 4] (Montgomery);
    ValueError for a node that is not below r."""
    limbs = canonical_limbs(nodes)
    out = np.empty_like(limbs)
    _to_mont(limbs, out)
    return out


def mont_to_nodes(mont: np.ndarray) -> np.ndarray:
    """Fr storage uint64[n, 4] (Montgomery) → uint8[n, 32] canonical little-endian bytes."""
    m = np.ascontiguousarray(mont, np.uint64)
    out = np.empty_like(m)
    _from_mont(m, out)
    return out.astype("<u8").view(np.uint8).reshape(m.shape[0], NODE_BYTES)


def poseidon_mont_groups(mont: np.ndarray, arity: int) -> np.ndarray:
    """Neptune's hash of each consecutive group of ``arity`` Montgomery elements:
    uint64[k * arity, 4] → uint64[k, 4]."""
    if arity not in ARITIES:
        raise ValueError(f"Poseidon arity {arity} is not one Filecoin uses here ({ARITIES})")
    if mont.shape[0] % arity:
        raise ValueError(f"{mont.shape[0]} elements do not split into groups of {arity}")
    return poseidon_sparse_mont(mont.reshape(-1, arity, 4))


def poseidon_nodes(nodes: np.ndarray, arity: int) -> np.ndarray:
    """Neptune's hash of each consecutive group of ``arity`` nodes: uint8[k * arity, 32] →
    uint8[k, 32] (filecoin-hashers' Poseidon ``multi_node`` / ``hash2`` on Domain bytes)."""
    return mont_to_nodes(poseidon_mont_groups(nodes_to_mont(nodes), arity))


def poseidon_bytes(parts: list[bytes]) -> bytes:
    """Neptune's hash of a few 32-byte nodes (their count is the arity)."""
    if any(len(p) != NODE_BYTES for p in parts):
        raise ValueError("Poseidon inputs are 32-byte nodes")
    rows = np.frombuffer(b"".join(parts), np.uint8).reshape(len(parts), NODE_BYTES)
    return bytes(poseidon_nodes(rows, len(parts))[0])
