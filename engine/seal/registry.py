"""The registered seal proofs Filecoin publishes (2 KiB to 64 GiB, API V1 and V1_1), with the
constants each one fixes: sector size, SDR layers, challenges per partition, partitions, the
degrees of the SDR graph, the tree_c / tree_r_last arities, the porep id and the seeds the graph
derives from it.

The values are Filecoin's (rust-filecoin-proofs-api's ``RegisteredSealProof`` and
filecoin-proofs' ``constants.rs``); they are network rules, so they are a table, not knobs.
"""

from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass

NODE_SIZE = 32
"""Bytes per node (one field element) of a sector."""

BASE_DEGREE = 6
"""Parents of a node in the bucket-sampling DRG (the immediate predecessor included)."""

EXP_DEGREE = 8
"""Parents of a node drawn from the previous layer by the Feistel expander."""

DRSAMPLE_DST = b"Filecoin_DRSample"
"""Domain separation tag of the DRG seed."""

FEISTEL_DST = b"Filecoin_Feistel"
"""Domain separation tag of the expander's Feistel keys."""

API_V1_0 = "1.0.0"
API_V1_1 = "1.1.0"

KIB = 1 << 10
MIB = 1 << 20
GIB = 1 << 30

# sector size -> (layers, minimum challenges in total, partitions, (base, sub, top) arities)
_SIZE_RULES: dict[int, tuple[int, int, int, tuple[int, int, int]]] = {
    2 * KIB: (2, 2, 1, (8, 0, 0)),
    8 * MIB: (2, 2, 1, (8, 0, 0)),
    512 * MIB: (2, 2, 1, (8, 0, 0)),
    32 * GIB: (11, 176, 10, (8, 8, 0)),
    64 * GIB: (11, 176, 10, (8, 8, 2)),
}

_SIZE_NAMES: dict[int, str] = {
    2 * KIB: "2KiB",
    8 * MIB: "8MiB",
    512 * MIB: "512MiB",
    32 * GIB: "32GiB",
    64 * GIB: "64GiB",
}

MAX_CHALLENGES_PER_PARTITION = 18
"""The most challenges one partition's circuit takes (filecoin-proofs' limit)."""


def derive_porep_domain_seed(dst: bytes, porep_id: bytes) -> bytes:
    """SHA-256(dst || porep_id): the 32-byte seed Filecoin derives per purpose from a porep id."""
    if len(porep_id) != 32:
        raise ValueError(f"porep_id must be 32 bytes, not {len(porep_id)}")
    return hashlib.sha256(dst + porep_id).digest()


def porep_id_bytes(registered_id: int, nonce: int = 0) -> bytes:
    """The porep id: the registered proof id (u64 LE), the nonce (u64 LE), then 16 zero bytes."""
    return struct.pack("<QQ", registered_id, nonce) + bytes(16)


@dataclass(frozen=True)
class SealProof:
    """One registered seal proof and the constants it fixes."""

    name: str
    registered_id: int
    sector_size: int
    api_version: str
    porep_id: bytes
    nodes: int
    layers: int
    challenges: int
    partitions: int
    base_degree: int
    exp_degree: int
    tree_arities: tuple[int, int, int]

    @property
    def v1_1(self) -> bool:
        """Whether the proof follows API 1.1 rules (predecessor first, wide expander indices)."""
        return self.api_version != API_V1_0

    @property
    def degree(self) -> int:
        """Parents per node in the SDR graph (base then expander)."""
        return self.base_degree + self.exp_degree

    @property
    def total_challenges(self) -> int:
        """Challenges over all partitions."""
        return self.challenges * self.partitions

    @property
    def graph_seed(self) -> bytes:
        """The 28-byte seed of the bucket-sampling DRG's ChaCha8 generators."""
        return derive_porep_domain_seed(DRSAMPLE_DST, self.porep_id)[:28]

    @property
    def feistel_keys(self) -> tuple[int, int, int, int]:
        """The four u64 keys of the expander's Feistel permutation (LE words of the seed)."""
        seed = derive_porep_domain_seed(FEISTEL_DST, self.porep_id)
        k = struct.unpack("<4Q", seed)
        return (k[0], k[1], k[2], k[3])


def _build() -> dict[str, SealProof]:
    table: dict[str, SealProof] = {}
    sizes = list(_SIZE_RULES)
    for version_index, (suffix, api) in enumerate((("V1", API_V1_0), ("V1_1", API_V1_1))):
        for size_index, size in enumerate(sizes):
            layers, min_challenges, partitions, arities = _SIZE_RULES[size]
            per_partition = -(-min_challenges // partitions)
            assert per_partition <= MAX_CHALLENGES_PER_PARTITION
            registered_id = version_index * len(sizes) + size_index
            name = f"StackedDrg{_SIZE_NAMES[size]}{suffix}"
            table[name] = SealProof(
                name=name,
                registered_id=registered_id,
                sector_size=size,
                api_version=api,
                porep_id=porep_id_bytes(registered_id),
                nodes=size // NODE_SIZE,
                layers=layers,
                challenges=per_partition,
                partitions=partitions,
                base_degree=BASE_DEGREE,
                exp_degree=EXP_DEGREE,
                tree_arities=arities,
            )
    return table


SEAL_PROOFS: dict[str, SealProof] = _build()
"""Every registered seal proof this engine knows, by rust-filecoin-proofs-api's variant name."""


def seal_proof(name: str) -> SealProof:
    """The registered seal proof of that name; ValueError naming the known ones otherwise."""
    try:
        return SEAL_PROOFS[name]
    except KeyError:
        known = ", ".join(SEAL_PROOFS)
        raise ValueError(f"unknown seal proof {name!r} (known: {known})") from None


def by_size(sector_size: int, v1_1: bool = True) -> SealProof:
    """The registered seal proof for a sector size in bytes (V1_1 unless asked for V1)."""
    name = _SIZE_NAMES.get(sector_size)
    if name is None:
        sizes = ", ".join(str(s) for s in _SIZE_NAMES)
        raise ValueError(f"no registered seal proof for sector size {sector_size} (sizes: {sizes})")
    return SEAL_PROOFS[f"StackedDrg{name}{'V1_1' if v1_1 else 'V1'}"]
