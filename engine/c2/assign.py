"""A partition's supplied values, read from its vanilla proofs in a C1 output.

The C2 circuit allocates every value the prover supplies with a Source naming where it comes
from (the vocabulary is engine/c2/cs.py's ``Source``); this module reads those values out of one
partition of a C1 output exactly as rust-fil-proofs fills ``StackedCircuit``:

- replica_id, comm_d and comm_r from the C1 output (``StackedCompound::circuit`` takes them from
  the public inputs filecoin-proofs builds from the C1 output);
- comm_r_last and comm_c from the vanilla proofs' roots: the first challenge's tree_r_last root
  and the root of its own column's tree_c path (``vanilla_proof[0].comm_r_last()`` /
  ``.comm_c()`` in storage-proofs-porep stacked/circuit/proof.rs, after ensuring every
  challenge has the same two);
- per challenge (``From<VanillaProof> for circuit::Proof``, stacked/circuit/params.rs): the data
  leaf (tree_d's leaf), the challenge (``labeling_proofs[0].node``), the base and expander
  parents' columns and their tree_c paths, the replica node's tree_r_last path and the
  challenge's column's tree_c path; a path level's position bits are its index's bits, least
  significant first (``SubPath::synthesize`` in storage-proofs-core gadgets/por.rs).

The public-input Sources (``path_input``, ``challenge_input``) resolve from the prover's data
too, only so that the engine can check the prover's claim against the verifier's own derivation
(engine/c2/public.py) before proving.

Two readers: :func:`value_of` resolves one Source straight from the proofs (the reference), and
:func:`assign` / :func:`assign_mont` fill a whole list at once through a :class:`SourcePlan`
compiled once per circuit: every Source becomes a row of a per-partition table of 32-byte values
or a bit of a per-partition table of indices, and the values come out in a few numpy gathers.
Values are canonical field elements (below r); a value that is not, a Source that names nothing,
or vanilla proofs of the wrong shape are a SourceError of one line.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from engine.c2.cs import Source
from engine.c2.public import StatementError, domain_to_fr
from engine.seal.circuit_count import StackedShape
from engine.seal.registry import SEAL_PROOFS, SealProof
from engine.seal.vanilla import C1Output, MerkleProof, PathElement, VanillaProof
from kernels.constants import R_MOD

FR_CAPACITY = 254
"""Bits one packed public input holds (``PrimeField::CAPACITY``, bellperson multipack.rs)."""

CHALLENGE_BITS = 64
"""Bits of the challenge (``UInt64::alloc``, storage-proofs-core gadgets/uint64.rs)."""

GLOBALS = ("replica_id", "comm_d", "comm_r", "comm_r_last", "comm_c")
"""The Sources that are one value for the whole partition, in the circuit's allocation order."""

_R_LIMBS = np.array([(R_MOD >> (64 * i)) & ((1 << 64) - 1) for i in range(4)], np.uint64)


class SourceError(ValueError):
    """A Source that names nothing, a supplied value that is not a field element, or vanilla
    proofs that do not have the partition circuit's shape (one line)."""


