"""Filecoin's insertion and PoR gadgets as engine/c2/por.py builds them, against the Rust.

- ``insert`` (storage-proofs-core insertion.rs): 2, 8 and 22 rows for sizes 2, 4 and 8 and
  size * (size - 1) for the general ``select`` (16), one aux per row; every position puts the
  element where the bits say; the rows of insert_2's picks, insert_4's first two and insert_8's
  nor, and and first picks are insertion.rs' LCs.
- ``por`` (por.rs ``PoRCircuit::synthesize`` with ``Root::Var``, as the stacked circuit calls
  it): paths of trees built by engine/seal/trees.py (Poseidon, shapes 8-0-0, 8-2-0, 8-8-2,
  2-0-0) and a hand-built 4-ary one satisfy every row, with circuit_count's constraint and aux
  counts; witness_numba == witness_python; a wrong sibling, a flipped position bit (with or
  without the matching public input), a wrong public input or a non-boolean bit is refused.
  The packing and root rows are bellperson's.
- Filecoin's own PoR circuits (tests/por_circuit.rs: ``Root::Val`` leaf and root, public or
  private root) have its constraint and input counts.
- tree_d's binary SHA-256 path (engine/c2/sha256.py's node, 45,382 rows a level) verifies a
  trees.tree_d path, and a wrong sibling does not.
"""

from __future__ import annotations

import random
import secrets

import numpy as np
import pytest
from r1cs_rows import gadget_rows, r1cs_row

from engine.c2 import num
from engine.c2.cs import PRIVATE, Source, Synth
from engine.c2.neptune_params import neptune_params
from engine.c2.por import auth_path, insert, por, poseidon_node
from engine.c2.sha256 import tree_d_node
from engine.circuit.poseidon_params import poseidon_permutation
from engine.circuit.witness import fill_inputs, witness_numba, witness_python
from engine.groth16.examples import WitnessError, check_witness
from engine.seal import circuit_count as cc
from engine.seal.trees import MerkleProof, poseidon_tree, tree_d
from kernels.constants import R_MOD
from kernels.cpu.convert import from_mont_fr

ONE = 0
NEG = R_MOD - 1


def _fr() -> int:
    return secrets.randbelow(R_MOD)


def _solve(shape, public: list[int], values: list[int]) -> np.ndarray:
    return witness_numba(shape, fill_inputs(shape, public, {PRIVATE: values}))


def _bumped(z: np.ndarray, v: int) -> np.ndarray:
    bad = z.copy()
    bad[v, 0] ^= np.uint64(1)
    return bad


# ---------------------------------------------------------------------------- insert


def _insert_circuit(size: int):
    s = Synth.new(f"insert{size}", 0)
    element = s.alloc(("element",))
    nbits = size.bit_length() - 1
    bits = [num.alloc_bit(s, ("bit", b)) for b in range(nbits)]
    others = [s.alloc(("other", j)) for j in range(size - 1)]
    outs = insert(s, element, bits, others)
    return s.finish(), element, [b.slot for b in bits], others, outs


@pytest.mark.parametrize("size", [2, 4, 8, 16])
def test_insert_counts_and_values(size: int) -> None:
    shape, element, bits, others, outs = _insert_circuit(size)
    nbits = len(bits)
    assert gadget_rows(shape) == nbits + cc.insert_constraints(size)  # the bits' boolean rows, then insert
    assert shape.num_aux == 1 + nbits + (size - 1) + cc.insert_aux(size)
    x, ys = _fr(), [_fr() for _ in range(size - 1)]
    for index in range(size):
        z = _solve(shape, [], [x, *((index >> b) & 1 for b in range(nbits)), *ys])
        check_witness(shape.r1cs, z)
        assert from_mont_fr(z[outs]) == ys[:index] + [x] + ys[index:]
    with pytest.raises(WitnessError):  # an output that is not the pick
        check_witness(shape.r1cs, _bumped(z, random.choice(outs)))
    with pytest.raises(WitnessError):  # a position bit that is not a bit
        check_witness(shape.r1cs, _solve(shape, [], [x, 2, *([0] * (nbits - 1)), *ys]))


