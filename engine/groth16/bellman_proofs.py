"""Proof files as Filecoin keeps them: one bellperson proof per partition, concatenated.

bellperson 0.27 src/groth16/proof.rs: ``Proof::write`` writes ``a.to_bytes()``, ``b.to_bytes()``,
``c.to_bytes()``, blstrs' compressed encoding (48 + 96 + 48 = 192 bytes), which is what
engine/groth16/serialize.py writes. ``Proof::read_many`` wants exactly ``n · 192`` bytes and
decodes every point with the subgroup check, refusing the point at infinity. Reading here makes
the same checks, each failure one line naming the file, the partition and the part; writing
makes them first, so a file written here reads back here and in bellperson.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from engine.atomic import atomic_write
from engine.groth16.bellman import BellmanFileError
from engine.groth16.serialize import PROOF_BYTES, Proof, ProofFormatError, decode_proof


def check_proof(data: bytes, where: str) -> Proof:
    """One 192-byte proof decoded as bellperson's ``Proof::read_many`` decodes it (proof.rs):
    three valid points in the prime-order subgroup, none of them infinity."""
    try:
        proof = decode_proof(data)
    except ProofFormatError as exc:
        raise BellmanFileError(f"{where}: {exc}") from None
    for part, point in (("A", proof.a), ("B", proof.b), ("C", proof.c)):
        if point is None:
            raise BellmanFileError(f"{where}: proof {part} is the point at infinity, which "
                                   "bellperson refuses")
    return proof


def read_proofs(path: str | os.PathLike, partitions: int | None = None) -> list[bytes]:
    """A proof file: one 192-byte proof (bellperson's ``Proof::write``: A, B, C compressed) per
    partition, concatenated; each one checked as :func:`check_proof` does."""
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise BellmanFileError(f"cannot read proof {p}: {exc.strerror or exc}") from None
    if not data or len(data) % PROOF_BYTES:
        raise BellmanFileError(f"proof {p} is {len(data)} bytes, not a multiple of {PROOF_BYTES}")
    proofs = [data[i:i + PROOF_BYTES] for i in range(0, len(data), PROOF_BYTES)]
    if partitions is not None and len(proofs) != partitions:
        raise BellmanFileError(f"proof {p} holds {len(proofs)} partition proofs, the sector has {partitions}")
    for k, proof in enumerate(proofs):
        check_proof(proof, f"proof {p}: partition {k}")
    return proofs


def write_proofs(path: str | os.PathLike, proofs: Sequence[bytes]) -> None:
    """The partitions' proofs, in order, as one file (atomically); each is checked first, so
    the file reads back here and in bellperson."""
    if not proofs:
        raise BellmanFileError(f"cannot write proof {path}: no partition proofs")
    for k, proof in enumerate(proofs):
        if not isinstance(proof, (bytes, bytearray)) or len(proof) != PROOF_BYTES:
            size = f"{len(proof)} bytes" if isinstance(proof, (bytes, bytearray)) else type(proof).__name__
            raise BellmanFileError(f"cannot write proof {path}: partition {k}'s proof is {size}, "
                                   f"not {PROOF_BYTES} bytes")
        check_proof(bytes(proof), f"cannot write proof {path}: partition {k}")
    with atomic_write(path, "wb") as f:
        for proof in proofs:
            f.write(bytes(proof))
