"""The exact size of Filecoin's PoRep partition circuit (rust-fil-proofs' ``StackedCircuit``),
counted gadget by gadget the way bellperson synthesizes it, without building it.

Every number here is derived from the gadget code it models (file and function named in each
docstring); none is fitted to a total. The totals Filecoin's own tests assert are the check:
``storage-proofs-porep/tests/stacked_circuit.rs`` (8 nodes, 2 layers, 1 challenge, tree 8-0-0:
22 inputs, 1,199,620 constraints) and the 32 GiB V1_1 partition (fil-proofs-tooling's
``circuitinfo``: 130,278,541 constraints and 328 inputs; 130,278,869 rows in the Groth16 R1CS,
which adds one per input).

Two gadgets cannot be counted by a closed formula, because bellperson folds constant bits:
SHA-256 (a label hashes a message where the layer index and the padding are constants, and
each 255-bit field element leaves one constant bit in its byte) and the MultiEq batching of its
additions. :func:`sha256_constraints` therefore runs bellperson's SHA-256 gadget symbolically,
each bit known as constant 0, constant 1 or a variable, and counts what it would enforce.
Poseidon's round numbers are computed by neptune's own rule (``round_numbers.rs``).

Sources (rust-fil-proofs unless named): ``storage-proofs-porep/src/stacked/circuit/{proof.rs,
params.rs, column.rs, create_label.rs, hash.rs}``, ``storage-proofs-core/src/gadgets/{por.rs,
insertion.rs, uint64.rs, encode.rs, constraint.rs, variables.rs}``, ``filecoin-hashers/src/
{poseidon.rs, sha256.rs}``; bellperson ``src/gadgets/{sha256.rs, uint32.rs, multieq.rs,
multipack.rs}``; bellpepper-core ``src/gadgets/{boolean.rs, num.rs}``; neptune ``src/circuit.rs``
(the legacy circuit, the one ``neptune::circuit::poseidon_hash`` is) and ``src/round_numbers.rs``.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from functools import cache

import numpy as np

from engine.circuit.sha256 import IV, K
from engine.seal.registry import BASE_DEGREE, EXP_DEGREE, SealProof

FR_NUM_BITS = 255
"""Bits of a BLS12-381 scalar (``PrimeField::NUM_BITS``): ``to_bits_le`` allocates this many."""

FR_CAPACITY = 254
"""``PrimeField::CAPACITY``: bits one packed input or one MultiEq constraint holds."""

TOTAL_PARENTS = 37
"""Parent entries a label hashes (``stacked/vanilla``'s TOTAL_PARENTS)."""

# ---------------------------------------------------------------------------- small gadgets


def to_bits_le_constraints() -> int:
    """``AllocatedNum::to_bits_le`` (bellpepper-core num.rs): one boolean constraint per
    allocated bit (``field_into_allocated_bits_le``, NUM_BITS bits) and one unpacking
    constraint."""
    return FR_NUM_BITS + 1


def pack_into_inputs_constraints(bits: int) -> int:
    """``multipack::pack_into_inputs`` (bellperson multipack.rs): one input and one packing
    constraint per CAPACITY-bit chunk."""
    return -(-bits // FR_CAPACITY)


def insert_constraints(size: int) -> int:
    """``insertion::insert`` of one element among ``size - 1`` (storage-proofs-core
    insertion.rs): hand-built ``insert_2/4/8`` (2 picks; 8 picks; a nor, an and and 20 picks),
    otherwise ``size`` selections of ``size - 1`` picks each; a pick is one constraint."""
    if size == 2:
        return 2
    if size == 4:
        return 8
    if size == 8:
        return 2 + 20
    return size * (size - 1)


def insert_aux(size: int) -> int:
    """Aux variables ``insertion::insert`` allocates: one per ``pick`` (its result) and one each
    for insert_8's ``AllocatedBit::nor`` and ``::and``, so one per constraint."""
    return insert_constraints(size)


# ---------------------------------------------------------------------------- Poseidon


@cache
def poseidon_round_numbers(arity: int) -> tuple[int, int]:
    """(R_F, R_P) of neptune's Strength::Standard for this arity (width t = arity + 1):
    ``round_numbers.rs`` ``calc_round_numbers(t, security_margin=true)``, the cheapest secure
    (R_F, R_P) over the Poseidon paper's inequalities with R_F + 2 and R_P · 1.075 rounded up,
    in f32 as neptune computes it."""
    t = arity + 1
    f32 = np.float32
    n, m = f32(256.0), f32(128.0)
    tf = f32(t)
    rf_stat = 6 if m <= (n - f32(3.0)) * (tf + f32(1.0)) else 10
    best: tuple[int, int, int] | None = None  # (sboxes, rf, rp)
    for rp_test in range(4, 200):
        rp = f32(rp_test)
        rf_interp = f32(0.43) * m + np.log2(tf) - rp
        rf_grob_1 = f32(0.21) * n - rp
        rf_grob_2 = (f32(0.14) * n - f32(1.0) - rp) / (tf - f32(1.0))
        rf_max = max(rf_stat, *(int(math.ceil(float(x))) for x in (rf_interp, rf_grob_1, rf_grob_2)))
        # the smallest even R_F >= 2 meeting the bound is the cheapest for this R_P
        rf_test = max(2, rf_max + (rf_max & 1))
        if rf_test > 1000:
            continue
        rf_final = rf_test + 2
        rp_final = int(math.ceil(float(f32(1.075) * f32(rp_test))))
        key = (t * rf_final + rp_final, rf_final, rp_final)
        if best is None or key[:2] < best[:2]:
            best = key
    assert best is not None
    return best[1], best[2]


def poseidon_constraints(arity: int) -> int:
    """neptune's legacy ``poseidon_hash`` circuit (circuit.rs) over ``arity`` allocated inputs:
    the first full round costs 3 per input (``square_sum``, square, ``mul_sum``; the domain tag's
    S-box is a constant); each later full round re-allocates every one of the t = arity + 1
    elements (1) and raises it to the 5th power (3); each partial round does so for one element;
    the result is allocated once more (1)."""
    rf, rp = poseidon_round_numbers(arity)
    t = arity + 1
    return 3 * arity + (rf - 1) * t * 4 + rp * 4 + 1


def poseidon_aux(arity: int) -> int:
    """Aux variables of neptune's legacy ``poseidon_hash`` (circuit.rs): every row it enforces
    comes with the one variable it defines (``square_sum``, ``square`` and ``mul_sum`` each
    allocate their result; ``ensure_allocated`` of a linear combination allocates it), and
    nothing is allocated without a row, so as many as its constraints."""
    return poseidon_constraints(arity)


def por_aux(levels: list[int]) -> int:
    """Aux variables of ``PoRCircuit::synthesize`` with the leaf and root already allocated
    (``Root::Var``, as ``enforce_inclusion`` passes them; por.rs): per level its index bits
    (``AllocatedBit::alloc``), its arity - 1 siblings (``AllocatedNum::alloc``), the insertion
    and the Poseidon node. The packed path bits are public inputs, not aux."""
    return sum((a.bit_length() - 1) + (a - 1) + insert_aux(a) + poseidon_aux(a) for a in levels)


# ---------------------------------------------------------------------------- SHA-256

_F, _T, _V = 0, 1, 2  # a bit known as constant false, constant true, or a variable
Word = tuple[int, ...]  # 32 bits, least significant first (bellperson UInt32's order)



def _const_word(v: int) -> Word:
    return tuple((v >> i) & 1 for i in range(32))


def _not(a: int) -> int:
    return a if a == _V else 1 - a


class _Sha256Counter:
    """bellperson's SHA-256 compression over symbolic bits, counting constraints as the gadget
    enforces them (boolean.rs' constant folding, uint32.rs' addmany, multieq.rs' batching)."""

    def __init__(self) -> None:
        self.n = 0
        self.bits_used = 0

    # bellpepper-core Boolean: every op on two variables is one constraint, constants fold
    def xor(self, a: int, b: int) -> int:
        if a != _V:
            return b if a == _F else _not(b)
        if b != _V:
            return a if b == _F else _not(a)
        self.n += 1
        return _V

    def and_(self, a: int, b: int) -> int:
        if a == _F or b == _F:
            return _F
        if a == _T:
            return b
        if b == _T:
            return a
        self.n += 1
        return _V

    def ch(self, a: int, b: int, c: int) -> int:
        if a != _V and b != _V and c != _V:
            return (a & b) ^ ((1 - a) & c)
        if a == _F:
            return c
        if b == _F:
            return self.and_(_not(a), c)
        if c == _F:
            return self.and_(a, b)
        if c == _T:
            return _not(self.and_(a, _not(b)))
        if b == _T:
            return _not(self.and_(_not(a), _not(c)))
        self.n += 1  # one allocated bit, one "ch computation" constraint
        return _V

    def maj(self, a: int, b: int, c: int) -> int:
        if a != _V and b != _V and c != _V:
            return (a & b) ^ (a & c) ^ (b & c)
        if a == _F:
            return self.and_(b, c)
        if b == _F:
            return self.and_(a, c)
        if c == _F:
            return self.and_(a, b)
        if c == _T:
            return _not(self.and_(_not(a), _not(b)))
        if b == _T:
            return _not(self.and_(_not(a), _not(c)))
        if a == _T:
            return _not(self.and_(_not(b), _not(c)))
        self.n += 2  # "b and c", then the "maj computation" constraint
        return _V

    # bellperson UInt32
    def wxor(self, a: Word, b: Word) -> Word:
        return tuple(self.xor(x, y) for x, y in zip(a, b))

    @staticmethod
    def rotr(a: Word, by: int) -> Word:
        return a[by:] + a[:by]

    @staticmethod
    def shr(a: Word, by: int) -> Word:
        return a[by:] + (_F,) * by

    def addmany(self, ops: list[Word]) -> Word:
        if all(b != _V for w in ops for b in w):
            total = sum(sum(b << i for i, b in enumerate(w)) for w in ops)
            return _const_word(total & 0xFFFFFFFF)
        width = (len(ops) * 0xFFFFFFFF).bit_length()
        self.n += width  # one boolean constraint per allocated result bit
        if FR_CAPACITY <= self.bits_used + width:  # MultiEq::enforce_equal
            self.n += 1
            self.bits_used = 0
        self.bits_used += width
        return (_V,) * 32

    def compress(self, block: tuple[int, ...], state: tuple[Word, ...]) -> tuple[Word, ...]:
        """``sha256_compression_function``: the message schedule, 64 rounds with the additions
        of a and e deferred into one addmany each, and the final additions; the MultiEq's last
        batch is enforced when it is dropped at the end of the block."""
        self.bits_used = 0
        w = [tuple(reversed(block[32 * i : 32 * i + 32])) for i in range(16)]
        for i in range(16, 64):
            s0 = self.wxor(self.wxor(self.rotr(w[i - 15], 7), self.rotr(w[i - 15], 18)), self.shr(w[i - 15], 3))
            s1 = self.wxor(self.wxor(self.rotr(w[i - 2], 17), self.rotr(w[i - 2], 19)), self.shr(w[i - 2], 10))
            w.append(self.addmany([w[i - 16], s0, w[i - 7], s1]))
        a_ops: list[Word] | None = None
        e_ops: list[Word] | None = None
        a, b, c, d, e, f, g, h = state
        for i in range(64):
            if e_ops is not None:
                e = self.addmany(e_ops)
            s1 = self.wxor(self.wxor(self.rotr(e, 6), self.rotr(e, 11)), self.rotr(e, 25))
            ch = tuple(self.ch(x, y, z) for x, y, z in zip(e, f, g))
            temp1 = [h, s1, ch, _const_word(K[i]), w[i]]
            if a_ops is not None:
                a = self.addmany(a_ops)
            s0 = self.wxor(self.wxor(self.rotr(a, 2), self.rotr(a, 13)), self.rotr(a, 22))
            maj = tuple(self.maj(x, y, z) for x, y, z in zip(a, b, c))
            h, g, f = g, f, e
            e_ops = temp1 + [d]
            d, c, b = c, b, a
            a_ops = temp1 + [s0, maj]
        assert a_ops is not None and e_ops is not None
        out = (
            self.addmany(a_ops + [state[0]]),
            self.addmany([state[1], b]),
            self.addmany([state[2], c]),
            self.addmany([state[3], d]),
            self.addmany(e_ops + [state[4]]),
            self.addmany([state[5], f]),
            self.addmany([state[6], g]),
            self.addmany([state[7], h]),
        )
        if self.bits_used > 0:
            self.n += 1
        return out


@cache
def _compress_count(block: tuple[int, ...], state: tuple[Word, ...]) -> tuple[int, tuple[Word, ...]]:
    counter = _Sha256Counter()
    out = counter.compress(block, state)
    return counter.n, out


def sha256_count(message: tuple[int, ...]) -> tuple[int, tuple[int, ...]]:
    """(constraints, digest bits) of bellperson's ``sha256`` gadget over ``message``, a bit
    string (big-endian within bytes, as the gadget takes it) where each bit is 0 or 1 for a
    constant or 2 for a variable: Merkle-Damgard padding with constants, then one compression
    per 512-bit block from the constant IV. A digest bit is 0/1 where the gadget folds it to a
    constant, so an all-constant message yields its real SHA-256 at no cost."""
    if len(message) % 8:
        raise ValueError("sha256 input must be whole bytes")
    if any(b not in (_F, _T, _V) for b in message):
        raise ValueError("sha256 message bits are 0, 1 (constants) or 2 (a variable)")
    length = len(message)
    pad_zeros = (-(length + 1 + 64)) % 512
    padded = message + (_T,) + (_F,) * pad_zeros + tuple((length >> i) & 1 for i in range(63, -1, -1))
    state = tuple(_const_word(v) for v in IV)
    total = 0
    for off in range(0, len(padded), 512):
        n, state = _compress_count(padded[off : off + 512], state)
        total += n
    return total, tuple(b for word in state for b in reversed(word))


def sha256_constraints(message: tuple[int, ...]) -> int:
    """Constraints of bellperson's ``sha256`` gadget over ``message`` (see :func:`sha256_count`)."""
    return sha256_count(message)[0]


def _field_bits_be() -> tuple[int, ...]:
    """A field element's bits as Filecoin hashes them: ``to_bits_le`` (255 variables) padded to
    256 with a constant and byte-reversed (``reverse_bit_numbering``)."""
    le = [_V] * FR_NUM_BITS + [_F]
    return tuple(b for i in range(0, 256, 8) for b in reversed(le[i : i + 8]))


def label_message(layer: int) -> tuple[int, ...]:
    """The 1248-byte message ``create_label_circuit`` hashes for ``layer``: replica_id bits, the
    layer (a u32 constant, big-endian), the challenge (64 allocated bits, big-endian), zero
    padding to 64 bytes, then 37 parents of 256 bits each."""
    field = _field_bits_be()
    layer_be = tuple((layer >> i) & 1 for i in range(31, -1, -1))
    head = field + layer_be + (_V,) * 64
    head += (_F,) * (512 - len(head))
    return head + field * TOTAL_PARENTS


def label_constraints(layer: int) -> int:
    """``create_label_circuit``: SHA-256 of :func:`label_message` and one ``pack_bits``."""
    return sha256_constraints(label_message(layer)) + 1


def sha256_node_constraints(arity: int) -> int:
    """``Sha256Function::hash_multi_leaf_circuit`` (filecoin-hashers sha256.rs): each child
    unpacked by ``to_bits_le`` and byte-reversed, SHA-256 of the concatenation, one pack."""
    return arity * to_bits_le_constraints() + sha256_constraints(_field_bits_be() * arity) + 1


# ---------------------------------------------------------------------------- shape and rows


@dataclass(frozen=True)
class StackedShape:
    """What fixes the partition circuit's size: nodes, layers, challenges per partition, the
    (base, sub, top) arities of tree_c / tree_r_last, and the graph degrees."""

    nodes: int
    layers: int
    challenges: int
    tree_arities: tuple[int, int, int]
    base_degree: int = BASE_DEGREE
    exp_degree: int = EXP_DEGREE

    @classmethod
    def of(cls, proof: SealProof | StackedShape) -> StackedShape:
        """The shape of one partition of a registered seal proof (a shape passes through)."""
        if isinstance(proof, StackedShape):
            return proof
        return cls(proof.nodes, proof.layers, proof.challenges, proof.tree_arities,
                   proof.base_degree, proof.exp_degree)

    def tree_levels(self) -> list[int]:
        """The arity of each level of a tree_c / tree_r_last path, leaf first (``AuthPath::
        blank``: base levels over nodes / (sub · top) leaves, then one sub and one top level)."""
        base, sub, top = self.tree_arities
        leaves = self.nodes // (sub or 1) // (top or 1)
        levels = round(math.log(leaves, base))
        if base ** levels != leaves:
            raise ValueError(f"{self.nodes} nodes do not fill a {base}-{sub}-{top} tree")
        return [base] * levels + ([sub] if sub else []) + ([top] if top else [])

    def tree_d_levels(self) -> int:
        """Levels of tree_d's binary SHA-256 path."""
        if self.nodes < 2 or self.nodes & (self.nodes - 1):
            raise ValueError(f"nodes must be a power of two, not {self.nodes}")
        return self.nodes.bit_length() - 1


TEST_SHAPE = StackedShape(nodes=8, layers=2, challenges=1, tree_arities=(8, 0, 0))
"""rust-fil-proofs' ``test_stacked_input_circuit_poseidon_base_8`` shape."""


@dataclass(frozen=True)
class Row:
    """``uses`` uses of one gadget at one place of the circuit, ``per_use`` constraints each."""

    part: str
    gadget: str
    uses: int
    per_use: int

    @property
    def constraints(self) -> int:
        return self.uses * self.per_use


@dataclass(frozen=True)
class CircuitCount:
    """The partition circuit's size: public inputs (bellperson's ``num_inputs``, the constant
    ONE included) and constraints, as rows per place and gadget."""

    shape: StackedShape
    public_inputs: int
    rows: tuple[Row, ...]

    @property
    def constraints(self) -> int:
        """Constraints the circuit synthesizes (what bellperson's TestConstraintSystem and
        MetricCS count, and Filecoin's circuit tests assert)."""
        return sum(r.constraints for r in self.rows)

    @property
    def r1cs_constraints(self) -> int:
        """The Groth16 R1CS's rows: the synthesized constraints plus one ``x · 0 = 0`` per
        public input, ONE included, which bellperson's parameter generator and prover append
        (groth16/generator.rs, prover/native.rs: "input constraints to ensure full density of
        IC query"). This is the count a parameter file's key and a proof's domain are for."""
        return self.constraints + self.public_inputs

    def by_gadget(self) -> dict[str, int]:
        """Constraints per gadget kind, summed over every place it is used."""
        out: dict[str, int] = defaultdict(int)
        for r in self.rows:
            out[r.gadget] += r.constraints
        return dict(out)

    def by_part(self) -> dict[str, int]:
        """Constraints per place in the circuit (what each part of the statement costs)."""
        out: dict[str, int] = defaultdict(int)
        for r in self.rows:
            out[r.part] += r.constraints
        return dict(out)

    def table(self) -> str:
        """A plain-text table of the rows and the total."""
        lines = [f"{'part':<34} {'gadget':<28} {'uses':>8} {'each':>8} {'constraints':>13}"]
        for r in self.rows:
            lines.append(f"{r.part:<34} {r.gadget:<28} {r.uses:>8,} {r.per_use:>8,} {r.constraints:>13,}")
        lines.append(f"{'synthesized':<34} {'':<28} {'':>8} {'':>8} {self.constraints:>13,}")
        lines.append(f"{'public inputs (x·0 = 0)':<34} {'input constraint':<28} {self.public_inputs:>8,} "
                     f"{1:>8} {self.public_inputs:>13,}")
        lines.append(f"{'R1CS total':<34} {'':<28} {'':>8} {'':>8} {self.r1cs_constraints:>13,}")
        return "\n".join(lines)


def _poseidon_path(part: str, levels: list[int], uses: int) -> list[Row]:
    """``PoRCircuit::synthesize`` with a private root for a Poseidon tree (por.rs): per level
    its index bits (``AllocatedBit::alloc``), the insertion and the hash; then the path bits
    packed into inputs and the root equality."""
    rows: list[Row] = []
    for arity in sorted(set(levels), reverse=True):
        n = levels.count(arity)
        rows.append(Row(part, "path index bits", uses * n, arity.bit_length() - 1))
        rows.append(Row(part, f"insert_{arity}", uses * n, insert_constraints(arity)))
        rows.append(Row(part, f"Poseidon_{arity}", uses * n, poseidon_constraints(arity)))
    bits = sum(a.bit_length() - 1 for a in levels)
    rows.append(Row(part, "path packing + root equality", uses, pack_into_inputs_constraints(bits) + 1))
    return rows


def por_constraints(levels: list[int], private: bool = True) -> int:
    """``PoRCircuit::synthesize`` (por.rs) for a Poseidon tree whose path has a level of each
    arity in ``levels`` (leaf first): what :func:`stacked_constraints` charges per inclusion
    proof, plus the root's ``inputize`` when the root is public (Filecoin's PoR tests)."""
    rows = _poseidon_path("", levels, 1)
    return sum(r.constraints for r in rows) + (0 if private else 1)


def _column_hash(layers: int) -> int:
    """``hash_single_column`` (hash.rs): Poseidon of arity 2 or 11 only."""
    if layers not in (2, 11):
        raise ValueError(f"Filecoin's column hash takes 2 or 11 layers, not {layers}")
    return poseidon_constraints(layers)


def stacked_constraints(proof: SealProof | StackedShape) -> CircuitCount:
    """The constraints of one partition of ``StackedCircuit::synthesize`` (proof.rs) and of
    ``Proof::synthesize`` per challenge (params.rs), by place and gadget."""
    s = StackedShape.of(proof)
    k, L = s.challenges, s.layers
    parents = s.base_degree + s.exp_degree
    levels = s.tree_levels()
    d_levels = s.tree_d_levels()
    col = _column_hash(L)
    rows: list[Row] = [
        Row("replica_id, comm_d, comm_r", "inputize", 3, 1),
        Row("replica_id", "to_bits_le", 1, to_bits_le_constraints()),
        Row("comm_r = H(comm_c, comm_r_last)", "Poseidon_2", 1, poseidon_constraints(2)),
        Row("comm_r = H(comm_c, comm_r_last)", "equality", 1, 1),
        # per challenge: the data leaf in tree_d (SHA-256, binary, private root)
        Row("tree_d path (data leaf)", "path index bits", k * d_levels, 1),
        Row("tree_d path (data leaf)", "insert_2", k * d_levels, insert_constraints(2)),
        Row("tree_d path (data leaf)", "SHA-256 node (2 children)", k * d_levels, sha256_node_constraints(2)),
        Row("tree_d path (data leaf)", "path packing + root equality", k,
            pack_into_inputs_constraints(d_levels) + 1),
        # the parents' columns: hash and tree_c inclusion
        Row("parent columns", f"Poseidon_{L} (column)", k * parents, col),
        *_poseidon_path("parent columns in tree_c", levels, k * parents),
        # the challenge index (UInt64::alloc, pack_into_input)
        Row("challenge index", "UInt64 bits + packing", k, 64 + pack_into_inputs_constraints(64)),
        # labelling: each parent row unpacked per layer, then the label
        Row("labels: parent rows", "to_bits_le", k * (s.base_degree + (L - 1) * parents),
            to_bits_le_constraints()),
    ]
    label_per_layer = [label_constraints(layer) for layer in range(1, L + 1)]
    if len(set(label_per_layer)) == 1:
        rows.append(Row("labels", "SHA-256 label + pack", k * L, label_per_layer[0]))
    else:
        for layer, n in enumerate(label_per_layer, 1):
            rows.append(Row(f"labels (layer {layer})", "SHA-256 label + pack", k, n))
    rows += [
        Row("encoding", "add", k, 1),
        *_poseidon_path("replica node in tree_r_last", levels, k),
        Row("column of the challenge", f"Poseidon_{L} (column)", k, col),
        *_poseidon_path("column of the challenge in tree_c", levels, k),
    ]
    return CircuitCount(s, stacked_public_inputs(s) + 1, tuple(rows))


def stacked_public_inputs(proof: SealProof | StackedShape) -> int:
    """How many field elements ``StackedCompound::generate_public_inputs`` lists (proof.rs):
    replica_id, comm_d, comm_r, then per challenge one packed path for the data leaf, one per
    parent's column, the challenge index, one for the replica node and one for the challenge's
    column (roots are private, so a path is one input). bellperson's ``num_inputs`` is one
    more, for the constant ONE."""
    s = StackedShape.of(proof)
    d_bits = s.tree_d_levels()
    c_bits = sum(a.bit_length() - 1 for a in s.tree_levels())
    per_path_d = pack_into_inputs_constraints(d_bits)
    per_path = pack_into_inputs_constraints(c_bits)
    parents = s.base_degree + s.exp_degree
    return 3 + s.challenges * (per_path_d + parents * per_path + 1 + 2 * per_path)


# ---------------------------------------------------------------------------- against sealtop's

_GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    # (group, the prefixes of sealtop's template names in it)
    ("labels: SHA-256 + parent unpacking", ("label", "poseidon-label")),
    ("tree_d: SHA-256 levels + insertion", ("sha256-level",)),
    ("tree_c/tree_r_last: Poseidon levels + insertion", ("poseidon",)),
    ("column hashes", ("column",)),
    ("comm_r = H(comm_c, comm_r_last)", ("comm_r",)),
    ("replica_id bits", ("replica-bits",)),
    ("encoding", ("encode",)),
    ("index bits, packing, root equalities", ("challenge-bits", "eq", "zero")),
    ("public inputs (x·0 = 0)", ("public inputs",)),
)


def _filecoin_group(r: Row) -> str:
    """The comparison group of one of Filecoin's rows."""
    if r.part.startswith("labels"):
        return _GROUPS[0][0]
    if r.part.startswith("tree_d") and r.gadget != "path index bits" and not r.gadget.startswith("path packing"):
        return _GROUPS[1][0]
    if r.gadget.startswith("insert_") or (r.gadget.startswith("Poseidon_") and r.gadget[9:].isdigit()
                                          and not r.part.startswith("comm_r")):
        return _GROUPS[2][0]
    if r.gadget.endswith("(column)"):
        return _GROUPS[3][0]
    if r.part.startswith("comm_r"):
        return _GROUPS[4][0]
    if r.part == "replica_id":
        return _GROUPS[5][0]
    if r.part == "encoding":
        return _GROUPS[6][0]
    return _GROUPS[7][0]


def sealtop_comparison(filecoin: CircuitCount, sealtop: dict[str, int]) -> list[tuple[str, int, int]]:
    """(group, Filecoin's constraints, sealtop's) where the two circuits line up, R1CS input
    constraints included on both sides. ``sealtop`` is ``engine.circuit.porep.count_porep``'s
    per-template dict. Every Filecoin row and every sealtop template lands in exactly one group,
    so the groups sum to the two totals and their differences explain the gap."""
    fc: dict[str, int] = defaultdict(int)
    for r in filecoin.rows:
        fc[_filecoin_group(r)] += r.constraints
    fc[_GROUPS[8][0]] += filecoin.public_inputs
    st: dict[str, int] = defaultdict(int)
    for name, n in sealtop.items():
        group = next((g for g, prefixes in _GROUPS if name.startswith(prefixes)), None)
        if group is None:
            raise ValueError(f"sealtop template {name!r} lines up with no Filecoin gadget")
        st[group] += n
    return [(g, fc[g], st[g]) for g, _ in _GROUPS]
