"""Groth16 verification with py_arkworks_bls12381 only: an independent library, not our kernels.

The oracle decodes the proof and the key points with its own (subgroup-checking) deserializer,
accumulates the public inputs into IC with its own arithmetic, and decides with one pairing
check:  e(A, B) · e(−alpha, beta) · e(−acc, gamma) · e(−C, delta) = 1.
"""

from __future__ import annotations

from engine.groth16.vkey import VerifyingKey
from kernels.constants import R_MOD


class VerifyError(ValueError):
    """The inputs cannot even be checked (bad key point, wrong number of public inputs)."""


def _oracle():
    try:
        import py_arkworks_bls12381 as ark
    except ImportError:  # pragma: no cover - it is a dependency
        raise VerifyError("py_arkworks_bls12381 is not installed; it is the verifier") from None
    return ark


def _point(cls, raw: bytes, what: str):
    try:
        return cls.from_compressed_bytes(bytes(raw))
    except Exception:
        raise VerifyError(f"{what} does not decode to a valid curve point") from None


_DECODED: dict[tuple, tuple] = {}  # a few keys' points, decoded once: a job verifies every partition with one key
_KEEP = 8


def _key_points(vk: VerifyingKey) -> tuple:
    """(alpha, beta, gamma, delta, IC) decoded and subgroup-checked by the oracle, once per key
    (~26 ms for a porep-32g key's 329 IC points on the 2-core machine)."""
    k = (vk.alpha_g1, vk.beta_g2, vk.gamma_g2, vk.delta_g2, vk.ic)
    got = _DECODED.get(k)
    if got is None:
        ark = _oracle()
        got = (_point(ark.G1Point, vk.alpha_g1, "verification key alpha"),
               _point(ark.G2Point, vk.beta_g2, "verification key beta"),
               _point(ark.G2Point, vk.gamma_g2, "verification key gamma"),
               _point(ark.G2Point, vk.delta_g2, "verification key delta"),
               [_point(ark.G1Point, p, f"verification key IC[{i}]") for i, p in enumerate(vk.ic)])
        if len(_DECODED) >= _KEEP:
            _DECODED.pop(next(iter(_DECODED)))
        _DECODED[k] = got
    return got


def verify(vk: VerifyingKey, public_inputs: list[int], proof: bytes) -> bool:
    """True iff ``proof`` is valid for ``public_inputs`` under ``vk``.

    Malformed proof bytes give False (a proof that does not decode is not valid). A malformed
    key or the wrong number of public inputs raises VerifyError.
    """
    ark = _oracle()
    if len(public_inputs) != vk.n_public:
        raise VerifyError(f"the key expects {vk.n_public} public inputs, got {len(public_inputs)}")
    for x in public_inputs:
        if not isinstance(x, int) or not 0 <= x < R_MOD:
            raise VerifyError(f"public input {x!r} is not an integer in [0, r)")
    alpha, beta, gamma, delta, ic = _key_points(vk)
    if not isinstance(proof, (bytes, bytearray)) or len(proof) != 192:
        return False
    try:
        a = ark.G1Point.from_compressed_bytes(bytes(proof[:48]))
        b = ark.G2Point.from_compressed_bytes(bytes(proof[48:144]))
        c = ark.G1Point.from_compressed_bytes(bytes(proof[144:]))
    except Exception:
        return False
    acc = ic[0]  # IC[0] + sum x_i IC[i], one multi-scalar multiplication by the oracle
    if public_inputs:
        acc = acc + ark.G1Point.multiexp_unchecked(ic[1:], [ark.Scalar(x) for x in public_inputs])
    zero = ark.G1Point.identity()
    return bool(ark.GT.pairing_check([a, zero - alpha, zero - acc, zero - c], [b, beta, gamma, delta]))


def decodes(proof: bytes) -> str | None:
    """None if the oracle decodes all three proof points, else one line saying which fails."""
    ark = _oracle()
    if len(proof) != 192:
        return f"proof must be 192 bytes, got {len(proof)}"
    for cls, lo, hi, name in ((ark.G1Point, 0, 48, "A"), (ark.G2Point, 48, 144, "B"), (ark.G1Point, 144, 192, "C")):
        try:
            cls.from_compressed_bytes(bytes(proof[lo:hi]))
        except Exception:
            return f"proof {name} does not decode to a valid curve point"
    return None


def malformed(proof: bytes) -> str | None:
    """None if ``proof`` is the canonical zcash encoding of three valid points, else why not.
    Both decoders must accept it: ours (engine.groth16.serialize), which refuses every
    non-canonical form (stray bits beside the infinity flag among them), and the oracle's."""
    from engine.groth16.serialize import ProofFormatError, decode_proof, encode_proof

    try:
        if encode_proof(decode_proof(proof)) != bytes(proof):
            return "not the canonical encoding of its points"
    except ProofFormatError as exc:
        return str(exc)
    return decodes(proof)
