"""Fr32 padding: how Filecoin fits raw bytes into field elements before sealing.

Every 127 raw bytes (1016 bits) become four 32-byte nodes: the block is read as one
little-endian bit stream and cut into four 254-bit runs; each run is one node's low 254 bits and
the node's two top bits are zero (fr32's ``Fr32Reader``). So 127 raw bytes pad to 128, every
node is below 2^254 < r, and a sector of S bytes holds S * 127 / 128 raw bytes.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

RAW_BLOCK = 127
"""Raw bytes per Fr32 block."""

PADDED_BLOCK = 128
"""Padded bytes per Fr32 block (four 32-byte nodes)."""

_LOW62 = np.uint64((1 << 62) - 1)


@njit(cache=True, inline="always")
def _bits_at(words, bit, k):
    """The 64 bits of ``words`` (LE u64 stream) starting at bit ``bit + 64 * k``."""
    pos = bit + 64 * k
    w = pos // 64
    s = pos % 64
    lo = words[w] >> np.uint64(s)
    if s == 0 or w + 1 >= words.shape[0]:
        return lo
    return lo | (words[w + 1] << np.uint64(64 - s))


@njit(cache=True, parallel=True)
def _pad(raw, out):
    for b in prange(raw.shape[0]):
        words = raw[b]
        for j in range(4):
            for k in range(4):
                v = _bits_at(words, 254 * j, k)
                if k == 3:
                    v &= _LOW62
                out[b, 4 * j + k] = v


@njit(cache=True, parallel=True)
def _unpad(padded, out):
    for b in prange(padded.shape[0]):
        src = padded[b]
        dst = out[b]
        for i in range(16):
            dst[i] = np.uint64(0)
        for j in range(4):
            base = 254 * j
            for k in range(4):
                v = src[4 * j + k]
                nbits = 62 if k == 3 else 64
                if nbits < 64:
                    v &= _LOW62
                pos = base + 64 * k
                w = pos // 64
                s = pos % 64
                dst[w] |= v << np.uint64(s)
                if s and w + 1 < 16 and s + nbits > 64:
                    dst[w + 1] |= v >> np.uint64(64 - s)


@njit(cache=True)
def _first_high_bits(padded):
    """Index of the first node (of the whole padded stream) whose two top bits are set, or -1."""
    for b in range(padded.shape[0]):
        for j in range(4):
            if padded[b, 4 * j + 3] >> np.uint64(62):
                return 4 * b + j
    return -1


def fr32_pad(data: bytes | np.ndarray) -> bytes:
    """Fr32 padding of raw bytes whose length is a multiple of 127 (each 127 → 128)."""
    raw = np.frombuffer(data, np.uint8) if isinstance(data, (bytes, bytearray, memoryview)) else np.asarray(data, np.uint8)
    return fr32_pad_array(raw).tobytes()


def fr32_pad_array(raw: np.ndarray) -> np.ndarray:
    """Fr32 padding of uint8[127 * k] → the sector's nodes uint8[4 * k, 32]."""
    flat = np.ascontiguousarray(raw, np.uint8).reshape(-1)
    if flat.size % RAW_BLOCK:
        raise ValueError(f"Fr32 padding needs a multiple of {RAW_BLOCK} bytes, got {flat.size}")
    blocks = flat.size // RAW_BLOCK
    wide = np.zeros((blocks, PADDED_BLOCK), np.uint8)
    wide[:, :RAW_BLOCK] = flat.reshape(blocks, RAW_BLOCK)
    out = np.empty((blocks, 16), np.uint64)
    _pad(wide.view("<u8").astype(np.uint64, copy=False), out)
    return out.astype("<u8", copy=False).view(np.uint8).reshape(4 * blocks, 32)


def fr32_unpad(padded: bytes | np.ndarray) -> bytes:
    """The raw bytes of Fr32-padded data (a multiple of 128 bytes; each 128 → 127).
    ValueError if a node has either of its two top bits set (no padding makes such a node)."""
    arr = np.frombuffer(padded, np.uint8) if isinstance(padded, (bytes, bytearray, memoryview)) else np.asarray(padded, np.uint8)
    flat = np.ascontiguousarray(arr).reshape(-1)
    if flat.size % PADDED_BLOCK:
        raise ValueError(f"Fr32 unpadding needs a multiple of {PADDED_BLOCK} bytes, got {flat.size}")
    words = flat.view("<u8").astype(np.uint64, copy=False).reshape(-1, 16)
    bad = _first_high_bits(words)
    if bad >= 0:
        raise ValueError(f"node {bad} has its two top bits set: not Fr32-padded data")
    out = np.empty_like(words)
    _unpad(words, out)
    return out.astype("<u8", copy=False).view(np.uint8).reshape(-1, PADDED_BLOCK)[:, :RAW_BLOCK].tobytes()


def unpadded_size(sector_size: int) -> int:
    """Raw bytes a sector of ``sector_size`` padded bytes holds (Filecoin's UnpaddedBytesAmount)."""
    if sector_size % PADDED_BLOCK:
        raise ValueError(f"a padded size is a multiple of {PADDED_BLOCK} bytes, not {sector_size}")
    return sector_size // PADDED_BLOCK * RAW_BLOCK