def test_insert_rows_are_insertion_rs() -> None:
    # insert_2: pick(b0, elements[0], element), pick(b0, element, elements[0]); a pick of
    # (a if cond else b) is (b - a) * cond = b - c
    shape, x, (b0,), (y,), (p0, p1) = _insert_circuit(2)
    assert r1cs_row(shape, 0) == ({ONE: 1, b0: NEG}, {b0: 1}, {})  # AllocatedBit::alloc
    assert r1cs_row(shape, 1) == ({x: 1, y: NEG}, {b0: 1}, {x: 1, p0: NEG})
    assert r1cs_row(shape, 2) == ({y: 1, x: NEG}, {b0: 1}, {y: 1, p1: NEG})
    # insert_4: p0_x0 = pick(b0, b, a), p0 = pick(b1, b, p0_x0)
    shape, a, (b0, b1), (b, c, d), outs = _insert_circuit(4)
    p0_x0 = outs[0] - 1
    assert r1cs_row(shape, 2) == ({a: 1, b: NEG}, {b0: 1}, {a: 1, p0_x0: NEG})
    assert r1cs_row(shape, 3) == ({p0_x0: 1, b: NEG}, {b1: 1}, {p0_x0: 1, outs[0]: NEG})
    # insert_8: b0 nor b1, b0 and b1, then p0_xx0 = pick(nor, a, b) and p0 = pick(b2, b, p0_xx0)
    shape, a, (b0, b1, b2), (b, *_), outs = _insert_circuit(8)
    nor, both, p0_xx0 = outs[0] - 3, outs[0] - 2, outs[0] - 1
    assert r1cs_row(shape, 3) == ({ONE: 1, b0: NEG}, {ONE: 1, b1: NEG}, {nor: 1})
    assert r1cs_row(shape, 4) == ({b0: 1}, {b1: 1}, {both: 1})
    assert r1cs_row(shape, 5) == ({b: 1, a: NEG}, {nor: 1}, {b: 1, p0_xx0: NEG})
    assert r1cs_row(shape, 6) == ({p0_xx0: 1, b: NEG}, {b2: 1}, {p0_xx0: 1, outs[0]: NEG})
    # the general select for 16, position 0's first pick: pick(b3, choices[8], choices[0]) = (y0, x)
    shape, x, bits, ys, outs = _insert_circuit(16)
    first = int(next(st for st in shape.stages if shape.templates[st.template].name == "insert").bases[0])
    assert r1cs_row(shape, 4) == ({x: 1, ys[0]: NEG}, {bits[3]: 1}, {x: 1, first: NEG})


# ---------------------------------------------------------------------------- PoR paths


def _nodes(n: int) -> np.ndarray:
    return np.frombuffer(b"".join(_fr().to_bytes(32, "little") for _ in range(n)), np.uint8).reshape(n, 32)


def _int(b: bytes) -> int:
    return int.from_bytes(b, "little")


def _values(sources: list[Source], proof: MerkleProof, leaf: int, root: int, bits: list[int] | None = None) -> list[int]:
    """The supplied values of a path circuit (the por sources of engine/c2/cs.py)."""
    pos_bits = bits if bits is not None else _path_bits(proof)
    by_level = []
    k = 0
    for a in proof.arities:
        n = a.bit_length() - 1
        by_level.append(pos_bits[k : k + n])
        k += n
    out = []
    for src in sources:
        if src == ("leaf",):
            out.append(leaf)
        elif src == ("root",):
            out.append(root)
        else:
            _, _, _, level, kind, j = src
            lv, k = int(level), int(j)  # type: ignore[call-overload]
            out.append(_int(proof.siblings[lv][k]) if kind == "sibling" else by_level[lv][k])
    return out


def _path_bits(proof: MerkleProof) -> list[int]:
    return [(p >> b) & 1 for p, a in zip(proof.positions, proof.arities, strict=True) for b in range(a.bit_length() - 1)]


def _packed(bits: list[int]) -> list[int]:
    return [sum(b << i for i, b in enumerate(bits[k : k + 254])) for k in range(0, len(bits), 254)]


