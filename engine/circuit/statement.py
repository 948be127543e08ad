"""What a porep verifier knows, and the public inputs it derives from that alone.

A verifier holds the sector's commitments (replica_id, comm_d, comm_r: on chain in Filecoin), the
interactive challenge seed, the graph seed and the partition index. From those it derives every
other public input, as Filecoin's ``generate_public_inputs`` does: the challenged nodes, and for
each the positions of its base and expander parents in the graph. Nothing comes from the
prover's witness or files. Layout:

    replica_id, comm_d, comm_r, then per challenge: its index, its base parents' positions,
    its expander parents' positions.

Challenges are in 1..N−1: node 0 is never challenged (its label hashes no parents).
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.circuit.graph import ParentGraph
from engine.circuit.params import PorepParams, preset_params
from engine.seal.challenges import challenge_nodes
from kernels.constants import R_MOD


def derive_challenges(p: PorepParams, replica_id: int, challenge_seed: bytes, partition: int) -> list[int]:
    """The partition's challenged nodes, from the replica id, the challenge seed and the index,
    by Filecoin's interactive PoRep rule (engine/seal/challenges.py)."""
    if len(challenge_seed) != 32:
        raise ValueError(f"a challenge seed is 32 bytes, got {len(challenge_seed)}")
    if partition < 0:
        raise ValueError(f"partition index must be non-negative, got {partition}")
    return challenge_nodes(p.num_nodes, p.challenges, replica_id.to_bytes(32, "little"),
                           challenge_seed, partition)


@dataclass(frozen=True)
class PorepStatement:
    """One partition's claim: the sector's commitments and the seeds the rest derives from."""

    params: PorepParams
    replica_id: int
    comm_d: int
    comm_r: int
    challenge_seed: bytes
    graph_seed: bytes
    partition: int

    def graph(self) -> ParentGraph:
        p = self.params
        return ParentGraph(self.graph_seed, p.num_nodes, p.base_parents, p.exp_parents)

    def challenges(self) -> list[int]:
        return derive_challenges(self.params, self.replica_id, self.challenge_seed, self.partition)

    def public_inputs(self) -> list[int]:
        """Every public input of the partition circuit, in the circuit's order."""
        for name in ("replica_id", "comm_d", "comm_r"):
            if not 0 <= getattr(self, name) < R_MOD:
                raise ValueError(f"porep statement: {name} is not a field element")
        g = self.graph()
        out = [self.replica_id, self.comm_d, self.comm_r]
        for c in self.challenges():
            out += [c, *g.parents(c)]
        return out

    def to_json(self, preset: str) -> dict:
        """The statement as the CLI's public-input file holds it (decimal strings, hex seeds)."""
        return {
            "statement": "sealtop-porep",
            "preset": preset,
            "replica_id": str(self.replica_id),
            "comm_d": str(self.comm_d),
            "comm_r": str(self.comm_r),
            "challenge_seed": self.challenge_seed.hex(),
            "graph_seed": self.graph_seed.hex(),
            "partition": self.partition,
        }


def statement_from_json(obj: object, where: str = "statement") -> tuple[str, PorepStatement]:
    """(preset, statement) from :meth:`PorepStatement.to_json`'s object; ValueError in one line
    on anything malformed."""
    if not isinstance(obj, dict) or obj.get("statement") != "sealtop-porep":
        raise ValueError(f"{where} is not a sealtop porep statement")
    try:
        preset = str(obj["preset"])
        params = preset_params(preset)
        replica_id, comm_d, comm_r = vals = [int(str(obj[k])) for k in ("replica_id", "comm_d", "comm_r")]
        seeds = [bytes.fromhex(str(obj[k])) for k in ("challenge_seed", "graph_seed")]
        partition = obj["partition"]
    except KeyError as exc:
        raise ValueError(f"{where}: field {exc.args[0]!r} is missing") from None
    except ValueError as exc:
        raise ValueError(f"{where}: {exc}") from None
    if not isinstance(partition, int) or isinstance(partition, bool) or partition < 0:
        raise ValueError(f"{where}: partition must be a non-negative integer")
    if any(len(s) != 32 for s in seeds):
        raise ValueError(f"{where}: seeds must be 32 bytes of hex")
    if any(not 0 <= v < R_MOD for v in vals):
        raise ValueError(f"{where}: replica_id, comm_d and comm_r must be field elements")
    return preset, PorepStatement(params, replica_id, comm_d, comm_r, seeds[0], seeds[1], partition)

