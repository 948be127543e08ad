"""The public inputs of a C2 partition, derived by the verifier from what the chain holds, and
the small statement file that carries those public values.

rust-fil-proofs' ``StackedCompound::generate_public_inputs`` (storage-proofs-porep/src/stacked/
circuit/proof.rs) lists, for partition k:

- replica_id, comm_d, comm_r (each a field element from its 32-byte little-endian form);
- per challenge of partition k, in the order the circuit allocates them: the data leaf's
  inclusion in tree_d, each base (DRG) parent's column in tree_c, each expander parent's column
  in tree_c, the challenge itself (``u64_into_fr``), the replica node in tree_r_last and the
  challenge's own column in tree_c.

Every root is private (``por::SetupParams { private: true }``), so an inclusion proof's inputs
are ``PoRCompound::generate_public_inputs`` (storage-proofs-core gadgets/por.rs): one field
element, the leaf's index, which is what the circuit's ``multipack::pack_into_inputs`` of the
path's position bits (each level's index, least significant bit first, leaf level first) packs
to, since every arity is a power of two. The challenges are storage-proofs-porep's interactive
rule (vanilla/challenges.rs, engine/seal/challenges.py); the parents are the SDR graph's,
``base_graph().parents`` then ``expanded_parents`` (engine/seal/graph.py); replica_id is
``generate_replica_id`` (vanilla/params.rs) over prover_id, sector_id, ticket, comm_d and the
registered proof's porep id.

Nothing here reads what the prover wrote. A :class:`Statement` holds exactly the public values
(registered proof, prover_id, sector_id, ticket, seed, comm_d, comm_r) and is refused, as
filecoin-proofs' ``verify_seal`` refuses it, when a commitment is all zero or not a field
element (``as_safe_commitment``).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.atomic import atomic_write
from engine.seal.challenges import interactive_challenges
from engine.seal.circuit_count import StackedShape
from engine.seal.graph import node_parents
from engine.seal.labels import replica_id as generate_replica_id
from engine.seal.registry import SEAL_PROOFS, SealProof
from engine.seal.vanilla import C1Output
from engine.strictjson import json_kind, read_strict, strict_loads
from kernels.constants import R_MOD

FR_CAPACITY = 254
"""Bits one packed public input holds (``PrimeField::CAPACITY``, bellperson multipack.rs)."""

STATEMENT_FIELDS = ("registered_proof", "prover_id", "sector_id", "ticket", "seed", "comm_d", "comm_r")
"""The statement file's keys, in the order it writes them."""

MAX_STATEMENT_BYTES = 1 << 16
"""The largest statement file read (a real one is under 500 bytes)."""


class StatementError(ValueError):
    """Public values a verifier cannot use, or a statement file that does not hold them: one
    line saying which value and why."""


def domain_to_fr(value: bytes, what: str) -> int:
    """A 32-byte little-endian domain value as the field element Filecoin's ``Into<Fr>`` gives
    (``Fr::from_repr_vartime``): StatementError when it is not below r."""
    if len(value) != 32:
        raise StatementError(f"{what} must be 32 bytes, not {len(value)}")
    x = int.from_bytes(value, "little")
    if x >= R_MOD:
        raise StatementError(f"{what} is not a field element (its value is not below r)")
    return x