def _por_circuit(levels: list[int]):
    """The stacked circuit's use: root and leaf allocated before, ``Root::Var`` both."""
    bits = sum(a.bit_length() - 1 for a in levels)
    s = Synth.new("por", -(-bits // 254))
    root = s.alloc(("root",))
    leaf = s.alloc(("leaf",))
    por(s, 0, "t", levels, leaf, root, poseidon_node)
    return s, s.finish()


@pytest.mark.parametrize(("shape", "leaves"), [((8, 0, 0), 64), ((8, 2, 0), 16), ((8, 8, 2), 128), ((2, 0, 0), 16)])
def test_a_trees_path_verifies(shape: tuple[int, int, int], leaves: int) -> None:
    tree = poseidon_tree(_nodes(leaves), shape)
    levels = list(tree.arities)
    s, circuit = _por_circuit(levels)
    assert gadget_rows(circuit) == cc.por_constraints(levels)
    assert circuit.num_aux == cc.por_aux(levels) + 2
    proof = tree.proof(random.randrange(leaves))
    leaf, root = _int(proof.leaf), _int(tree.root)
    bits = _path_bits(proof)
    z = _solve(circuit, _packed(bits), _values(s.sources, proof, leaf, root))
    check_witness(circuit.r1cs, z)

    # a wrong sibling: every gadget computes, the root differs
    wrong = list(proof.siblings)
    lvl = random.randrange(len(wrong))
    wrong[lvl] = (_fr().to_bytes(32, "little"), *wrong[lvl][1:])
    bad = MerkleProof(proof.hasher, proof.leaf_index, proof.leaf, proof.arities, tuple(wrong), proof.root)
    with pytest.raises(WitnessError):
        check_witness(circuit.r1cs, _solve(circuit, _packed(bits), _values(s.sources, bad, leaf, root)))
    # a flipped position bit, with the public input as it was and with one that matches it
    flipped = list(bits)
    flipped[random.randrange(len(bits))] ^= 1
    for public in (_packed(bits), _packed(flipped)):
        with pytest.raises(WitnessError):
            check_witness(circuit.r1cs, _solve(circuit, public, _values(s.sources, proof, leaf, root, flipped)))
    # the right path under another public position
    with pytest.raises(WitnessError):
        check_witness(circuit.r1cs, _solve(circuit, _packed(flipped), _values(s.sources, proof, leaf, root)))


def test_por_witness_programs_agree_and_rows_are_bellpersons() -> None:
    tree = poseidon_tree(_nodes(16), (8, 2, 0))
    s, circuit = _por_circuit([8, 2])
    proof = tree.proof(random.randrange(16))
    public = _packed(_path_bits(proof))
    values = _values(s.sources, proof, _int(proof.leaf), _int(tree.root))
    z = _solve(circuit, public, values)
    assert from_mont_fr(z) == witness_python(circuit, public, {PRIVATE: values})
    # the last two rows: pack_into_inputs' (sum 2^i bit_i) * 1 = input, then equal's root * 1 = comm
    n = gadget_rows(circuit)
    bit_vars = [v for v, src in zip(circuit.regions[PRIVATE].tolist(), s.sources, strict=True) if src[4:5] == ("bit",)]
    assert len(bit_vars) == 4
    assert r1cs_row(circuit, n - 2) == ({v: 1 << i for i, v in enumerate(bit_vars)}, {ONE: 1}, {1: 1})
    hashes = [st for st in circuit.stages if circuit.templates[st.template].name == "poseidon"]
    _, last_base, tid = max((int(r), int(b), st.template) for st in hashes for r, b in zip(st.rows, st.bases))
    t = circuit.templates[tid]
    computed = last_base + t.outputs[0] - 1 - t.n_in  # the path's computed root (the last hash)
    root = int(circuit.regions[PRIVATE][0])
    assert r1cs_row(circuit, n - 1) == ({computed: 1}, {ONE: 1}, {root: 1})
    assert from_mont_fr(z[[computed, root]]) == [_int(tree.root)] * 2


def test_a_4ary_path_verifies() -> None:
    # no native arity-4 hash in sealtop's trees: a 16-leaf tree of the plain permutation
    p = neptune_params(4)
    leaves = [_fr() for _ in range(16)]
    level1 = [poseidon_permutation(p, [p.domain_tag, *leaves[i : i + 4]])[1] for i in range(0, 16, 4)]
    root = poseidon_permutation(p, [p.domain_tag, *level1])[1]
    i = random.randrange(16)
    sib = (tuple(leaves[i - i % 4 + j] for j in range(4) if j != i % 4),
           tuple(level1[j] for j in range(4) if j != i // 4))
    proof = MerkleProof("poseidon", i, leaves[i].to_bytes(32, "little"), (4, 4),
                        tuple(tuple(x.to_bytes(32, "little") for x in lv) for lv in sib), root.to_bytes(32, "little"))
    s, circuit = _por_circuit([4, 4])
    assert gadget_rows(circuit) == cc.por_constraints([4, 4]) == 2 * (2 + 8 + 377) + 2
    z = _solve(circuit, _packed(_path_bits(proof)), _values(s.sources, proof, leaves[i], root))
    check_witness(circuit.r1cs, z)
    with pytest.raises(WitnessError):
        check_witness(circuit.r1cs, _solve(circuit, _packed(_path_bits(proof)),
                                           _values(s.sources, proof, leaves[i], (root + 1) % R_MOD)))


# ---------------------------------------------------------------------------- por_circuit.rs


def _filecoin_por_circuit(levels: list[int], private: bool):
    """tests/por_circuit.rs' ``PoRCircuit``: the leaf (``Root::Val``) allocated first, the
    path, its bits packed, the root allocated and compared, and made public unless private."""
    chunks = -(-sum(a.bit_length() - 1 for a in levels) // 254)
    s = Synth.new("por_circuit", chunks + (0 if private else 1))
    leaf = s.alloc(("leaf",))
    computed, bits = auth_path(s, 0, "t", levels, leaf, poseidon_node)
    num.pack_into_inputs(s, bits, [("path_input", 0, "t", k) for k in range(chunks)])
    root = s.alloc(("root",))
    num.equal(s, computed, root)
    if not private:
        num.inputize(s, root, ("root",))
    return s, s.finish()


@pytest.mark.parametrize(
    ("levels", "constraints"),
    [([2] * 6, 1_887), ([4] * 3, 1_164), ([8] * 2, 1_063), ([8, 8, 2], 1_377), ([8, 8, 4, 2], 1_764),
     ([8, 8, 8], 1_593), ([8, 8, 8, 2], 1_907), ([8, 8, 2, 4], 1_764)],
)
def test_filecoins_por_circuit_counts(levels: list[int], constraints: int) -> None:
    # storage-proofs-core tests/por_circuit.rs over 64 * base-tree-count leaves: the base levels
    # over 64 leaves, then the sub and top levels
    _, public = _filecoin_por_circuit(levels, private=False)
    assert (public.r1cs.num_inputs, gadget_rows(public)) == (3, constraints)
    if levels in ([2] * 6, [4] * 3, [8] * 2):  # test_por_circuit_*_private_root
        _, private = _filecoin_por_circuit(levels, private=True)
        assert (private.r1cs.num_inputs, gadget_rows(private)) == (2, constraints - 1)


def test_filecoins_por_circuit_verifies() -> None:
    tree = poseidon_tree(_nodes(8), (2, 0, 0))
    s, circuit = _filecoin_por_circuit([2, 2, 2], private=False)
    proof = tree.proof(random.randrange(8))
    leaf, root = _int(proof.leaf), _int(tree.root)
    values = _values(s.sources, proof, leaf, root)
    check_witness(circuit.r1cs, _solve(circuit, [*_packed(_path_bits(proof)), root], values))
    with pytest.raises(WitnessError):  # another public root
        check_witness(circuit.r1cs, _solve(circuit, [*_packed(_path_bits(proof)), (root + 1) % R_MOD], values))


# ---------------------------------------------------------------------------- encode, tree_d


def test_encode_row() -> None:
    # encode.rs: constraint::add(key, value), an allocated sum and (key + value) * 1 = sum
    s = Synth.new("encode", 0)
    key, value = s.alloc(("key",)), s.alloc(("value",))
    out = num.add(s, key, value)
    shape = s.finish()
    assert r1cs_row(shape, 0) == ({key: 1, value: 1}, {ONE: 1}, {out: 1})
    k, v = _fr(), _fr()
    z = _solve(shape, [], [k, v])
    check_witness(shape.r1cs, z)
    assert from_mont_fr(z[[out]]) == [(k + v) % R_MOD]
    with pytest.raises(WitnessError):
        check_witness(shape.r1cs, _bumped(z, out))


def test_a_tree_d_path_verifies() -> None:
    tree = tree_d(_nodes(4))
    s = Synth.new("tree_d", 1)
    root = s.alloc(("root",))
    leaf = s.alloc(("leaf",))
    por(s, 0, "comm_d", [2, 2], leaf, root, tree_d_node)
    circuit = s.finish()
    per_level = 1 + cc.insert_constraints(2) + cc.sha256_node_constraints(2)
    assert gadget_rows(circuit) == 2 * per_level + 2
    proof = tree.proof(random.randrange(4))
    values = _values(s.sources, proof, _int(proof.leaf), _int(tree.root))
    check_witness(circuit.r1cs, _solve(circuit, _packed(_path_bits(proof)), values))
    values[s.sources.index(("path", 0, "comm_d", 1, "sibling", 0))] ^= 1
    with pytest.raises(WitnessError):
        check_witness(circuit.r1cs, _solve(circuit, _packed(_path_bits(proof)), values))

