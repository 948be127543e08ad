"""The ChaCha block function as rand_chacha's ChaCha8Rng uses it (rand_core 0.6 block RNG):
the 32-byte seed is the key, words 12-13 a 64-bit block counter from 0, words 14-15 a zero
stream id; output is the blocks' u32 words in order, and ``next_u64`` joins two consecutive
words, the first as the low half.

Filecoin's bucket-sampling DRG seeds one such generator per node, so the block function is
numba (called from the parallel graph kernel); the Python wrappers serve tests and tools.
"""

from __future__ import annotations

import numpy as np
from numba import njit

_M32 = np.uint64(0xFFFFFFFF)
_SIGMA = np.array([0x61707865, 0x3320646E, 0x79622D32, 0x6B206574], dtype=np.uint64)


@njit(cache=True, inline="always")
def _rotl32(x: np.uint64, n: int) -> np.uint64:
    return ((x << np.uint64(n)) | (x >> np.uint64(32 - n))) & _M32


@njit(cache=True, inline="always")
def _quarter(s: np.ndarray, a: int, b: int, c: int, d: int) -> None:
    s[a] = (s[a] + s[b]) & _M32
    s[d] = _rotl32(s[d] ^ s[a], 16)
    s[c] = (s[c] + s[d]) & _M32
    s[b] = _rotl32(s[b] ^ s[c], 12)
    s[a] = (s[a] + s[b]) & _M32
    s[d] = _rotl32(s[d] ^ s[a], 8)
    s[c] = (s[c] + s[d]) & _M32
    s[b] = _rotl32(s[b] ^ s[c], 7)


@njit(cache=True)
def chacha_block(key: np.ndarray, counter: int, rounds: int, out: np.ndarray) -> None:
    """One 64-byte block: ``key`` uint64[8] holding the 8 LE key words, block ``counter``,
    ``rounds`` (8, 12 or 20); the 16 output words go into ``out`` (uint64[16], each < 2^32)."""
    x = np.empty(16, dtype=np.uint64)
    init = np.empty(16, dtype=np.uint64)
    for i in range(4):
        init[i] = _SIGMA[i]
    for i in range(8):
        init[4 + i] = key[i]
    c = np.uint64(counter)
    init[12] = c & _M32
    init[13] = c >> np.uint64(32)
    init[14] = np.uint64(0)
    init[15] = np.uint64(0)
    for i in range(16):
        x[i] = init[i]
    for _ in range(rounds // 2):
        _quarter(x, 0, 4, 8, 12)
        _quarter(x, 1, 5, 9, 13)
        _quarter(x, 2, 6, 10, 14)
        _quarter(x, 3, 7, 11, 15)
        _quarter(x, 0, 5, 10, 15)
        _quarter(x, 1, 6, 11, 12)
        _quarter(x, 2, 7, 8, 13)
        _quarter(x, 3, 4, 9, 14)
    for i in range(16):
        out[i] = (x[i] + init[i]) & _M32


def key_words(seed: bytes) -> np.ndarray:
    """The 32-byte seed as the 8 LE u32 key words (in uint64 slots) ``chacha_block`` takes."""
    if len(seed) != 32:
        raise ValueError(f"a ChaCha seed is 32 bytes, not {len(seed)}")
    return np.frombuffer(seed, dtype="<u4").astype(np.uint64)


def chacha_words(seed: bytes, n_words: int, rounds: int = 8) -> list[int]:
    """The first ``n_words`` u32 outputs of rand_chacha's ChaChaNRng seeded with ``seed``."""
    key = key_words(seed)
    out = np.empty(16, dtype=np.uint64)
    words: list[int] = []
    block = 0
    while len(words) < n_words:
        chacha_block(key, block, rounds, out)
        words.extend(int(w) for w in out)
        block += 1
    return words[:n_words]


def chacha_u64s(seed: bytes, n: int, rounds: int = 8) -> list[int]:
    """The first ``n`` ``next_u64`` outputs of rand_chacha's ChaChaNRng seeded with ``seed``."""
    w = chacha_words(seed, 2 * n, rounds)
    return [w[2 * i] | (w[2 * i + 1] << 32) for i in range(n)]