# ---------------------------------------------------------------- the partition
@dataclass(frozen=True)
class Partition:
    """One partition's supplied values as ``StackedCompound::circuit`` receives them: the
    registered proof, the partition index, the C1 output's replica_id, comm_d and comm_r, the
    roots comm_r_last and comm_c, and one vanilla proof per challenge."""

    proof: SealProof
    k: int
    replica_id: bytes
    comm_d: bytes
    comm_r: bytes
    comm_r_last: bytes
    comm_c: bytes
    proofs: tuple[VanillaProof, ...]
    shape: StackedShape = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "shape", StackedShape.of(self.proof))
        if len(self.proofs) != self.proof.challenges:
            raise SourceError(f"partition {self.k}: {len(self.proofs)} challenge proofs, "
                              f"{self.proof.name} proves {self.proof.challenges} a partition")

    @classmethod
    def of_c1(cls, c1: C1Output, k: int) -> Partition:
        """Partition ``k`` of a C1 output, with comm_r_last and comm_c from its first challenge
        and the check that every challenge has the same two (proof.rs' "inconsistent
        comm_r_lasts" / "inconsistent comm_cs")."""
        proof = SEAL_PROOFS.get(c1.registered_proof)
        if proof is None:
            raise SourceError(f"registered proof {c1.registered_proof!r} is not one this engine knows")
        if isinstance(k, bool) or not isinstance(k, int) or not 0 <= k < len(c1.vanilla_proofs):
            raise SourceError(f"partition {k!r}: the C1 output holds partitions "
                              f"0..{len(c1.vanilla_proofs) - 1}")
        proofs = tuple(c1.vanilla_proofs[k])
        if not proofs:
            raise SourceError(f"partition {k}: no vanilla proofs (a circuit needs at least one)")
        comm_r_last = proofs[0].comm_r_last_proof.root
        comm_c = proofs[0].replica_column_proofs.c_x.inclusion_proof.root
        for i, v in enumerate(proofs):
            if v.comm_r_last_proof.root != comm_r_last:
                raise SourceError(f"partition {k}: challenge {i}'s tree_r_last root is not challenge 0's "
                                  "(inconsistent comm_r_last)")
            if v.replica_column_proofs.c_x.inclusion_proof.root != comm_c:
                raise SourceError(f"partition {k}: challenge {i}'s tree_c root is not challenge 0's "
                                  "(inconsistent comm_c)")
        return cls(proof, k, c1.replica_id, c1.comm_d, c1.comm_r, comm_r_last, comm_c, proofs)

    @cached_property
    def tables(self) -> tuple[np.ndarray, np.ndarray]:
        """(values uint8[rows, 32], indices uint64[slots]) in :class:`Layout` order: what a
        :class:`SourcePlan` gathers from. Checks every path and column against the shape."""
        return _tables(self)


def tree_names(shape: StackedShape) -> list[Hashable]:
    """Every tree a challenge opens, as path Sources name them: the data leaf in tree_d, each
    base and expander parent's column in tree_c, the replica node in tree_r_last, the
    challenge's column in tree_c (the order the circuit proves them)."""
    names: list[Hashable] = ["comm_d"]
    names += [("drg", p) for p in range(shape.base_degree)]
    names += [("exp", p) for p in range(shape.exp_degree)]
    return names + ["comm_r_last", "comm_c"]


def level_arities(shape: StackedShape, tree: Hashable) -> list[int]:
    """The arity of each level of ``tree``'s paths, leaf first (tree_d is binary)."""
    if tree == "comm_d":
        return [2] * shape.tree_d_levels()
    return shape.tree_levels()


def _is_index(x: object) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def _path(v: VanillaProof, tree: Hashable) -> MerkleProof | None:
    rc = v.replica_column_proofs
    if tree == "comm_d":
        return v.comm_d_proofs
    if tree == "comm_r_last":
        return v.comm_r_last_proof
    if tree == "comm_c":
        return rc.c_x.inclusion_proof
    if isinstance(tree, tuple) and len(tree) == 2 and tree[0] in ("drg", "exp") and _is_index(tree[1]):
        group = rc.drg_parents if tree[0] == "drg" else rc.exp_parents
        p = _ix(tree[1])
        return group[p].inclusion_proof if 0 <= p < len(group) else None
    return None


def _checked_levels(part: Partition, ci: int, tree: Hashable) -> tuple[PathElement, ...]:
    """The path's levels, after checking each against the tree's arity (siblings and index)."""
    path = _path(part.proofs[ci], tree)
    if path is None:
        raise SourceError(f"partition {part.k}, challenge {ci}: no path {tree!r}")
    arities = level_arities(part.shape, tree)
    levels = path.levels()
    if len(levels) != len(arities):
        raise SourceError(f"partition {part.k}, challenge {ci}: the {tree} path has {len(levels)} "
                          f"levels, the tree {len(arities)}")
    for level, (el, arity) in enumerate(zip(levels, arities)):
        if len(el.hashes) != arity - 1 or not 0 <= el.index < arity:
            raise SourceError(f"partition {part.k}, challenge {ci}: the {tree} path's level {level} "
                              f"has {len(el.hashes)} siblings and index {el.index} (arity {arity})")
    return levels


