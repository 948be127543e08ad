"""The Feistel permutation of Filecoin's SDR expander (storage-proofs-core crypto/feistel.rs):
three rounds over an index split into two halves of ``half_bits`` each, the round function the
first 8 bytes (big-endian) of BLAKE2b-512 over ``right || key`` (each a big-endian u64), masked
to a half; values outside ``[0, n)`` are permuted again (cycle walking).

BLAKE2b here is the one-block case only (a 16-byte message), in numba, because the expander
calls it about 24 times per node of a sector.
"""

from __future__ import annotations

import numpy as np
from numba import njit

ROUNDS = 3

_M64 = np.uint64(0xFFFFFFFFFFFFFFFF)
_Z = np.uint64(0)
_IV = np.array(
    [
        0x6A09E667F3BCC908,
        0xBB67AE8584CAA73B,
        0x3C6EF372FE94F82B,
        0xA54FF53A5F1D36F1,
        0x510E527FADE682D1,
        0x9B05688C2B3E6C1F,
        0x1F83D9ABFB41BD6B,
        0x5BE0CD19137E2179,
    ],
    dtype=np.uint64,
)
# BLAKE2b's message schedule (sigma), which blake2b_16's written-out rounds apply.
_PERM = np.array(
    [
        [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15],
        [14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3],
        [11, 8, 12, 0, 5, 2, 15, 13, 10, 14, 3, 6, 7, 1, 9, 4],
        [7, 9, 3, 1, 13, 12, 11, 14, 2, 6, 5, 10, 4, 0, 15, 8],
        [9, 0, 5, 7, 2, 4, 10, 15, 14, 1, 11, 12, 6, 8, 3, 13],
        [2, 12, 6, 10, 0, 11, 8, 3, 4, 13, 7, 5, 15, 14, 1, 9],
        [12, 5, 1, 15, 14, 13, 4, 10, 0, 7, 6, 3, 9, 2, 8, 11],
        [13, 11, 7, 14, 12, 1, 3, 9, 5, 0, 15, 4, 8, 6, 2, 10],
        [6, 15, 14, 9, 11, 3, 0, 8, 12, 2, 13, 7, 1, 4, 10, 5],
        [10, 2, 8, 4, 7, 6, 1, 5, 15, 11, 9, 14, 3, 12, 13, 0],
    ],
    dtype=np.int64,
)


@njit(cache=True, inline="always")
def _rotr64(x: np.uint64, n: int) -> np.uint64:
    return (x >> np.uint64(n)) | (x << np.uint64(64 - n))


@njit(cache=True, inline="always")
def _g(a: np.uint64, b: np.uint64, c: np.uint64, d: np.uint64, x: np.uint64,
       y: np.uint64) -> tuple[np.uint64, np.uint64, np.uint64, np.uint64]:
    a = a + b + x
    d = _rotr64(d ^ a, 32)
    c = c + d
    b = _rotr64(b ^ c, 24)
    a = a + b + y
    d = _rotr64(d ^ a, 16)
    c = c + d
    b = _rotr64(b ^ c, 63)
    return a, b, c, d


