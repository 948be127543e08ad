"""Interactive PoRep challenges (storage-proofs-porep stacked/vanilla/challenges.rs, the rule V1
and V1_1 share): challenge i of partition k is
``SHA-256(replica_id || seed || u32_le(j)) as a LE integer % (nodes - 1) + 1`` with
``j = challenges * k + i``, so node 0 is never challenged.
"""

from __future__ import annotations

import hashlib
import struct

from engine.seal.registry import SealProof


def interactive_challenges(proof: SealProof, replica_id: bytes, seed: bytes, k: int) -> list[int]:
    """The challenged nodes of partition ``k`` for this replica id and interactive seed (each
    32 bytes; the replica id in its LE field-element bytes)."""
    if len(replica_id) != 32:
        raise ValueError(f"replica_id must be 32 bytes, not {len(replica_id)}")
    if len(seed) != 32:
        raise ValueError(f"seed must be 32 bytes, not {len(seed)}")
    if not 0 <= k < proof.partitions:
        raise ValueError(f"partition {k} is outside {proof.name}'s 0..{proof.partitions - 1}")
    return challenge_nodes(proof.nodes, proof.challenges, replica_id, seed, k)


def challenge_nodes(nodes: int, per_partition: int, replica_id: bytes, seed: bytes,
                    k: int) -> list[int]:
    """The rule itself over any sector of ``nodes`` nodes with ``per_partition`` challenges a
    partition (the synthetic porep presets use it too)."""
    if (k + 1) * per_partition > 1 << 32:
        raise ValueError(f"partition {k}: challenge indices past u32")
    prefix = hashlib.sha256(replica_id + seed)
    out: list[int] = []
    for i in range(per_partition):
        h = prefix.copy()
        h.update(struct.pack("<I", per_partition * k + i))
        out.append(int.from_bytes(h.digest(), "little") % (nodes - 1) + 1)
    return out


def all_interactive_challenges(proof: SealProof, replica_id: bytes, seed: bytes) -> list[list[int]]:
    """Every partition's challenges, partition by partition."""
    return [interactive_challenges(proof, replica_id, seed, k) for k in range(proof.partitions)]