def _node(part: Partition, ci: int) -> int:
    """The challenge as the circuit takes it: ``labeling_proofs[0].node`` (a u64)."""
    lp = part.proofs[ci].labeling_proofs
    if not lp:
        raise SourceError(f"partition {part.k}, challenge {ci}: no labeling proofs (the challenge "
                          "is read from the first)")
    node = lp[0].node
    if not 0 <= node < 1 << CHALLENGE_BITS:
        raise SourceError(f"partition {part.k}, challenge {ci}: challenge {node} is not a u64")
    return node


def _column_rows(part: Partition, ci: int, group: str, p: int) -> tuple[bytes, ...]:
    rc = part.proofs[ci].replica_column_proofs
    cols = rc.drg_parents if group == "drg" else rc.exp_parents
    want = part.shape.base_degree if group == "drg" else part.shape.exp_degree
    if len(cols) != want:
        raise SourceError(f"partition {part.k}, challenge {ci}: {len(cols)} {group} parent columns, "
                          f"the graph has {want}")
    rows = cols[p].column.rows
    if len(rows) != part.shape.layers:
        raise SourceError(f"partition {part.k}, challenge {ci}: {group} parent {p}'s column has "
                          f"{len(rows)} rows, the sector {part.shape.layers} layers")
    return rows


# ---------------------------------------------------------------- one source, the reference
def _fr(b: bytes, src: Source) -> int:
    """The 32 bytes as Filecoin's ``Into<Fr>`` reads them (engine.c2.public.domain_to_fr); an
    error names the source."""
    try:
        return domain_to_fr(b, f"{src}: the value")
    except StatementError as e:
        raise SourceError(str(e)) from None


def _ix(x: object) -> int:
    """A Source's index part as an int (checked by :func:`_in` first)."""
    return int(x)  # type: ignore[call-overload]


def _in(x: object, n: int) -> bool:
    return _is_index(x) and 0 <= _ix(x) < n


def _bad(src: object, part: Partition | None = None, why: str = "names nothing") -> SourceError:
    where = f" in partition {part.k}" if part is not None else ""
    return SourceError(f"source {src!r}{where}: {why}")


