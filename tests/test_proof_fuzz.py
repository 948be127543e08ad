"""Fuzzing the proof parser: any bytes either decode to points on the curve or raise the one
ProofFormatError with a one-line message; the verifier answers False (never crashes) for all
of them. SEALTOP_FUZZ_EXAMPLES sets the count (300 in CI, 100 for mutations of a valid proof,
whose every decode runs the subgroup checks; the separate fuzz run uses 10,000)."""

from __future__ import annotations

import os

import py_arkworks_bls12381 as ark
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.groth16.serialize import ProofFormatError, decode_proof, g1_compress, g2_compress
from engine.groth16.verify import verify
from engine.groth16.vkey import VerifyingKey

FUZZ_EXAMPLES = int(os.environ.get("SEALTOP_FUZZ_EXAMPLES", "300"))
MUTATIONS = int(os.environ.get("SEALTOP_FUZZ_EXAMPLES", "100"))
_SETTINGS = settings(max_examples=FUZZ_EXAMPLES, deadline=None,
                     suppress_health_check=[HealthCheck.too_slow])


def _valid_proof() -> bytes:
    g1, g2 = ark.G1Point(), ark.G2Point()
    return (bytes((g1 * ark.Scalar(5)).to_compressed_bytes())
            + bytes((g2 * ark.Scalar(7)).to_compressed_bytes())
            + bytes((g1 * ark.Scalar(11)).to_compressed_bytes()))


VALID = _valid_proof()
_G1 = bytes(ark.G1Point().to_compressed_bytes())
_G2 = bytes(ark.G2Point().to_compressed_bytes())
VK = VerifyingKey(alpha_g1=_G1, beta_g2=_G2, gamma_g2=_G2, delta_g2=_G2, ic=(_G1, _G1),
                  digest=bytes(32), insecure=True)


def _check_decode(data: bytes) -> None:
    try:
        proof = decode_proof(data)
    except ProofFormatError as exc:
        msg = str(exc)
        assert msg and "\n" not in msg
        return
    # whatever decodes re-encodes to the same bytes (the encoding is canonical)
    assert g1_compress(proof.a) + g2_compress(proof.b) + g1_compress(proof.c) == data


@_SETTINGS
@given(st.binary(min_size=0, max_size=400))
def test_arbitrary_bytes_decode_or_fail_in_one_line(data: bytes) -> None:
    _check_decode(data)


@settings(max_examples=MUTATIONS, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.integers(0, 191), st.integers(1, 255)), min_size=1, max_size=4))
def test_mutated_valid_proof_decodes_or_fails_in_one_line(flips) -> None:
    data = bytearray(VALID)
    for pos, mask in flips:
        data[pos] ^= mask
    _check_decode(bytes(data))


@settings(max_examples=min(FUZZ_EXAMPLES, 200), deadline=None)
@given(st.binary(min_size=0, max_size=200))
def test_verifier_never_crashes_on_garbage(data: bytes) -> None:
    assert verify(VK, [1], data) is False
