"""The public inputs of a C2 partition, derived by the verifier from what the chain holds.

rust-fil-proofs' ``StackedCompound::generate_public_inputs`` (storage-proofs-porep/src/stacked/
circuit/proof.rs): replica_id, comm_d and comm_r, then per challenge of partition k the inputs of
its seventeen inclusion proofs and of the challenge itself, in the order the circuit allocates
them. Every root is private, so an inclusion proof's only input is its leaf's index
(``PoRCompound::generate_public_inputs``: the path's position bits packed into one number); the
challenge is packed the same way (``UInt64::pack_into_input``). Nothing here reads what the
prover wrote: replica_id is recomputed from (prover_id, sector_id, ticket, comm_d, porep id), the
challenges from replica_id and the seed, the parents from the SDR graph.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.seal.challenges import interactive_challenges
from engine.seal.graph import node_parents
from engine.seal.labels import replica_id as make_replica_id
from engine.seal.registry import SealProof
from kernels.constants import R_MOD


@dataclass(frozen=True)
class Statement:
    """What a verifier of a sector's seal proof knows: the registered proof, the prover and
    sector ids, the ticket and interactive seed, and the sector's commitments (32 bytes each,
    field elements in little-endian bytes)."""

    proof: SealProof
    prover_id: bytes
    sector_id: int
    ticket: bytes
    seed: bytes
    comm_d: bytes
    comm_r: bytes

    def __post_init__(self) -> None:
        for name in ("prover_id", "ticket", "seed", "comm_d", "comm_r"):
            v = getattr(self, name)
            if len(v) != 32:
                raise ValueError(f"{name} must be 32 bytes, not {len(v)}")
        for name in ("comm_d", "comm_r"):
            if int.from_bytes(getattr(self, name), "little") >= R_MOD:
                raise ValueError(f"{name} is not a field element (not below r)")
        if not 0 <= self.sector_id < 1 << 64:
            raise ValueError("sector_id must fit in a u64")

    @property
    def replica_id(self) -> bytes:
        return make_replica_id(self.prover_id, self.sector_id, self.ticket, self.comm_d,
                               self.proof.porep_id)


def _fr(b: bytes) -> int:
    return int.from_bytes(b, "little")


def public_inputs(st: Statement, k: int) -> list[int]:
    """The public inputs of partition ``k`` (without bellperson's leading ONE)."""
    rid = st.replica_id
    out = [_fr(rid), _fr(st.comm_d), _fr(st.comm_r)]
    base = st.proof.base_degree
    for c in interactive_challenges(st.proof, rid, st.seed, k):
        parents = node_parents(st.proof, c)
        out.append(c)  # the data leaf in tree_d
        out += parents[:base]  # each base parent's column in tree_c
        out += parents[base:]  # each expander parent's column in tree_c
        out.append(c)  # the challenge (UInt64)
        out.append(c)  # the replica node in tree_r_last
        out.append(c)  # the challenge's column in tree_c
    return out