@njit(cache=True)
def blake2b_16(m0: np.uint64, m1: np.uint64) -> np.uint64:
    """The first LE u64 word of BLAKE2b-512 (no key) of the 16-byte message whose LE u64 words
    are ``m0`` and ``m1``.

    The 12 rounds are written out with the message schedule (``_PERM``) already applied: only
    words 0 and 1 of the block are non-zero, so each mix takes ``m0``, ``m1`` or zero. Scalars
    only, so the expander's hot path allocates nothing."""
    h0 = _IV[0] ^ np.uint64(0x01010040)
    v0, v1, v2, v3, v4, v5, v6, v7 = h0, _IV[1], _IV[2], _IV[3], _IV[4], _IV[5], _IV[6], _IV[7]
    v8, v9, v10, v11 = _IV[0], _IV[1], _IV[2], _IV[3]
    v12, v13 = _IV[4] ^ np.uint64(16), _IV[5]  # t = 16 bytes
    v14, v15 = _IV[6] ^ _M64, _IV[7]  # the last block
    # round 0
    v0, v4, v8, v12 = _g(v0, v4, v8, v12, m0, m1)
    v1, v5, v9, v13 = _g(v1, v5, v9, v13, _Z, _Z)
    v2, v6, v10, v14 = _g(v2, v6, v10, v14, _Z, _Z)
    v3, v7, v11, v15 = _g(v3, v7, v11, v15, _Z, _Z)
    v0, v5, v10, v15 = _g(v0, v5, v10, v15, _Z, _Z)
    v1, v6, v11, v12 = _g(v1, v6, v11, v12, _Z, _Z)
    v2, v7, v8, v13 = _g(v2, v7, v8, v13, _Z, _Z)
    v3, v4, v9, v14 = _g(v3, v4, v9, v14, _Z, _Z)
    # round 1
    v0, v4, v8, v12 = _g(v0, v4, v8, v12, _Z, _Z)
    v1, v5, v9, v13 = _g(v1, v5, v9, v13, _Z, _Z)
    v2, v6, v10, v14 = _g(v2, v6, v10, v14, _Z, _Z)
    v3, v7, v11, v15 = _g(v3, v7, v11, v15, _Z, _Z)
    v0, v5, v10, v15 = _g(v0, v5, v10, v15, m1, _Z)
    v1, v6, v11, v12 = _g(v1, v6, v11, v12, m0, _Z)
    v2, v7, v8, v13 = _g(v2, v7, v8, v13, _Z, _Z)
    v3, v4, v9, v14 = _g(v3, v4, v9, v14, _Z, _Z)
    # round 2
    v0, v4, v8, v12 = _g(v0, v4, v8, v12, _Z, _Z)
    v1, v5, v9, v13 = _g(v1, v5, v9, v13, _Z, m0)
    v2, v6, v10, v14 = _g(v2, v6, v10, v14, _Z, _Z)
    v3, v7, v11, v15 = _g(v3, v7, v11, v15, _Z, _Z)
    v0, v5, v10, v15 = _g(v0, v5, v10, v15, _Z, _Z)
    v1, v6, v11, v12 = _g(v1, v6, v11, v12, _Z, _Z)
    v2, v7, v8, v13 = _g(v2, v7, v8, v13, _Z, m1)
    v3, v4, v9, v14 = _g(v3, v4, v9, v14, _Z, _Z)
    # round 3
    v0, v4, v8, v12 = _g(v0, v4, v8, v12, _Z, _Z)
    v1, v5, v9, v13 = _g(v1, v5, v9, v13, _Z, m1)
    v2, v6, v10, v14 = _g(v2, v6, v10, v14, _Z, _Z)
    v3, v7, v11, v15 = _g(v3, v7, v11, v15, _Z, _Z)
    v0, v5, v10, v15 = _g(v0, v5, v10, v15, _Z, _Z)
    v1, v6, v11, v12 = _g(v1, v6, v11, v12, _Z, _Z)
    v2, v7, v8, v13 = _g(v2, v7, v8, v13, _Z, m0)
    v3, v4, v9, v14 = _g(v3, v4, v9, v14, _Z, _Z)
    # round 4
    v0, v4, v8, v12 = _g(v0, v4, v8, v12, _Z, m0)
    v1, v5, v9, v13 = _g(v1, v5, v9, v13, _Z, _Z)
    v2, v6, v10, v14 = _g(v2, v6, v10, v14, _Z, _Z)
    v3, v7, v11, v15 = _g(v3, v7, v11, v15, _Z, _Z)
    v0, v5, v10, v15 = _g(v0, v5, v10, v15, _Z, m1)
    v1, v6, v11, v12 = _g(v1, v6, v11, v12, _Z, _Z)
    v2, v7, v8, v13 = _g(v2, v7, v8, v13, _Z, _Z)
    v3, v4, v9, v14 = _g(v3, v4, v9, v14, _Z, _Z)
    # round 5
    v0, v4, v8, v12 = _g(v0, v4, v8, v12, _Z, _Z)
    v1, v5, v9, v13 = _g(v1, v5, v9, v13, _Z, _Z)
    v2, v6, v10, v14 = _g(v2, v6, v10, v14, m0, _Z)
    v3, v7, v11, v15 = _g(v3, v7, v11, v15, _Z, _Z)
    v0, v5, v10, v15 = _g(v0, v5, v10, v15, _Z, _Z)
    v1, v6, v11, v12 = _g(v1, v6, v11, v12, _Z, _Z)
    v2, v7, v8, v13 = _g(v2, v7, v8, v13, _Z, _Z)
    v3, v4, v9, v14 = _g(v3, v4, v9, v14, m1, _Z)
    # round 6
    v0, v4, v8, v12 = _g(v0, v4, v8, v12, _Z, _Z)
    v1, v5, v9, v13 = _g(v1, v5, v9, v13, m1, _Z)
    v2, v6, v10, v14 = _g(v2, v6, v10, v14, _Z, _Z)
    v3, v7, v11, v15 = _g(v3, v7, v11, v15, _Z, _Z)
    v0, v5, v10, v15 = _g(v0, v5, v10, v15, m0, _Z)
    v1, v6, v11, v12 = _g(v1, v6, v11, v12, _Z, _Z)
    v2, v7, v8, v13 = _g(v2, v7, v8, v13, _Z, _Z)
    v3, v4, v9, v14 = _g(v3, v4, v9, v14, _Z, _Z)
    # round 7
    v0, v4, v8, v12 = _g(v0, v4, v8, v12, _Z, _Z)
    v1, v5, v9, v13 = _g(v1, v5, v9, v13, _Z, _Z)
    v2, v6, v10, v14 = _g(v2, v6, v10, v14, _Z, m1)
    v3, v7, v11, v15 = _g(v3, v7, v11, v15, _Z, _Z)
    v0, v5, v10, v15 = _g(v0, v5, v10, v15, _Z, m0)
    v1, v6, v11, v12 = _g(v1, v6, v11, v12, _Z, _Z)
    v2, v7, v8, v13 = _g(v2, v7, v8, v13, _Z, _Z)
    v3, v4, v9, v14 = _g(v3, v4, v9, v14, _Z, _Z)
    # round 8
    v0, v4, v8, v12 = _g(v0, v4, v8, v12, _Z, _Z)
    v1, v5, v9, v13 = _g(v1, v5, v9, v13, _Z, _Z)
    v2, v6, v10, v14 = _g(v2, v6, v10, v14, _Z, _Z)
    v3, v7, v11, v15 = _g(v3, v7, v11, v15, m0, _Z)
    v0, v5, v10, v15 = _g(v0, v5, v10, v15, _Z, _Z)
    v1, v6, v11, v12 = _g(v1, v6, v11, v12, _Z, _Z)
    v2, v7, v8, v13 = _g(v2, v7, v8, v13, m1, _Z)
    v3, v4, v9, v14 = _g(v3, v4, v9, v14, _Z, _Z)
    # round 9
    v0, v4, v8, v12 = _g(v0, v4, v8, v12, _Z, _Z)
    v1, v5, v9, v13 = _g(v1, v5, v9, v13, _Z, _Z)
    v2, v6, v10, v14 = _g(v2, v6, v10, v14, _Z, _Z)
    v3, v7, v11, v15 = _g(v3, v7, v11, v15, m1, _Z)
    v0, v5, v10, v15 = _g(v0, v5, v10, v15, _Z, _Z)
    v1, v6, v11, v12 = _g(v1, v6, v11, v12, _Z, _Z)
    v2, v7, v8, v13 = _g(v2, v7, v8, v13, _Z, _Z)
    v3, v4, v9, v14 = _g(v3, v4, v9, v14, _Z, m0)
    # round 10
    v0, v4, v8, v12 = _g(v0, v4, v8, v12, m0, m1)
    v1, v5, v9, v13 = _g(v1, v5, v9, v13, _Z, _Z)
    v2, v6, v10, v14 = _g(v2, v6, v10, v14, _Z, _Z)
    v3, v7, v11, v15 = _g(v3, v7, v11, v15, _Z, _Z)
    v0, v5, v10, v15 = _g(v0, v5, v10, v15, _Z, _Z)
    v1, v6, v11, v12 = _g(v1, v6, v11, v12, _Z, _Z)
    v2, v7, v8, v13 = _g(v2, v7, v8, v13, _Z, _Z)
    v3, v4, v9, v14 = _g(v3, v4, v9, v14, _Z, _Z)
    # round 11
    v0, v4, v8, v12 = _g(v0, v4, v8, v12, _Z, _Z)
    v1, v5, v9, v13 = _g(v1, v5, v9, v13, _Z, _Z)
    v2, v6, v10, v14 = _g(v2, v6, v10, v14, _Z, _Z)
    v3, v7, v11, v15 = _g(v3, v7, v11, v15, _Z, _Z)
    v0, v5, v10, v15 = _g(v0, v5, v10, v15, m1, _Z)
    v1, v6, v11, v12 = _g(v1, v6, v11, v12, m0, _Z)
    v2, v7, v8, v13 = _g(v2, v7, v8, v13, _Z, _Z)
    v3, v4, v9, v14 = _g(v3, v4, v9, v14, _Z, _Z)
    return h0 ^ v0 ^ v8


