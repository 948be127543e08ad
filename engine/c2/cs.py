"""The constraint system Filecoin's C2 circuit is written against: bellperson's
``ConstraintSystem`` as sealtop builds it.

rust-fil-proofs synthesizes ``StackedCircuit`` one gadget call at a time, and the Groth16
parameters Filecoin published are for exactly that order of variables and constraints. The
synthesis code in this room walks the same calls in the same order against a :class:`Synth`:

- ``alloc(source)`` is ``AllocatedNum::alloc`` / ``AllocatedBit::alloc`` of a value the prover
  supplies (a Merkle sibling, a column label, a path position bit). It allocates the next aux
  variable and records *where the value comes from* (``source``, a small tuple naming a place in
  the vanilla proofs, read by engine/c2/assign.py), never the value itself: the shape is built
  once and cached, and every partition fills it from its own vanilla proof.
- ``alloc_input(source)`` is ``alloc_input``: the next public input, in bellperson's order.
- ``call(...)`` runs one gadget as a template (engine/circuit/template.py): traced once per
  signature (its name and the pattern of constant, negated and repeated input bits), placed as
  one instance whose variables and constraints come next in the circuit. A value a gadget
  computes is always a template local with a witness op; only supplied values are ``alloc``-ed.

So the variables and constraints of the R1CS come out in the order bellperson's would, and the
witness is the free values (from the sources) plus the witness programs of the templates.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field

from engine.circuit.builder import CircuitBuilder, CircuitShape
from engine.circuit.template import ONE, Bit, Template, Tracer

Source = tuple[Hashable, ...]
"""Where a supplied value comes from, as a path into one partition's vanilla proofs
(engine/seal/vanilla.py; ``ci`` is the challenge's position in the partition):

- ``("replica_id",)``, ``("comm_d",)``, ``("comm_r",)``, ``("comm_r_last",)``, ``("comm_c",)``;
- ``("data_leaf", ci)``;
- ``("challenge_bit", ci, i)``: bit i (least significant first) of the challenged node;
- ``("column", ci, group, p, row)``: group ``"drg"`` or ``"exp"``, parent p, row = layer - 1;
- ``("path", ci, tree, level, "sibling", j)`` and ``("path", ci, tree, level, "bit", b)``:
  tree is ``"comm_d"`` (the data leaf in tree_d), ``"comm_r_last"`` (the replica node),
  ``"comm_c"`` (the challenge's own column) or ``("drg", p)`` / ``("exp", p)`` (a parent's
  column in tree_c); level counts from the leaf over the base, sub and top levels; j is the
  sibling's place among the level's arity - 1 siblings, b a bit of the level's index (least
  significant first).

