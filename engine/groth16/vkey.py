"""The verification key: what a verifier needs, as a small JSON file.

Points are stored in the same zcash compressed encoding as proofs (hex), so the verifier decodes
them with the oracle's own deserializer and never trusts our arithmetic. The file also names the
circuit (its digest) and carries the INSECURE TEST PARAMETERS label from setup.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

from engine.atomic import atomic_write
from engine.groth16.keyfile import KeyFileError, ProvingKey
from engine.groth16.serialize import G1_BYTES, G2_BYTES, g1_compress, g2_compress
from kernels.cpu.convert import g1_from_storage, g2_from_storage

VK_FORMAT = "sealtop-groth16-vk"
VK_VERSION = 1


@dataclass(frozen=True)
class VerifyingKey:
    """Compressed points: alpha (G1), beta, gamma, delta (G2) and IC (G1, one per input)."""

    alpha_g1: bytes
    beta_g2: bytes
    gamma_g2: bytes
    delta_g2: bytes
    ic: tuple[bytes, ...]
    digest: bytes
    insecure: bool

    @property
    def n_public(self) -> int:
        return len(self.ic) - 1


def verifying_key(pk: ProvingKey) -> VerifyingKey:
    """The verification key that belongs to a proving key (the proving key holds every part)."""
    return VerifyingKey(
        alpha_g1=g1_compress(g1_from_storage(pk.alpha_g1)[0]),
        beta_g2=g2_compress(g2_from_storage(pk.beta_g2)[0]),
        gamma_g2=g2_compress(g2_from_storage(pk.gamma_g2)[0]),
        delta_g2=g2_compress(g2_from_storage(pk.delta_g2)[0]),
        ic=tuple(g1_compress(p) for p in g1_from_storage(pk.ic)),
        digest=bytes(pk.digest),
        insecure=pk.insecure,
    )


def vk_to_json(vk: VerifyingKey) -> dict:
    return {
        "format": VK_FORMAT,
        "version": VK_VERSION,
        "protocol": "groth16",
        "curve": "bls12381",
        "insecure_test_parameters": vk.insecure,
        "circuit_digest": vk.digest.hex(),
        "n_public": vk.n_public,
        "alpha_g1": vk.alpha_g1.hex(),
        "beta_g2": vk.beta_g2.hex(),
        "gamma_g2": vk.gamma_g2.hex(),
        "delta_g2": vk.delta_g2.hex(),
        "ic": [p.hex() for p in vk.ic],
    }


def _hex(obj: dict, key: str, size: int, where: str) -> bytes:
    val = obj.get(key)
    try:
        if not isinstance(val, str):
            raise TypeError(key)
        raw = bytes.fromhex(val)
    except (TypeError, ValueError):
        raise KeyFileError(f"{where}: field {key!r} is missing or not hex") from None
    if len(raw) != size:
        raise KeyFileError(f"{where}: field {key!r} has {len(raw)} bytes, expected {size}")
    return raw


def vk_from_json(obj: object, where: str = "verification key") -> VerifyingKey:
    """Parse (shape only; the verifier validates the points); KeyFileError on any problem."""
    if not isinstance(obj, dict) or obj.get("format") != VK_FORMAT:
        raise KeyFileError(f"{where} is not a sealtop verification key (format {VK_FORMAT!r} expected)")
    if obj.get("version") != VK_VERSION:
        raise KeyFileError(f"{where}: verification key version {obj.get('version')!r}, expected {VK_VERSION}")
    ic = obj.get("ic")
    if not isinstance(ic, list) or not ic:
        raise KeyFileError(f"{where}: field 'ic' must be a non-empty list")
    return VerifyingKey(
        alpha_g1=_hex(obj, "alpha_g1", G1_BYTES, where),
        beta_g2=_hex(obj, "beta_g2", G2_BYTES, where),
        gamma_g2=_hex(obj, "gamma_g2", G2_BYTES, where),
        delta_g2=_hex(obj, "delta_g2", G2_BYTES, where),
        ic=tuple(_hex({"ic": p}, "ic", G1_BYTES, where) for p in ic),
        digest=_hex(obj, "circuit_digest", 32, where),
        insecure=bool(obj.get("insecure_test_parameters", True)),
    )


def write_json_atomic(path: str | os.PathLike, obj: object) -> None:
    """Write JSON so that a crash mid-write never leaves half a file."""
    with atomic_write(path) as f:
        json.dump(obj, f, indent=1)
        f.write("\n")


def save_vk(vk: VerifyingKey, path: str | os.PathLike) -> None:
    write_json_atomic(path, vk_to_json(vk))


def load_vk(path: str | os.PathLike) -> VerifyingKey:
    try:
        with open(path) as f:
            obj = json.load(f)
    except OSError as exc:
        raise KeyFileError(f"cannot read verification key {path}: {exc.strerror or exc}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise KeyFileError(f"verification key {path} is not valid JSON ({exc})".splitlines()[0]) from None
    return vk_from_json(obj, str(path))
