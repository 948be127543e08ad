"""The 192-byte Groth16 proof: A (48) | B (96) | C (48), zcash/bellman compressed points.

This is the encoding Filecoin uses. Each point is its big-endian x coordinate (for G2, x.c1 then
x.c0) with three flag bits in the top of the first byte:
- 0x80: compressed (always set here);
- 0x40: the point at infinity (then every other bit is zero);
- 0x20: y is the lexicographically larger of {y, −y} (for G2, decided by y.c1, or by y.c0 when
  y.c1 is zero).
Decoding checks the flags, the range of x, the curve equation and the prime-order subgroup, and
raises ProofFormatError with one line saying what is wrong.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine.groth16.curve_int import (
    G2_B,
    P,
    fp2_add,
    fp2_is_largest,
    fp2_mul,
    fp2_sqrt,
    fp_is_largest,
    fp_sqrt,
    g1_in_subgroup,
    g2_in_subgroup,
)
from kernels.constants import G1_B
from kernels.cpu.convert import (
    G1Int,
    G2Int,
    g1_from_storage,
    g2_from_storage,
)

PROOF_BYTES = 192
G1_BYTES = 48
G2_BYTES = 96
_COMPRESSED, _INFINITY, _LARGEST = 0x80, 0x40, 0x20


class ProofFormatError(ValueError):
    """Proof or point bytes that do not decode to valid curve points."""


@dataclass(frozen=True)
class Proof:
    """A Groth16 proof as affine integer points."""

    a: G1Int
    b: G2Int
    c: G1Int


def g1_compress(p: G1Int) -> bytes:
    if p is None:
        return bytes([_COMPRESSED | _INFINITY]) + bytes(G1_BYTES - 1)
    x, y = p
    out = bytearray(x.to_bytes(G1_BYTES, "big"))
    out[0] |= _COMPRESSED | (_LARGEST if fp_is_largest(y) else 0)
    return bytes(out)


def g2_compress(p: G2Int) -> bytes:
    if p is None:
        return bytes([_COMPRESSED | _INFINITY]) + bytes(G2_BYTES - 1)
    (x0, x1), y = p
    out = bytearray(x1.to_bytes(G1_BYTES, "big") + x0.to_bytes(G1_BYTES, "big"))
    out[0] |= _COMPRESSED | (_LARGEST if fp2_is_largest(y) else 0)
    return bytes(out)


def _flags(data: bytes, size: int, what: str) -> tuple[bool, bool, bytes]:
    """Check length and flags; return (infinity, largest, x bytes with flags cleared)."""
    if len(data) != size:
        raise ProofFormatError(f"{what}: expected {size} bytes, got {len(data)}")
    flags = data[0]
    if not flags & _COMPRESSED:
        raise ProofFormatError(f"{what}: not in compressed form (flag 0x80 unset)")
    infinity, largest = bool(flags & _INFINITY), bool(flags & _LARGEST)
    body = bytes([flags & 0x1F]) + data[1:]
    if infinity:
        if largest or any(body):
            raise ProofFormatError(f"{what}: infinity flag set but the other bits are not zero")
    return infinity, largest, body


def g1_decompress(data: bytes, what: str = "G1 point") -> G1Int:
    infinity, largest, body = _flags(data, G1_BYTES, what)
    if infinity:
        return None
    x = int.from_bytes(body, "big")
    if x >= P:
        raise ProofFormatError(f"{what}: x coordinate is not below the field modulus")
    y = fp_sqrt((x * x * x + G1_B) % P)
    if y is None:
        raise ProofFormatError(f"{what}: x is not the coordinate of a point on the curve")
    if fp_is_largest(y) != largest:
        y = (P - y) % P
    point = (x, y)
    if not g1_in_subgroup(point):
        raise ProofFormatError(f"{what}: point is not in the prime-order subgroup")
    return point


def g2_decompress(data: bytes, what: str = "G2 point") -> G2Int:
    infinity, largest, body = _flags(data, G2_BYTES, what)
    if infinity:
        return None
    x1, x0 = int.from_bytes(body[:G1_BYTES], "big"), int.from_bytes(body[G1_BYTES:], "big")
    if x0 >= P or x1 >= P:
        raise ProofFormatError(f"{what}: x coordinate is not below the field modulus")
    x = (x0, x1)
    y = fp2_sqrt(fp2_add(fp2_mul(fp2_mul(x, x), x), G2_B))
    if y is None:
        raise ProofFormatError(f"{what}: x is not the coordinate of a point on the curve")
    if fp2_is_largest(y) != largest:
        y = ((P - y[0]) % P, (P - y[1]) % P)
    point = (x, y)
    if not g2_in_subgroup(point):
        raise ProofFormatError(f"{what}: point is not in the prime-order subgroup")
    return point


def encode_proof(proof: Proof) -> bytes:
    return g1_compress(proof.a) + g2_compress(proof.b) + g1_compress(proof.c)


def encode_proof_rows(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> bytes:
    """Encode from storage rows (G1 uint64[12], G2 uint64[24], G1 uint64[12])."""
    return encode_proof(Proof(g1_from_storage(a)[0], g2_from_storage(b)[0], g1_from_storage(c)[0]))


def decode_proof(data: bytes) -> Proof:
    """Decode and validate 192 proof bytes; ProofFormatError names the part that is wrong."""
    if not isinstance(data, (bytes, bytearray)):
        raise ProofFormatError("proof must be bytes")
    if len(data) != PROOF_BYTES:
        raise ProofFormatError(f"proof must be {PROOF_BYTES} bytes, got {len(data)}")
    return Proof(
        g1_decompress(bytes(data[:48]), "proof A"),
        g2_decompress(bytes(data[48:144]), "proof B"),
        g1_decompress(bytes(data[144:]), "proof C"),
    )