@njit(cache=True, inline="always")
def _bswap64(x: np.uint64) -> np.uint64:
    r = np.uint64(0)
    for _ in range(8):
        r = (r << np.uint64(8)) | (x & np.uint64(0xFF))
        x = x >> np.uint64(8)
    return r


@njit(cache=True, inline="always")
def _round_fn(right: np.uint64, key: np.uint64, right_mask: np.uint64) -> np.uint64:
    # The message is right then key, each big-endian; the result is the digest's first
    # 8 bytes read big-endian.
    return _bswap64(blake2b_16(_bswap64(right), _bswap64(key))) & right_mask


def precompute(num_elements: int) -> tuple[int, int, int]:
    """(left_mask, right_mask, half_bits): the smallest power of 4 >= ``num_elements`` split in
    two halves (Filecoin's ``feistel::precompute``)."""
    next_pow4, log4 = 4, 1
    while next_pow4 < num_elements:
        next_pow4 *= 4
        log4 += 1
    return ((1 << log4) - 1) << log4, (1 << log4) - 1, log4


@njit(cache=True)
def _encode(index: np.uint64, keys: np.ndarray, left_mask: np.uint64, right_mask: np.uint64,
            half_bits: np.uint64) -> np.uint64:
    left = (index & left_mask) >> half_bits
    right = index & right_mask
    for i in range(ROUNDS):
        left, right = right, left ^ _round_fn(right, keys[i], right_mask)
    return (left << half_bits) | right


