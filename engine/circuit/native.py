"""Native (out-of-circuit) hashing for building sectors and trees: Poseidon in batches with numba
over the storage layout, SHA-256 node hashing with hashlib (Filecoin's truncation)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numba import njit, prange

from engine.circuit.poseidon_native import permute, poseidon_tables
from engine.circuit.poseidon_params import ARITIES
from engine.circuit.sha256 import sha256_field
from kernels.cpu.convert import from_mont_fr, to_mont_fr


@njit(cache=True, parallel=True)
def _poseidon_batch(inp, out, arity, pool, meta):
    t = meta[arity, 0]
    none = np.empty((0, 4), np.uint64)
    for n in prange(inp.shape[0]):
        s = np.empty((t, 4), np.uint64)
        s[0] = pool[meta[arity, 5]]
        for i in range(arity):
            s[1 + i] = inp[n, i]
        permute(s, arity, pool, meta, none, 0, False)
        out[n] = s[1]


def poseidon_many_mont(inputs: np.ndarray) -> np.ndarray:
    """Neptune hashes of rows of Montgomery inputs uint64[n, arity, 4] → uint64[n, 4]."""
    if inputs.ndim != 3 or inputs.shape[2] != 4 or inputs.shape[1] not in ARITIES:
        raise ValueError(f"Poseidon batch needs uint64[n, arity in {ARITIES}, 4], got {inputs.shape}")
    pool, meta = poseidon_tables()
    out = np.empty((inputs.shape[0], 4), np.uint64)
    _poseidon_batch(np.ascontiguousarray(inputs, np.uint64), out, inputs.shape[1], pool, meta)
    return out


def poseidon_many(rows: Sequence[Sequence[int]]) -> list[int]:
    """Neptune hashes of rows of canonical ints (every row the same arity)."""
    if not rows:
        return []
    arity = len(rows[0])
    if any(len(r) != arity for r in rows):
        raise ValueError("Poseidon batch rows must all have the same arity")
    flat = to_mont_fr([x for r in rows for x in r]).reshape(len(rows), arity, 4)
    return from_mont_fr(poseidon_many_mont(flat))


def sha_node(left: int, right: int) -> int:
    """tree_d's node hash: SHA-256 of the two children's 32-byte LE encodings, truncated."""
    return sha256_field(left.to_bytes(32, "little") + right.to_bytes(32, "little"))


def sha_many(rows: Sequence[Sequence[int]]) -> list[int]:
    return [sha_node(*r) for r in rows]


def random_field_254(rng: np.random.Generator, n: int) -> list[int]:
    """n uniformly random ints below 2^254 (valid field elements, like truncated digests)."""
    raw = rng.integers(0, 2**63, size=(n, 4), dtype=np.int64).astype(np.uint64)
    raw[:, 0] |= rng.integers(0, 2, size=n, dtype=np.uint64) << np.uint64(63)
    raw[:, 1] |= rng.integers(0, 2, size=n, dtype=np.uint64) << np.uint64(63)
    raw[:, 2] |= rng.integers(0, 2, size=n, dtype=np.uint64) << np.uint64(63)
    # 254 bits are below r (2^254 < r < 2^255), so no value needs reducing
    return [int.from_bytes(r.astype("<u8").tobytes(), "little") & ((1 << 254) - 1) for r in raw]
