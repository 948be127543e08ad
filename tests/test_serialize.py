"""The 192-byte zcash proof encoding against py_arkworks_bls12381's own encoder and decoder."""

from __future__ import annotations

import secrets

import py_arkworks_bls12381 as ark
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.groth16.curve_int import P, fp_sqrt
from engine.groth16.serialize import (
    Proof,
    ProofFormatError,
    decode_proof,
    encode_proof,
    g1_compress,
    g1_decompress,
    g2_compress,
    g2_decompress,
)
from kernels.constants import G1_B, R_MOD

scalars = st.integers(min_value=1, max_value=R_MOD - 1)


def _g1_int(pt) -> tuple[int, int]:
    raw = pt.to_xy_bytes_le()
    return int.from_bytes(raw[:48], "little"), int.from_bytes(raw[48:], "little")


def _g2_int(pt):
    raw = pt.to_xy_bytes_le()
    v = [int.from_bytes(raw[i : i + 48], "little") for i in range(0, 192, 48)]
    return (v[0], v[1]), (v[2], v[3])


@settings(max_examples=15, deadline=None)
@given(k=scalars)
def test_g1_matches_oracle_both_ways(k: int) -> None:
    for pt in (ark.G1Point() * ark.Scalar(k), ark.G1Point.identity() - ark.G1Point() * ark.Scalar(k)):
        ours = g1_compress(_g1_int(pt))
        assert ours == pt.to_compressed_bytes()
        assert g1_decompress(ours) == _g1_int(pt)
        assert ark.G1Point.from_compressed_bytes(ours) == pt


@settings(max_examples=10, deadline=None)
@given(k=scalars)
def test_g2_matches_oracle_both_ways(k: int) -> None:
    for pt in (ark.G2Point() * ark.Scalar(k), ark.G2Point.identity() - ark.G2Point() * ark.Scalar(k)):
        ours = g2_compress(_g2_int(pt))
        assert ours == pt.to_compressed_bytes()
        assert g2_decompress(ours) == _g2_int(pt)
        assert ark.G2Point.from_compressed_bytes(ours) == pt


def test_infinity_encodings_match_oracle() -> None:
    assert g1_compress(None) == ark.G1Point.identity().to_compressed_bytes()
    assert g2_compress(None) == ark.G2Point.identity().to_compressed_bytes()
    assert g1_decompress(g1_compress(None)) is None
    assert g2_decompress(g2_compress(None)) is None


def test_proof_round_trip_random_points() -> None:
    a = ark.G1Point() * ark.Scalar(secrets.randbelow(R_MOD - 1) + 1)
    b = ark.G2Point() * ark.Scalar(secrets.randbelow(R_MOD - 1) + 1)
    c = ark.G1Point() * ark.Scalar(secrets.randbelow(R_MOD - 1) + 1)
    proof = Proof(_g1_int(a), _g2_int(b), _g1_int(c))
    raw = encode_proof(proof)
    assert len(raw) == 192
    assert raw == a.to_compressed_bytes() + b.to_compressed_bytes() + c.to_compressed_bytes()
    assert decode_proof(raw) == proof


def _point_off_subgroup() -> bytes:
    """A compressed G1 point on the curve but outside the prime-order subgroup."""
    while True:
        x = secrets.randbelow(P)
        if fp_sqrt((x**3 + G1_B) % P) is not None:
            enc = bytearray(x.to_bytes(48, "big"))
            enc[0] |= 0x80
            return bytes(enc)


def _valid_proof() -> bytes:
    k = secrets.randbelow(R_MOD - 1) + 1
    return (
        (ark.G1Point() * ark.Scalar(k)).to_compressed_bytes()
        + (ark.G2Point() * ark.Scalar(k)).to_compressed_bytes()
        + (ark.G1Point() * ark.Scalar(k + 1)).to_compressed_bytes()
    )


@pytest.mark.parametrize(
    "mutate, fragment",
    [
        (lambda p: p[:191], "192 bytes"),
        (lambda p: p + b"\0", "192 bytes"),
        (lambda p: bytes([p[0] & 0x7F]) + p[1:], "compressed"),
        (lambda p: bytes([0xC0]) + bytes([1]) + p[2:], "infinity"),
        (lambda p: bytes([0x9F]) + b"\xff" * 47 + p[48:], "modulus"),
        (lambda p: p[:48] + bytes([p[48] & 0x7F]) + p[49:], "compressed"),
        (lambda p: p[:144] + _point_off_subgroup(), "subgroup"),
    ],
)
def test_malformed_proofs_give_one_line_errors(mutate, fragment: str) -> None:
    with pytest.raises(ProofFormatError) as info:
        decode_proof(mutate(_valid_proof()))
    msg = str(info.value)
    assert fragment in msg and "\n" not in msg


def test_x_not_on_curve_is_rejected() -> None:
    while True:
        x = secrets.randbelow(P)
        if fp_sqrt((x**3 + G1_B) % P) is None:
            break
    enc = bytearray(x.to_bytes(48, "big"))
    enc[0] |= 0x80
    with pytest.raises(ProofFormatError, match="on the curve"):
        g1_decompress(bytes(enc))