@njit(cache=True)
def _decode(index: np.uint64, keys: np.ndarray, left_mask: np.uint64, right_mask: np.uint64,
            half_bits: np.uint64) -> np.uint64:
    left = (index & left_mask) >> half_bits
    right = index & right_mask
    for i in range(ROUNDS - 1, -1, -1):
        left, right = right ^ _round_fn(left, keys[i], right_mask), left
    return (left << half_bits) | right


@njit(cache=True)
def permute_nb(num_elements: np.uint64, index: np.uint64, keys: np.ndarray,
               left_mask: np.uint64, right_mask: np.uint64, half_bits: np.uint64) -> np.uint64:
    """``feistel::permute``: encode, and encode again while the result is >= num_elements."""
    u = _encode(index, keys, left_mask, right_mask, half_bits)
    while u >= num_elements:
        u = _encode(u, keys, left_mask, right_mask, half_bits)
    return u


@njit(cache=True)
def invert_permute_nb(num_elements: np.uint64, index: np.uint64, keys: np.ndarray,
                      left_mask: np.uint64, right_mask: np.uint64,
                      half_bits: np.uint64) -> np.uint64:
    """``feistel::invert_permute``: the inverse of ``permute_nb`` on ``[0, num_elements)``."""
    u = _decode(index, keys, left_mask, right_mask, half_bits)
    while u >= num_elements:
        u = _decode(u, keys, left_mask, right_mask, half_bits)
    return u


def _args(num_elements: int, keys: tuple[int, ...]) -> tuple[np.ndarray, np.uint64, np.uint64,
                                                             np.uint64]:
    lm, rm, hb = precompute(num_elements)
    return np.array(keys, dtype=np.uint64), np.uint64(lm), np.uint64(rm), np.uint64(hb)


def permute(num_elements: int, index: int, keys: tuple[int, ...]) -> int:
    """Filecoin's Feistel permutation of ``index`` in ``[0, num_elements)`` under ``keys``."""
    k, lm, rm, hb = _args(num_elements, keys)
    return int(permute_nb(np.uint64(num_elements), np.uint64(index), k, lm, rm, hb))


def invert_permute(num_elements: int, index: int, keys: tuple[int, ...]) -> int:
    """The inverse of ``permute``."""
    k, lm, rm, hb = _args(num_elements, keys)
    return int(invert_permute_nb(np.uint64(num_elements), np.uint64(index), k, lm, rm, hb))