@dataclass(frozen=True)
class Statement:
    """What a verifier of a sector's seal proof knows: the registered proof, the prover and
    sector ids, the ticket and interactive seed (32 bytes each) and the sector's commitments
    comm_d and comm_r (32-byte little-endian field elements, never all zero)."""

    proof: SealProof
    prover_id: bytes
    sector_id: int
    ticket: bytes
    seed: bytes
    comm_d: bytes
    comm_r: bytes

    def __post_init__(self) -> None:
        if not isinstance(self.proof, SealProof):
            raise StatementError(f"proof must be a registered SealProof, not {type(self.proof).__name__}")
        for name in ("prover_id", "ticket", "seed", "comm_d", "comm_r"):
            v = getattr(self, name)
            if not isinstance(v, bytes) or len(v) != 32:
                raise StatementError(f"{name} must be 32 bytes, not {_describe(v)}")
        if isinstance(self.sector_id, bool) or not isinstance(self.sector_id, int) \
                or not 0 <= self.sector_id < 1 << 64:
            raise StatementError(f"sector_id must be a u64, not {self.sector_id!r}")
        for name in ("comm_d", "comm_r"):
            if getattr(self, name) == bytes(32):
                raise StatementError(f"{name} is all zero (an invalid commitment)")
            domain_to_fr(getattr(self, name), name)

    @classmethod
    def of_c1(cls, c1: C1Output, prover_id: bytes, sector_id: int) -> Statement:
        """The statement a C1 output claims, with the prover and sector ids it does not hold
        (for a prover that checks its own C1 output against the verifier's derivation)."""
        name = c1.registered_proof
        if name not in SEAL_PROOFS:
            raise StatementError(f"registered_proof {name!r} is not a seal proof this engine knows")
        return cls(SEAL_PROOFS[name], prover_id, sector_id, c1.ticket, c1.seed, c1.comm_d, c1.comm_r)

    @property
    def replica_id(self) -> bytes:
        """``generate_replica_id``: truncated SHA-256 of prover_id, sector_id (u64 big-endian),
        ticket, comm_d and the porep id."""
        return generate_replica_id(self.prover_id, self.sector_id, self.ticket, self.comm_d,
                                   self.proof.porep_id)

    def challenges(self, k: int) -> list[int]:
        """Partition ``k``'s challenged nodes (StatementError for a partition the proof has
        not)."""
        check_partition(self.proof, k)
        return interactive_challenges(self.proof, self.replica_id, self.seed, k)


def check_partition(proof: SealProof, k: int) -> None:
    if isinstance(k, bool) or not isinstance(k, int) or not 0 <= k < proof.partitions:
        raise StatementError(f"partition {k!r} is outside {proof.name}'s 0..{proof.partitions - 1}")


def _describe(v: object) -> str:
    return f"{len(v)} bytes" if isinstance(v, (bytes, bytearray)) else type(v).__name__


# ---------------------------------------------------------------- the inputs
def tree_d_bits(proof: SealProof) -> int:
    """Position bits of a tree_d path: one per level of the binary tree over the nodes."""
    return proof.nodes.bit_length() - 1


def tree_bits(proof: SealProof) -> int:
    """Position bits of a tree_c / tree_r_last path: log2 of each level's arity over the base,
    sub and top levels (``SubPath::synthesize`` allocates ``arity.trailing_zeros()`` a level)."""
    return sum(a.bit_length() - 1 for a in StackedShape.of(proof).tree_levels())


def inclusion_inputs(index: int, leaves: int, bits: int) -> list[int]:
    """``PoRCompound::generate_public_inputs`` for a private root: the leaf's index as one
    field element, refused outside the tree. The circuit packs the path's ``bits`` position
    bits into ceil(bits / 254) inputs; for every registered tree that is one, and the index is
    that input's value."""
    if not 0 <= index < leaves:
        raise StatementError(f"inclusion of leaf {index}: outside the tree's 0..{leaves - 1}")
    if bits > FR_CAPACITY:
        raise StatementError(f"a path of {bits} position bits packs into more than one input; "
                             "Filecoin's verifier lists one")
    return [index]


def challenge_inputs(proof: SealProof, node: int) -> list[int]:
    """One challenge's inputs after the three commitments, in the order ``generate_public_inputs``
    pushes them: tree_d, the base parents' and the expander parents' columns in tree_c, the
    challenge (``u64_into_fr``), tree_r_last, the challenge's column in tree_c."""
    parents = node_parents(proof, node)
    base, exp = parents[:proof.base_degree], parents[proof.base_degree:]
    d_bits, c_bits = tree_d_bits(proof), tree_bits(proof)
    out = inclusion_inputs(node, proof.nodes, d_bits)
    for p in base:
        out += inclusion_inputs(p, proof.nodes, c_bits)
    for p in exp:
        out += inclusion_inputs(p, proof.nodes, c_bits)
    out.append(node)
    out += inclusion_inputs(node, proof.nodes, c_bits)
    out += inclusion_inputs(node, proof.nodes, c_bits)
    return out


