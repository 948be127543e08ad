"""neptune's plain Poseidon constants for any arity, generated the way neptune 11 generates them.

sealtop ships neptune's constants for the arities its own circuits hash (2, 8 and 11, in
engine/circuit/poseidon_neptune_bls12_381.json). Filecoin's PoR gadgets are generic over the
tree arity, and its circuit tests use arity 4 as well (por_circuit.rs' 4-ary trees, neptune's
``Poseidon_4`` of 377 constraints), so this module derives a ``PoseidonConstants`` for any arity
from neptune's own rules:

- the round numbers: ``round_numbers.rs`` (engine/seal/circuit_count.py's
  :func:`~engine.seal.circuit_count.poseidon_round_numbers`, in f32 as neptune computes them);
- the round constants: ``round_constants.rs`` ``generate_constants``, the Grain LFSR in
  self-shrinking mode seeded with (field 1, S-box 1, 255 bits, t, R_F, R_P) and 30 ones, 160 bits
  discarded, candidates of 255 bits read most significant bit first and kept when below r;
- the MDS matrix: ``mds.rs`` ``generate_mds``, the Cauchy matrix 1 / (x_i + y_j) with
  x_i = i and y_j = t + j;
- the Merkle-tree domain tag: ``hash_type.rs`` 2^arity - 1.

The generator is checked against the shipped constants (which also equal the reference
``create_rcs_grain.sage`` output neptune keeps in parameters/) and against neptune's
``hash_values`` vectors, arity 4 included.
"""

from __future__ import annotations

from functools import cache

import numpy as np

from engine.circuit.poseidon_params import ARITIES, PoseidonParams, poseidon_params
from engine.seal.circuit_count import poseidon_round_numbers
from kernels.constants import R_MOD

FIELD_BITS = 255
"""``PrimeField::NUM_BITS`` of BLS12-381's Fr: neptune seeds Grain with it and reads candidates
of this many bits."""

MAX_ARITY = 36
"""neptune implements ``Arity`` for U1..U36."""

_TAPS = (18, 29, 42, 57, 67, 80)
"""Grain's recurrence b[n] = b[n-18] ^ b[n-29] ^ b[n-42] ^ b[n-57] ^ b[n-67] ^ b[n-80]
(round_constants.rs: bit 80 of the window from bits 62, 51, 38, 23, 13 and 0)."""


def _seed(t: int, rf: int, rp: int) -> list[int]:
    """The 80 initial bits, each field most significant bit first (round_constants.rs
    ``append_bits``): field 1 (2 bits), S-box 1 (4), field size (12), t (12), R_F (10), R_P (10),
    then 30 ones."""
    bits: list[int] = []
    for value, width in ((1, 2), (1, 4), (FIELD_BITS, 12), (t, 12), (rf, 10), (rp, 10), ((1 << 30) - 1, 30)):
        if value >= 1 << width:
            raise ValueError(f"Grain seed field {value} does not fit {width} bits")
        bits += [(value >> i) & 1 for i in range(width - 1, -1, -1)]
    return bits


def _lfsr(seed: list[int], n: int) -> np.ndarray:
    """The first ``n`` bits Grain's register produces after the seed (uint8), the 160 warm-up
    bits included. The nearest tap is 18 back, so 18 bits are computed per step."""
    total = 80 + n + 18
    s = np.zeros(total, np.uint8)
    s[:80] = seed
    for k in range(80, total - 17, 18):
        blk = s[k - 18 : k].copy()
        for tap in _TAPS[1:]:
            blk ^= s[k - tap : k - tap + 18]
        s[k : k + 18] = blk
    return s[80 : 80 + n]


def grain_round_constants(t: int, rf: int, rp: int) -> list[int]:
    """``generate_constants(1, 1, 255, t, R_F, R_P)``: (R_F + R_P) * t field elements."""
    want = (rf + rp) * t
    seed = _seed(t, rf, rp)
    # each output bit takes two pairs on average, each candidate is below r about 45 % of the time
    n = 4 * FIELD_BITS * (2 * want + 16) + 160
    while True:
        raw = _lfsr(seed, n)[160:]
        pairs = raw[: len(raw) // 2 * 2].reshape(-1, 2)
        stream = pairs[pairs[:, 0] == 1, 1]
        k = len(stream) // FIELD_BITS
        # a candidate is 255 bits, most significant first (one 7-bit byte, then 31 bytes)
        padded = np.zeros((k, 256), np.uint8)
        padded[:, 1:] = stream[: k * FIELD_BITS].reshape(k, FIELD_BITS)
        packed = np.packbits(padded, axis=1)
        out: list[int] = []
        for row in packed:
            v = int.from_bytes(row.tobytes(), "big")
            if v < R_MOD:
                out.append(v)
                if len(out) == want:
                    return out
        n *= 2  # not enough bits for this instance: start again with twice as many


def cauchy_mds(t: int) -> list[list[int]]:
    """``generate_mds(t)``: m[i][j] = 1 / (i + t + j) mod r (symmetric)."""
    return [[pow(i + t + j, -1, R_MOD) for j in range(t)] for i in range(t)]


def generate_params(arity: int) -> PoseidonParams:
    """``PoseidonConstants::<Fr, A>::new()`` (Strength::Standard, HashType::MerkleTree) for
    ``arity`` in 1..36, generated from neptune's rules (seconds at the widest arities)."""
    if not 1 <= arity <= MAX_ARITY:
        raise ValueError(f"neptune's Poseidon takes arities 1..{MAX_ARITY}, not {arity}")
    t = arity + 1
    rf, rp = poseidon_round_numbers(arity)
    mds = cauchy_mds(t)
    return PoseidonParams(
        arity=arity,
        t=t,
        full_rounds=rf,
        partial_rounds=rp,
        domain_tag=(1 << arity) - 1,
        round_constants=tuple(grain_round_constants(t, rf, rp)),
        mds=tuple(tuple(row) for row in mds),
    )


@cache
def neptune_params(arity: int) -> PoseidonParams:
    """neptune's constants for ``arity``: the shipped ones where sealtop has them (2, 8, 11),
    else generated by :func:`generate_params`."""
    if arity in ARITIES:
        return poseidon_params(arity)
    return generate_params(arity)
