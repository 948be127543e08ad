"""The shape of a porep partition and its presets.

A partition proves ``challenges`` challenged nodes of a sector of 2^log2_nodes nodes labelled in
``layers`` layers over a graph of ``base_parents`` DRG parents and ``exp_parents`` expander
parents per node (Filecoin's 32 GiB PoRep: 18 challenges per partition, 11 layers, 2^30 nodes,
6 + 8 parents, 10 partitions). With ``sha`` off, the two SHA-256 parts (tree_d and the labels)
are Poseidon instead (a label hashes POSEIDON_LABEL_ENTRIES parent entries, so at most that many
parents), which keeps a whole partition near 2^11 constraints while every public input stays
bound.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from engine.circuit.poseidon_params import ARITIES
from engine.seal.registry import SEAL_PROOFS

LAYER_BITS = 4  # layer indices 1..15 fit in the low nibble of the u32 in the label message
LABEL_PARENTS = 37  # parent entries in a SHA-256 label message with parents (Filecoin's)
POSEIDON_LABEL_ENTRIES = 9  # parent entries in a Poseidon-only label (Poseidon_11 with 2 more)


@dataclass(frozen=True)
class PorepParams:
    """The shape of one partition."""

    challenges: int  # k
    layers: int  # L (2, 8 or 11: the column hash arity)
    log2_nodes: int  # sector nodes = 2^log2_nodes; tree depths follow
    base_parents: int = 0  # DRG parents per node (labels of the same layer)
    exp_parents: int = 0  # expander parents per node (labels of the layer below)
    sha: bool = True  # SHA-256 tree_d and labels (False: Poseidon stand-ins)

    def validate(self) -> None:
        if not 1 <= self.challenges <= 4096:
            raise ValueError(f"porep: challenges must be 1..4096, got {self.challenges}")
        if self.layers not in ARITIES or self.layers >= 1 << LAYER_BITS:
            raise ValueError(f"porep: layers must be one of {ARITIES} (the column-hash arity), got {self.layers}")
        if not 1 <= self.log2_nodes <= 32:
            raise ValueError(f"porep: log2_nodes must be 1..32, got {self.log2_nodes}")
        most = LABEL_PARENTS if self.sha else POSEIDON_LABEL_ENTRIES
        if self.base_parents < 0 or self.exp_parents < 0 or self.num_parents > most:
            raise ValueError(f"porep: parents must be 0..{most} in all, got {self.base_parents} + {self.exp_parents}")
        if self.exp_parents and not self.base_parents:
            raise ValueError("porep: expander parents need base parents (layer 1 hashes base parents only)")

    @property
    def num_nodes(self) -> int:
        return 1 << self.log2_nodes

    @property
    def num_parents(self) -> int:
        return self.base_parents + self.exp_parents

    @property
    def inputs_per_challenge(self) -> int:
        """The challenge index, then the position of every parent."""
        return 1 + self.num_parents

    @property
    def num_public(self) -> int:
        """replica_id, comm_d, comm_r, then per challenge its index and its parents' positions."""
        return 3 + self.challenges * self.inputs_per_challenge


PRESETS: dict[str, tuple[PorepParams, int]] = {
    # name: (params, partitions per job)
    "tiny": (PorepParams(challenges=1, layers=2, log2_nodes=3, sha=False), 1),
    "small": (PorepParams(challenges=1, layers=2, log2_nodes=3), 1),
    "medium": (PorepParams(challenges=2, layers=2, log2_nodes=6, base_parents=6, exp_parents=8), 1),
    "large": (PorepParams(challenges=2, layers=11, log2_nodes=9, base_parents=6, exp_parents=8), 1),
    # sealtop's own circuit at the 32 GiB shape (the benchmark's before Filecoin's exact circuit,
    # engine/c2, took the porep-32g name)
    "sealtop-32g": (PorepParams(challenges=18, layers=11, log2_nodes=30, base_parents=6, exp_parents=8), 10),
}


def preset_params(preset: str) -> PorepParams:
    if preset not in PRESETS:
        raise ValueError(f"unknown porep preset {preset!r} (choose one of {', '.join(PRESETS)})")
    return PRESETS[preset][0]


def preset_partitions(preset: str) -> int:
    preset_params(preset)
    return PRESETS[preset][1]


def default_graph_seed(p: PorepParams) -> bytes:
    """The graph of a shape. Filecoin seeds its graph per proof type (the porep id): a shape of
    Filecoin's degrees whose node count is a registered V1_1 proof's (medium: 2 KiB, sealtop-32g:
    32 GiB) takes that proof's porep id, so its graph is Filecoin's; any other shape a seed of
    its own."""
    if (p.base_parents, p.exp_parents) == (6, 8):
        for proof in SEAL_PROOFS.values():
            if proof.v1_1 and proof.nodes == p.num_nodes:
                return proof.porep_id
    return hashlib.sha256(f"sealtop graph:{p.log2_nodes}:{p.base_parents}:{p.exp_parents}".encode()).digest()


def job_challenge_seed(seed: int) -> bytes:
    """The interactive challenge seed of a job, from the job's seed."""
    return hashlib.sha256(f"sealtop challenge seed:{seed}".encode()).digest()