def public_inputs(st: Statement, k: int) -> list[int]:
    """Partition ``k``'s public inputs in Filecoin's order, without bellperson's leading ONE
    (so one fewer than the circuit's ``num_inputs``; as many as
    engine/seal/circuit_count.stacked_public_inputs counts)."""
    rid = st.replica_id
    out = [domain_to_fr(rid, "replica_id"), domain_to_fr(st.comm_d, "comm_d"),
           domain_to_fr(st.comm_r, "comm_r")]
    for node in st.challenges(k):
        out += challenge_inputs(st.proof, node)
    return out


# ---------------------------------------------------------------- the statement file
def statement_json(st: Statement) -> dict[str, str]:
    """The statement as its file holds it: the registered proof's name, the 32-byte values as
    64 hex digits, the sector number as a decimal string (a u64 does not fit a JSON double)."""
    return {
        "registered_proof": st.proof.name,
        "prover_id": st.prover_id.hex(),
        "sector_id": str(st.sector_id),
        "ticket": st.ticket.hex(),
        "seed": st.seed.hex(),
        "comm_d": st.comm_d.hex(),
        "comm_r": st.comm_r.hex(),
    }


def write_statement(path: str | os.PathLike, st: Statement) -> None:
    """Write the statement file atomically (an old file stays whole on any failure). The parent
    folder must exist: StatementError otherwise, before anything is written."""
    p = Path(path)
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.is_dir():
        raise StatementError(f"statement file {p}: folder {parent} does not exist")
    if p.is_dir():
        raise StatementError(f"statement file {p}: is a directory")
    with atomic_write(p) as f:
        f.write(json.dumps(statement_json(st), indent=1) + "\n")


def _hex32(v: Any, key: str) -> bytes:
    if not isinstance(v, str):
        raise StatementError(f"{key}: expected 64 hex digits in a string, got {json_kind(v)}")
    t = v[2:] if v[:2].lower() == "0x" else v
    if not re.fullmatch(r"[0-9a-fA-F]{64}", t):
        raise StatementError(f"{key}: expected 32 bytes as 64 hex digits, got {v[:80]!r}")
    return bytes.fromhex(t)


def _sector_id(v: Any) -> int:
    if isinstance(v, str) and re.fullmatch(r"[0-9]{1,20}", v):
        n = int(v)
    elif isinstance(v, int) and not isinstance(v, bool):
        n = v
    else:
        raise StatementError(f"sector_id: expected a sector number (a decimal string), got {json_kind(v)}"
                             + (f" {v[:40]!r}" if isinstance(v, str) else ""))
    if not 0 <= n < 1 << 64:
        raise StatementError(f"sector_id: {n} is not a u64")
    return n


def statement_from_json(doc: Any) -> Statement:
    """A Statement from the file's JSON value: exactly the seven keys, each well formed."""
    if not isinstance(doc, dict):
        raise StatementError(f"expected a JSON object with {', '.join(STATEMENT_FIELDS)}, got {json_kind(doc)}")
    missing = [k for k in STATEMENT_FIELDS if k not in doc]
    if missing:
        raise StatementError(f"missing field {missing[0]!r}")
    extra = [k for k in doc if k not in STATEMENT_FIELDS]
    if extra:
        raise StatementError(f"unknown field {extra[0]!r}")
    name = doc["registered_proof"]
    if not isinstance(name, str):
        raise StatementError(f"registered_proof: expected a string, got {json_kind(name)}")
    if name not in SEAL_PROOFS:
        raise StatementError(f"registered_proof: {name[:80]!r} is not a seal proof this engine knows")
    values = {k: _hex32(doc[k], k) for k in ("prover_id", "ticket", "seed", "comm_d", "comm_r")}
    return Statement(SEAL_PROOFS[name], values["prover_id"], _sector_id(doc["sector_id"]),
                     values["ticket"], values["seed"], values["comm_d"], values["comm_r"])


def loads_statement(text: str) -> Statement:
    """Parse a statement's JSON text (StatementError, one line, for anything else)."""
    return statement_from_json(strict_loads(text, StatementError))


def read_statement(path: str | os.PathLike) -> Statement:
    """Read a statement file; StatementError naming the file and what is wrong with it."""
    return read_strict(path, "statement file", "statement", MAX_STATEMENT_BYTES, loads_statement,
                       StatementError)