Public inputs: ``("replica_id",)``, ``("comm_d",)``, ``("comm_r",)``,
``("path_input", ci, tree, chunk)`` (a path's bits as ``pack_into_inputs`` packs them) and
``("challenge_input", ci)`` (the challenge as ``UInt64::pack_into_input`` packs it)."""

PRIVATE = "private"
"""The builder region holding every ``alloc``-ed variable, in allocation order."""

TraceFn = Callable[[Tracer, list[Bit]], Sequence[Bit]]
"""A gadget body: given the tracer and its input bits/wires (constants as ``Bit.const``,
variables as input slots, negated where the caller passed a negated bit), emit the gadget and
return its outputs (local slots as ``Bit``; constant outputs as ``Bit.const``)."""


@dataclass(frozen=True)
class Traced:
    """A template and the shape of its outputs: per output, a constant bit (``Bit.const``) or
    the index into ``template.outputs`` and a negation flag."""

    template: Template
    outputs: tuple[tuple[int, int, bool], ...]  # (kind, value, neg): 0 a constant bit value,
    # 1 the index into template.outputs, 2 the index of the (distinct) input passed through


@dataclass
class Synth:
    """Builds a circuit in bellperson's order (see the module docstring)."""

    builder: CircuitBuilder
    sources: list[Source] = field(default_factory=list)
    input_sources: list[Source] = field(default_factory=list)
    traced: dict[Hashable, Traced] = field(default_factory=dict)

    @classmethod
    def new(cls, name: str, num_public: int) -> Synth:
        builder = CircuitBuilder(name, num_public)
        builder.alloc_aux(PRIVATE, 0)  # the region exists even where nothing is supplied
        return cls(builder)

    # -- supplied values ----------------------------------------------------------------

    def alloc(self, source: Source) -> int:
        """The next aux variable, holding the value at ``source``."""
        (v,) = self.builder.alloc_aux(PRIVATE, 1)
        self.sources.append(source)
        return int(v)

    def alloc_input(self, source: Source) -> int:
        """The next public input (bellperson's ``alloc_input``), its value at ``source``."""
        i = len(self.input_sources)
        if i >= self.builder.num_public:
            raise ValueError(f"circuit {self.builder.name}: more than {self.builder.num_public} public inputs")
        self.input_sources.append(source)
        return self.builder.public(i)

    # -- gadgets ------------------------------------------------------------------------

    def call(self, name: str, inputs: Sequence[Bit], trace: TraceFn, params: Hashable = ()) -> list[Bit]:
        """One gadget instance over ``inputs`` (global bits: a variable, possibly negated, or a
        constant). The template is keyed by ``name``, ``params`` and the inputs' pattern
        (constants by value, variables by first occurrence and negation), so constant bits fold
        inside the gadget exactly as bellperson folds them and a variable passed twice is one
        input slot. Returns the outputs as global bits."""
        distinct: list[int] = []
        first: dict[int, int] = {}
        pattern: list[tuple[int, int, bool]] = []
        for b in inputs:
            if b.slot == ONE:
                pattern.append((0, b.value, False))
                continue
            k = first.get(b.slot)
            if k is None:
                k = first[b.slot] = len(distinct)
                distinct.append(b.slot)
            pattern.append((1, k, b.neg))
        key = (name, params, tuple(pattern))
        t = self.traced.get(key)
        if t is None:
            t = self.traced[key] = _trace(name, len(distinct), pattern, trace)
        outs = self.builder.call(t.template, distinct)
        res: list[Bit] = []
        for kind, v, neg in t.outputs:
            if kind == 0:
                res.append(Bit.const(v))
            elif kind == 1:
                res.append(Bit(int(outs[v]), neg))
            else:
                res.append(Bit(distinct[v], neg))
        return res

    def finish(self, matrices: bool = True) -> CircuitShape:
        """The compiled circuit (without its matrices: see CircuitBuilder.compile); every
        public input must have been allocated."""
        if len(self.input_sources) != self.builder.num_public:
            raise ValueError(
                f"circuit {self.builder.name}: {len(self.input_sources)} public inputs allocated, "
                f"{self.builder.num_public} declared"
            )
        return self.builder.compile(matrices)


def _trace(name: str, n_in: int, pattern: list[tuple[int, int, bool]], trace: TraceFn) -> Traced:
    tr = Tracer(name, n_in)
    bits = [Bit.const(v) if kind == 0 else Bit(tr.input(v), neg) for kind, v, neg in pattern]
    out_bits = list(trace(tr, bits))
    outputs: list[tuple[int, int, bool]] = []
    placed: dict[int, int] = {}
    for b in out_bits:
        if b.is_const:
            outputs.append((0, b.value, False))
        elif b.slot <= n_in:  # an input passed through (a rotation, xor with a constant)
            outputs.append((2, b.slot - 1, b.neg))
        else:
            if b.slot not in placed:
                placed[b.slot] = len(tr.outputs)
                tr.output(b.slot)
            outputs.append((1, placed[b.slot], b.neg))
    return Traced(tr.finish(), tuple(outputs))
