"""Filecoin's PoRep partition circuit, ``StackedCircuit``, synthesized in rust-fil-proofs' order.

One partition proves ``challenges`` challenged nodes of a sealed sector against replica_id,
comm_d and comm_r (its three first public inputs). The walk below is
storage-proofs-porep/src/stacked/circuit/proof.rs (``StackedCircuit::synthesize``) and, per
challenge, params.rs (``Proof::synthesize``), call for call:

- replica_id (allocated, made public, unpacked to 255 bits and byte-reversed), comm_d and comm_r
  (allocated, made public), comm_r_last and comm_c (allocated), and
  comm_r = Poseidon_2(comm_c, comm_r_last);
- per challenge: the data leaf and its tree_d path (SHA-256, binary) to comm_d; each base and
  expander parent's column (one label per layer), its Poseidon column hash and its tree_c path
  to comm_c; the challenge as a UInt64 made public; the label of every layer, SHA-256 of
  replica_id, the layer, the challenge and 37 parent labels (base parents on that layer,
  expander parents on the layer below, cycled); the encoding of the last label with the data leaf
  and its tree_r_last path to comm_r_last; the column hash of the challenge's labels and its
  tree_c path to comm_c.

Every Merkle root is private: a path's bits are packed into public inputs and its root is the
allocated commitment. The shape depends only on the sector's shape (engine/seal/circuit_count.py's
StackedShape), so it is built once per registered proof and cached; a partition's witness is the
values its Sources name (engine/c2/assign.py) plus the templates' witness programs.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.c2 import num
from engine.c2.cs import Synth
from engine.c2.por import hash2, hash_single_column, por, poseidon_node
from engine.c2.sha256 import create_label, reverse_bit_numbering, tree_d_node
from engine.circuit.builder import CircuitShape
from engine.circuit.template import Bit
from engine.seal.circuit_count import StackedShape, stacked_public_inputs
from engine.seal.registry import SealProof

TOTAL_PARENTS = 37
"""Parent labels a label hashes (stacked/vanilla's TOTAL_PARENTS)."""


@dataclass
class StackedBuild:
    """The compiled circuit and what fills it: the Source of every allocated value (in
    allocation order, the builder region ``private``) and of every public input."""

    shape: CircuitShape
    sources: list[tuple]
    input_sources: list[tuple]


def expand_parents(parents: list[list[Bit]], layer: int) -> list[list[Bit]]:
    """The 37 parent entries a label hashes (params.rs): on layer 1 the 6 base parents six times
    and the first once more; above it the 14 parents twice and the first 9 once more."""
    if layer > 1:
        out = parents + parents + parents[:9]
    else:
        out = parents * 6 + [parents[0]]
    if len(out) != TOTAL_PARENTS:
        raise ValueError(f"{len(parents)} parents do not expand to {TOTAL_PARENTS} entries")
    return out


def _challenge(s: Synth, shape: StackedShape, ci: int, comm_d: int, comm_c: int, comm_r_last: int,
               replica_bits: list[Bit]) -> None:
    """``Proof::synthesize`` for the challenge at position ``ci`` of the partition."""
    levels = shape.tree_levels()
    d_levels = [2] * shape.tree_d_levels()

    data_leaf = s.alloc(("data_leaf", ci))
    por(s, ci, "comm_d", d_levels, data_leaf, comm_d, tree_d_node)

    columns: dict[str, list[list[int]]] = {"drg": [], "exp": []}
    for group, count in (("drg", shape.base_degree), ("exp", shape.exp_degree)):
        for p in range(count):
            col = [s.alloc(("column", ci, group, p, row)) for row in range(shape.layers)]
            columns[group].append(col)
            h = hash_single_column(s, col)
            por(s, ci, (group, p), levels, h, comm_c, poseidon_node)

    challenge = num.uint64_alloc(s, [("challenge_bit", ci, i) for i in range(64)])
    num.pack_into_inputs(s, challenge, [("challenge_input", ci)])

    labels: list[int] = []
    for layer in range(1, shape.layers + 1):
        parents = [reverse_bit_numbering(num.to_bits_le(s, col[layer - 1])) for col in columns["drg"]]
        if layer > 1:
            parents += [reverse_bit_numbering(num.to_bits_le(s, col[layer - 2])) for col in columns["exp"]]
        labels.append(create_label(s, replica_bits, expand_parents(parents, layer), layer, challenge))

    encoded = num.add(s, labels[-1], data_leaf)  # encode.rs: key + value
    por(s, ci, "comm_r_last", levels, encoded, comm_r_last, poseidon_node)

    column_hash = hash_single_column(s, labels)
    por(s, ci, "comm_c", levels, column_hash, comm_c, poseidon_node)


def synthesize(proof: SealProof | StackedShape, name: str | None = None, matrices: bool = True) -> StackedBuild:
    """``StackedCircuit::synthesize`` for one partition of ``proof``'s shape, compiled (without
    its matrices: see CircuitBuilder.compile)."""
    s = walk(proof, name)
    return StackedBuild(s.finish(matrices), s.sources, s.input_sources)


def count(proof: SealProof | StackedShape) -> tuple[int, int, int]:
    """(R1CS rows, inputs with ONE, aux variables) of the partition circuit from its gadget
    calls alone, no matrix assembled: seconds at 32 GiB, whose matrices would take ~29 GiB."""
    s = walk(proof)
    b = s.builder
    rows = sum(count * t.n_rows for t, count in b.instances())
    inputs = 1 + b.num_public
    return rows + inputs, inputs, b.next_var - inputs


def walk(proof: SealProof | StackedShape, name: str | None = None) -> Synth:
    """The gadget calls of ``StackedCircuit::synthesize``, placed but not compiled."""
    shape = StackedShape.of(proof)
    s = Synth.new(name or f"stacked-{shape.nodes}", stacked_public_inputs(shape))

    replica_id = s.alloc(("replica_id",))
    num.inputize(s, replica_id, ("replica_id",))
    replica_bits = reverse_bit_numbering(num.to_bits_le(s, replica_id))

    comm_d = s.alloc(("comm_d",))
    num.inputize(s, comm_d, ("comm_d",))
    comm_r = s.alloc(("comm_r",))
    num.inputize(s, comm_r, ("comm_r",))
    comm_r_last = s.alloc(("comm_r_last",))
    comm_c = s.alloc(("comm_c",))

    num.equal(s, comm_r, hash2(s, comm_c, comm_r_last))

    for ci in range(shape.challenges):
        _challenge(s, shape, ci, comm_d, comm_c, comm_r_last, replica_bits)
    return s