def value_of(src: Source, part: Partition) -> int:
    """The value ``src`` names in the partition, read straight from its vanilla proofs."""
    if not isinstance(src, tuple) or not src or not isinstance(src[0], str):
        raise _bad(src, part, "not a Source (a tuple starting with its kind)")
    head, n = src[0], len(src)
    if head in GLOBALS and n == 1:
        return _fr(getattr(part, head), src)
    if head not in ("data_leaf", "challenge_bit", "challenge_input", "column", "path", "path_input"):
        why = f"a {head!r} Source has no other parts" if head in GLOBALS else f"unknown kind {head!r}"
        raise _bad(src, part, why)
    if n < 2 or not _in(src[1], len(part.proofs)):
        raise _bad(src, part, f"challenge position outside 0..{len(part.proofs) - 1}")
    ci = _ix(src[1])
    v = part.proofs[ci]
    if head == "data_leaf" and n == 2:
        return _fr(v.comm_d_proofs.leaf, src)
    if head == "challenge_input" and n == 2:
        return _node(part, ci)
    if head == "challenge_bit" and n == 3:
        if not _in(src[2], CHALLENGE_BITS):
            raise _bad(src, part, f"bit outside 0..{CHALLENGE_BITS - 1}")
        return (_node(part, ci) >> _ix(src[2])) & 1
    if head == "column" and n == 5:
        _, _, group, p, row = src
        count = part.shape.base_degree if group == "drg" else part.shape.exp_degree
        if group not in ("drg", "exp") or not _in(p, count) or not _in(row, part.shape.layers):
            raise _bad(src, part, f"no such column entry (groups drg 0..{part.shape.base_degree - 1}, "
                                  f"exp 0..{part.shape.exp_degree - 1}; rows 0..{part.shape.layers - 1})")
        return _fr(_column_rows(part, ci, group, _ix(p))[_ix(row)], src)
    if head == "path" and n == 6:
        _, _, tree, level, kind, j = src
        if tree not in tree_names(part.shape):
            raise _bad(src, part, f"no tree {tree!r}")
        arities = level_arities(part.shape, tree)
        if not _in(level, len(arities)):
            raise _bad(src, part, f"level outside 0..{len(arities) - 1}")
        arity = arities[_ix(level)]
        el = _checked_levels(part, ci, tree)[_ix(level)]
        if kind == "sibling" and _in(j, arity - 1):
            return _fr(el.hashes[_ix(j)], src)
        if kind == "bit" and _in(j, arity.bit_length() - 1):
            return (el.index >> _ix(j)) & 1
        raise _bad(src, part, f"a level of arity {arity} has siblings 0..{arity - 2} and bits "
                              f"0..{arity.bit_length() - 2}")
    if head == "path_input" and n == 4:
        _, _, tree, chunk = src
        if tree not in tree_names(part.shape):
            raise _bad(src, part, f"no tree {tree!r}")
        arities = level_arities(part.shape, tree)
        bits = sum(a.bit_length() - 1 for a in arities)
        if not _in(chunk, -(-bits // FR_CAPACITY)):
            raise _bad(src, part, f"a path of {bits} bits packs into {-(-bits // FR_CAPACITY)} input(s)")
        index, shift = 0, 0
        for el, arity in zip(_checked_levels(part, ci, tree), arities):
            index |= el.index << shift
            shift += arity.bit_length() - 1
        return (index >> (FR_CAPACITY * _ix(chunk))) & ((1 << FR_CAPACITY) - 1)
    raise _bad(src, part, f"a {head!r} Source has a different form (engine/c2/cs.py lists them)")


# ---------------------------------------------------------------- the circuit's sources
def stacked_sources(proof: SealProof | StackedShape) -> tuple[list[Source], list[Source]]:
    """Every Source of one partition circuit in allocation order, and every public input's:
    what ``StackedCircuit::synthesize`` (proof.rs) and ``Proof::synthesize`` (params.rs)
    allocate. Aux: replica_id, comm_d, comm_r, comm_r_last, comm_c, then per challenge the data
    leaf, its tree_d path, each base then expander parent's column rows and tree_c path, the
    challenge's 64 bits, the tree_r_last path and the challenge column's tree_c path (a path
    level: its index bits, then its siblings). Inputs: replica_id, comm_d, comm_r, then per
    challenge each path's packed bits in that order, the challenge after the parents'."""
    shape = StackedShape.of(proof)
    aux: list[Source] = [(g,) for g in GLOBALS]
    inputs: list[Source] = [("replica_id",), ("comm_d",), ("comm_r",)]

    def path(ci: int, tree: Hashable) -> None:
        arities = level_arities(shape, tree)
        for level, arity in enumerate(arities):
            aux.extend(("path", ci, tree, level, "bit", b) for b in range(arity.bit_length() - 1))
            aux.extend(("path", ci, tree, level, "sibling", j) for j in range(arity - 1))
        bits = sum(a.bit_length() - 1 for a in arities)
        inputs.extend(("path_input", ci, tree, c) for c in range(-(-bits // FR_CAPACITY)))

    for ci in range(shape.challenges):
        aux.append(("data_leaf", ci))
        path(ci, "comm_d")
        for group, count in (("drg", shape.base_degree), ("exp", shape.exp_degree)):
            for p in range(count):
                aux.extend(("column", ci, group, p, row) for row in range(shape.layers))
                path(ci, (group, p))
        aux.extend(("challenge_bit", ci, i) for i in range(CHALLENGE_BITS))
        inputs.append(("challenge_input", ci))
        path(ci, "comm_r_last")
        path(ci, "comm_c")
    return aux, inputs


# ---------------------------------------------------------------- many sources, fast
@dataclass(frozen=True)
class Layout:
    """Where each value of a partition sits in its two tables. Values (32 bytes): the five
    globals, then per challenge a block of the data leaf, the columns (drg then exp, parent by
    parent, row by row) and every path's siblings (tree by tree, level by level). Indices: per
    challenge the challenge, then each tree's path index (its levels' position bits
    concatenated, leaf level lowest)."""

    shape: StackedShape
    trees: tuple[Hashable, ...]
    sibling_offset: dict[Hashable, tuple[int, ...]]  # per tree, per level: first sibling's row in a block
    bit_offset: dict[Hashable, tuple[int, ...]]  # per tree, per level: its first bit in the path index
    block: int  # value rows per challenge
    slots: int  # index slots per challenge

    @classmethod
    def of(cls, shape: StackedShape) -> Layout:
        trees = tuple(tree_names(shape))
        row = 1 + (shape.base_degree + shape.exp_degree) * shape.layers
        sib: dict[Hashable, tuple[int, ...]] = {}
        bit: dict[Hashable, tuple[int, ...]] = {}
        for t in trees:
            s_offs, b_offs, b = [], [], 0
            for arity in level_arities(shape, t):
                s_offs.append(row)
                b_offs.append(b)
                row += arity - 1
                b += arity.bit_length() - 1
            sib[t], bit[t] = tuple(s_offs), tuple(b_offs)
        return cls(shape, trees, sib, bit, row, 1 + len(trees))

    def column_row(self, group: str, p: int, row: int) -> int:
        first = 0 if group == "drg" else self.shape.base_degree
        return 1 + (first + p) * self.shape.layers + row


def _tables(part: Partition) -> tuple[np.ndarray, np.ndarray]:
    lay = Layout.of(part.shape)
    values: list[bytes] = [part.replica_id, part.comm_d, part.comm_r, part.comm_r_last, part.comm_c]
    indices: list[int] = []
    for ci, v in enumerate(part.proofs):
        values.append(v.comm_d_proofs.leaf)
        for group, count in (("drg", part.shape.base_degree), ("exp", part.shape.exp_degree)):
            for p in range(count):
                values.extend(_column_rows(part, ci, group, p))
        indices.append(_node(part, ci))
        for t in lay.trees:
            index, shift = 0, 0
            for el, arity in zip(_checked_levels(part, ci, t), level_arities(part.shape, t)):
                values.extend(el.hashes)
                index |= el.index << shift
                shift += arity.bit_length() - 1
            indices.append(index)
    bad = next((i for i, b in enumerate(values) if len(b) != 32), None)
    if bad is not None:
        raise SourceError(f"partition {part.k}: a value of {len(values[bad])} bytes, not 32")
    table = np.frombuffer(b"".join(values), np.uint8).reshape(len(values), 32)
    assert len(values) == len(GLOBALS) + lay.block * len(part.proofs)
    return table, np.array(indices, np.uint64)


_VALUE, _BIT, _INDEX = 0, 1, 2


@dataclass(frozen=True)
class SourcePlan:
    """A list of Sources compiled against a partition shape: per Source its kind (a 32-byte
    value, a bit of an index, a whole index), its row or slot, and its bit."""

    shape: StackedShape
    sources: tuple[Source, ...]
    kind: np.ndarray  # uint8[n]
    where: np.ndarray  # int64[n]: value row or index slot
    shift: np.ndarray  # uint64[n]: a bit's position in its index


def compile_plan(sources: Sequence[Source], proof: SealProof | StackedShape) -> SourcePlan:
    """Check every Source's form against the shape and place it in the tables' layout."""
    shape = StackedShape.of(proof)
    lay = Layout.of(shape)
    n = len(sources)
    kind = np.empty(n, np.uint8)
    where = np.empty(n, np.int64)
    shift = np.zeros(n, np.uint64)
    g = len(GLOBALS)
    for i, src in enumerate(sources):
        kind[i], where[i], shift[i] = _place(src, shape, lay, g)
    return SourcePlan(shape, tuple(sources), kind, where, shift)


def _place(src: Source, shape: StackedShape, lay: Layout, g: int) -> tuple[int, int, int]:
    if not isinstance(src, tuple) or not src or not isinstance(src[0], str):
        raise _bad(src, None, "not a Source (a tuple starting with its kind)")
    head, n = src[0], len(src)
    if head in GLOBALS and n == 1:
        return _VALUE, GLOBALS.index(head), 0
    if n < 2 or not _in(src[1], shape.challenges):
        raise _bad(src, None, f"unknown kind or challenge position outside 0..{shape.challenges - 1}")
    ci = _ix(src[1])
    block, slot = g + ci * lay.block, ci * lay.slots
    if head == "data_leaf" and n == 2:
        return _VALUE, block, 0
    if head == "challenge_input" and n == 2:
        return _INDEX, slot, 0
    if head == "challenge_bit" and n == 3 and _in(src[2], CHALLENGE_BITS):
        return _BIT, slot, _ix(src[2])
    if head == "column" and n == 5:
        _, _, group, p, row = src
        count = shape.base_degree if group == "drg" else shape.exp_degree
        if group in ("drg", "exp") and _in(p, count) and _in(row, shape.layers):
            return _VALUE, block + lay.column_row(group, _ix(p), _ix(row)), 0
    if head in ("path", "path_input") and src[2:3] and _known_tree(src[2], lay):
        tree = src[2]
        arities = level_arities(shape, tree)
        t_slot = slot + 1 + lay.trees.index(tree)
        if head == "path" and n == 6 and _in(src[3], len(arities)):
            level, j, arity = _ix(src[3]), src[5], arities[_ix(src[3])]
            if src[4] == "sibling" and _in(j, arity - 1):
                return _VALUE, block + lay.sibling_offset[tree][level] + _ix(j), 0
            if src[4] == "bit" and _in(j, arity.bit_length() - 1):
                return _BIT, t_slot, lay.bit_offset[tree][level] + _ix(j)
        bits = sum(a.bit_length() - 1 for a in arities)
        if head == "path_input" and n == 4 and _in(src[3], -(-bits // FR_CAPACITY)):
            if bits > 64:
                raise _bad(src, None, f"a path of {bits} bits does not fit one index slot")
            return _INDEX, t_slot, 0
    raise _bad(src, None, f"not in a {shape.nodes}-node partition's vocabulary (engine/c2/cs.py)")


def _known_tree(tree: object, lay: Layout) -> bool:
    try:
        return tree in lay.trees
    except TypeError:  # an unhashable tree name
        return False


def _gather(plan: SourcePlan | Sequence[Source], part: Partition) -> tuple[SourcePlan, np.ndarray]:
    """Canonical values uint64[n, 4] (little-endian limbs, not Montgomery)."""
    if not isinstance(plan, SourcePlan):
        plan = compile_plan(plan, part.shape)
    if plan.shape != part.shape:
        raise SourceError(f"the plan is for a {plan.shape.nodes}-node circuit, the partition "
                          f"{part.proof.name}'s")
    table, indices = part.tables
    limbs = table.view("<u8").reshape(-1, 4)
    out = np.zeros((len(plan.kind), 4), np.uint64)
    m = plan.kind == _VALUE
    out[m] = limbs[plan.where[m]]
    m = plan.kind == _BIT
    out[m, 0] = (indices[plan.where[m]] >> plan.shift[m]) & np.uint64(1)
    m = plan.kind == _INDEX
    out[m, 0] = indices[plan.where[m]]
    bad = _not_below_r(out)
    if bad.any():
        i = int(np.argmax(bad))
        raise SourceError(f"{plan.sources[i]} in partition {part.k}: value is not a field element "
                          "(not below r)")
    return plan, out


def _not_below_r(x: np.ndarray) -> np.ndarray:
    """Rows of uint64[n, 4] whose value is >= r, compared limb by limb from the top."""
    ge = np.ones(len(x), bool)  # equal so far counts as >= (equal to r is not below it)
    for limb in range(4):
        a, r = x[:, limb], _R_LIMBS[limb]
        ge = (a > r) | ((a == r) & ge)
    return ge


def assign(plan: SourcePlan | Sequence[Source], part: Partition) -> list[int]:
    """Every Source's value as a canonical int, in order."""
    _, out = _gather(plan, part)
    raw = np.ascontiguousarray(out, "<u8").tobytes()
    return [int.from_bytes(raw[i:i + 32], "little") for i in range(0, len(raw), 32)]


def assign_mont(plan: SourcePlan | Sequence[Source], part: Partition) -> np.ndarray:
    """Every Source's value in Fr storage (uint64[n, 4], Montgomery), as the witness holds it."""
    from kernels.cpu.fr import FR_R2
    from kernels.cpu.fr_vec import mul

    _, out = _gather(plan, part)
    r2 = np.empty_like(out)
    r2[:] = np.array(FR_R2, np.uint64)
    return mul(out, r2) if len(out) else out
