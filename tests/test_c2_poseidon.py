"""neptune 11's legacy Poseidon circuit as engine/c2/poseidon.py builds it, checked against
neptune's own numbers and rows.

- The constants: engine/c2/neptune_params.py's generator equals the shipped constants (2, 8,
  11) and the reference sage output neptune keeps, and the plain permutation with them gives
  neptune's ``hash_values`` vectors (poseidon.rs), arity 4 included. The compressed round keys
  and the sparse factors hash like the plain permutation when run the way neptune's
  ``hash_optimized_static`` runs them, and the factors equal engine/seal/poseidon_sparse.py's
  independent derivation (transposed: it multiplies column vectors).
- The circuit: neptune's circuit.rs test counts (311, 377, 505, 761; hash.rs' 598 for 11), one
  aux variable per row (circuit_count.poseidon_aux), the hash of random inputs equal to the plain
  permutation, the shipped vectors and sealtop's native batch, witness_numba == witness_python,
  and rows spelt out from circuit.rs: the first full round, a later full round, the first two
  partial rounds, the first row after them and the result.
- hash.rs' column hash (2 and 11 labels) and hash2 (comm_r) equal the seal room's.
- Negative: a changed S-box wire, input or result breaks a row; other column sizes are refused.
"""

from __future__ import annotations

import dataclasses
import json
import os
import random
import secrets
from pathlib import Path

import numpy as np
import pytest
from r1cs_rows import gadget_rows, r1cs_row

from engine.c2.cs import PRIVATE, Synth
from engine.c2.neptune_params import generate_params, grain_round_constants, neptune_params
from engine.c2.por import hash2, hash_single_column
from engine.c2.poseidon import NeptuneConstants, neptune_constants, poseidon_hash
from engine.circuit.poseidon_params import poseidon_params, poseidon_permutation
from engine.circuit.witness import fill_inputs, witness_numba, witness_python
from engine.groth16.examples import WitnessError, check_witness
from engine.seal.circuit_count import poseidon_aux, poseidon_constraints
from engine.seal.commitments import comm_r
from engine.seal.hashing import poseidon_mont_groups
from engine.seal.labels import column_hash
from engine.seal.poseidon_sparse import sparse_constants
from kernels.constants import R_MOD
from kernels.cpu.convert import from_mont_fr, to_mont_fr

HEAVY = os.environ.get("SEALTOP_HEAVY") == "1"

# neptune src/poseidon.rs ``hash_values`` (Strength::Standard, HashType::MerkleTree): the hash of
# [0, 1, ..., arity - 1], as the four little-endian u64 limbs of its canonical form
NEPTUNE_HASH_VALUES = {
    2: (0x2E203C369A02E7FF, 0xA6FBA9339D05A69D, 0x739E0FD902EFE161, 0x396508D75E76A56B),
    4: (0x019814FF6662075D, 0xFB6B4605BF1327EC, 0x00DB3C6579229399, 0x58A54B10A9E5848A),
    8: (0x2A9934F56D38A5E6, 0x4B682E9D9CC4AED9, 0x1201004211677077, 0x2394611DA3A5DE55),
    11: (0xCEE3BBC32B693163, 0x09F3DCD8CCB08FC1, 0x6CA537E232EBE87A, 0x0C0FC1B2E5227F28),
    16: (0x1291C74060266D37, 0x5B8DBC6D30680A6F, 0xC1C2FB5A6F871E63, 0x2D3AE2663381AE8A),
    24: (0xD7EF3569F585B321, 0xC3E779F6468815B1, 0x066F39BF783F3D9F, 0x63BEB8831F11AE15),
    36: (0x4473606DFA4E8140, 0x75CD368DF8A8AC3C, 0x540A30E03C10BBAA, 0x699303082A6E5D5F),
}

# neptune src/circuit.rs ``test_poseidon_hash`` (Strength::Standard) and storage-proofs-porep
# stacked/circuit/hash.rs (598 for the 11-row column)
NEPTUNE_CONSTRAINTS = {2: 311, 4: 377, 8: 505, 11: 598, 16: 761, 24: 1009, 36: 1385}

_VECTORS = json.loads(
    (Path(__file__).parents[1] / "engine/circuit/poseidon_neptune_bls12_381.json").read_text()
)["instances"]


def _limbs(v: tuple[int, ...]) -> int:
    return sum(x << (64 * i) for i, x in enumerate(v))


# ---------------------------------------------------------------------------- constants


@pytest.mark.parametrize("arity", [2, 8, 11])
def test_the_generator_makes_the_shipped_constants(arity: int) -> None:
    assert generate_params(arity) == poseidon_params(arity)


def test_grain_matches_the_reference_sage_output() -> None:
    # neptune parameters/round_constants-1-1-255-9-8-57-<r>.txt (create_rcs_grain.sage, t = 9):
    # its first and last constants; the generator's seed differs for any other (t, R_F, R_P)
    rc = grain_round_constants(9, 8, 57)
    assert len(rc) == 9 * 65
    assert rc[0] == 0x6CE90D12C4045FE08C3CADDB776DD84AC52B4AE7E48CD49443984154F2F4C2F9
    assert rc[-1] == 0x3B3A75EB91B0F723BCC4AB7E449E4A011B8960063EFE74670C05E545519D9A8C
    assert grain_round_constants(9, 8, 56)[0] != rc[0]


@pytest.mark.parametrize("arity", [2, 4, 8, 11, 16] + ([24, 36] if HEAVY else []))
def test_neptune_hash_values(arity: int) -> None:
    p = neptune_params(arity)
    assert poseidon_permutation(p, [p.domain_tag, *range(arity)])[1] == _limbs(NEPTUNE_HASH_VALUES[arity])
    wrong = poseidon_permutation(p, [p.domain_tag, *range(1, arity + 1)])[1]
    assert wrong != _limbs(NEPTUNE_HASH_VALUES[arity])


def _static_hash(c: NeptuneConstants, inputs: list[int]) -> int:
    """neptune's native ``hash_optimized_static`` (poseidon.rs) with the circuit's constants:
    the first keys added, then every S-box followed by its compressed key, vector-matrix
    products with M, the pre-sparse matrix and each partial round's sparse (w_hat, v_rest)."""
    t, half, k = c.t, c.full_rounds // 2, c.compressed
    s = [(x + y) % R_MOD for x, y in zip([c.domain_tag, *inputs], k[:t], strict=True)]
    off, rnd = t, 0

    def mds() -> None:
        nonlocal s, rnd
        if half - 1 < rnd < half + c.partial_rounds:
            w_hat, v_rest = c.sparse[rnd - half]
            s0 = sum(w * x for w, x in zip(w_hat, s, strict=True)) % R_MOD
            s = [s0, *((s[j] + v_rest[j - 1] * s[0]) % R_MOD for j in range(1, t))]
        else:
            m = c.pre_sparse if rnd == half - 1 else c.m
            s = [sum(m[i][j] * s[i] for i in range(t)) % R_MOD for j in range(t)]
        rnd += 1

    for r in range(c.full_rounds + c.partial_rounds):
        full = r < half or r >= half + c.partial_rounds
        last = r == c.full_rounds + c.partial_rounds - 1
        for i in range(t if full else 1):
            s[i] = (pow(s[i], 5, R_MOD) + (0 if last else k[off])) % R_MOD
            off += 0 if last else 1
        mds()
    assert off == len(k)
    return s[1]


@pytest.mark.parametrize("arity", [2, 4, 8, 11])
def test_compressed_constants_hash_like_the_plain_permutation(arity: int) -> None:
    p = neptune_params(arity)
    xs = [secrets.randbelow(R_MOD) for _ in range(arity)]
    plain = poseidon_permutation(p, [p.domain_tag, *xs])[1]
    c = neptune_constants(arity)
    assert _static_hash(c, xs) == plain
    assert len(c.compressed) == c.full_rounds * c.t + c.partial_rounds
    assert len(c.sparse) == c.partial_rounds
    # a compressed key off by one breaks it
    keys = list(c.compressed)
    keys[random.randrange(len(keys))] += 1
    assert _static_hash(dataclasses.replace(c, compressed=tuple(keys)), xs) != plain


@pytest.mark.parametrize("arity", [2, 8, 11])
def test_sparse_factors_equal_an_independent_derivation(arity: int) -> None:
    n, s = neptune_constants(arity), sparse_constants(arity)
    assert [tuple(col) for col in zip(*n.pre_sparse, strict=True)] == list(s.pre_sparse)
    assert [w for w, _ in n.sparse] == list(s.sparse_rows)
    assert [v for _, v in n.sparse] == [col[1:] for col in s.sparse_cols]


# ---------------------------------------------------------------------------- the circuit


def _circuit(arity: int):
    s = Synth.new(f"poseidon{arity}", 0)
    ins = [s.alloc(("x", i)) for i in range(arity)]
    out = poseidon_hash(s, ins)
    return s.finish(), ins, out


def _witness(shape, values: list[int]) -> np.ndarray:
    return witness_numba(shape, fill_inputs(shape, [], {PRIVATE: values}))


@pytest.mark.parametrize("arity", [2, 4, 8, 11, 16] + ([24, 36] if HEAVY else []))
def test_counts_are_neptunes(arity: int) -> None:
    shape, ins, _ = _circuit(arity)
    rows = shape.r1cs.num_constraints - shape.r1cs.num_inputs
    assert rows == NEPTUNE_CONSTRAINTS[arity]
    if arity in (2, 4, 8, 11):
        assert rows == poseidon_constraints(arity)
    assert shape.num_aux - len(ins) == poseidon_aux(arity) == rows


@pytest.mark.parametrize("arity", [2, 4, 8, 11])
def test_circuit_hashes_like_neptune(arity: int) -> None:
    shape, ins, out = _circuit(arity)
    p = neptune_params(arity)
    rand = [[secrets.randbelow(R_MOD) for _ in range(arity)] for _ in range(2)]
    cases = [(list(range(arity)), _limbs(NEPTUNE_HASH_VALUES[arity]))]
    cases += [(xs, poseidon_permutation(p, [p.domain_tag, *xs])[1]) for xs in rand]
    for v in _VECTORS.get(str(arity), {}).get("vectors", []):
        cases.append(([int(x, 16) for x in v["inputs"]], int(v["output"], 16)))
    for xs, h in cases:
        z = _witness(shape, xs)
        check_witness(shape.r1cs, z)
        assert from_mont_fr(z[out : out + 1])[0] == h
    if str(arity) in _VECTORS:  # sealtop's native batch (the trees' hash) agrees on the random ones
        native = from_mont_fr(poseidon_mont_groups(to_mont_fr([x for xs in rand for x in xs]), arity))
        assert native == [h for _, h in cases[1:3]]


def test_witness_programs_agree() -> None:
    arity = random.choice([2, 4, 8])
    shape, _, _ = _circuit(arity)
    xs = [secrets.randbelow(R_MOD) for _ in range(arity)]
    assert from_mont_fr(_witness(shape, xs)) == witness_python(shape, [], {PRIVATE: xs})


@pytest.mark.parametrize("arity", [2, 11])
def test_a_wrong_witness_is_refused(arity: int) -> None:
    shape, ins, out = _circuit(arity)
    xs = [secrets.randbelow(R_MOD) for _ in range(arity)]
    z = _witness(shape, xs)
    check_witness(shape.r1cs, z)
    for v in (out, random.randrange(out - 20, out), random.choice(ins)):  # result, a wire, an input
        bad = z.copy()
        bad[v] = to_mont_fr([(from_mont_fr(z[v : v + 1])[0] + 1) % R_MOD])[0]
        with pytest.raises(WitnessError):
            check_witness(shape.r1cs, bad)


# ---------------------------------------------------------------------------- rows as circuit.rs writes them


def _lc(*terms: tuple[int, int]) -> dict[int, int]:
    acc: dict[int, int] = {}
    for v, k in terms:
        acc[v] = (acc.get(v, 0) + k) % R_MOD
    return {v: k for v, k in acc.items() if k}


@pytest.mark.parametrize("arity", [2, 4, 8, 11])
def test_rows_are_circuit_rs(arity: int) -> None:
    shape, ins, out = _circuit(arity)
    c = neptune_constants(arity)
    t, half, rp, k = c.t, c.full_rounds // 2, c.partial_rounds, c.compressed
    one = 0
    # the template's first variable (its one instance's); its rows start at row 0
    base = int(next(st for st in shape.stages if shape.templates[st.template].name == "poseidon").bases[0])
    assert base == ins[-1] + 1

    def full(r: int, e: int, w: int) -> int:  # wire w (0 input, 1 l^2, 2 l^4, 3 l^5) of a full round >= 1
        first = 3 * arity + (r - 1) * 4 * t if r < half else 3 * arity + (half - 1) * 4 * t + 4 * rp + (r - half) * 4 * t
        return base + first + 4 * e + w

    def partial(p: int, w: int) -> int:
        return base + 3 * arity + (half - 1) * 4 * t + 4 * p + w

    def rows_of(v: int) -> tuple[dict[int, int], ...]:
        return r1cs_row(shape, v - base)  # one row per allocation, in order

    # first full round, input i: square_sum, square, mul_sum with the round's pre and post keys
    for i in range(1, t):
        l2, l4, l5 = (base + 3 * (i - 1) + j for j in range(3))
        x = _lc((ins[i - 1], 1), (one, k[i]))
        assert rows_of(l2) == (x, x, {l2: 1})
        assert rows_of(l4) == ({l2: 1}, {l2: 1}, {l4: 1})
        assert rows_of(l5) == (x, {l4: 1}, _lc((l5, 1), (one, -k[t + i])))
    # second full round, element e: ensure_allocated of the MDS product (the tag a constant)
    tag = (pow((c.domain_tag + k[0]) % R_MOD, 5, R_MOD) + k[t]) % R_MOD
    for e in range(t):
        a = _lc((one, tag * c.m[0][e]), *((base + 3 * (i - 1) + 2, c.m[i][e]) for i in range(1, t)))
        assert rows_of(full(1, e, 0)) == (a, {one: 1}, {full(1, e, 0): 1})
        assert rows_of(full(1, e, 3)) == ({full(1, e, 0): 1}, {full(1, e, 2): 1},
                                          _lc((full(1, e, 3), 1), (one, -k[2 * t + e])))
    # first partial round: the pre-sparse product of the last first-half round's S-boxes
    last = [full(half - 1, e, 3) for e in range(t)]
    a0 = _lc(*((last[i], c.pre_sparse[i][0]) for i in range(t)))
    assert rows_of(partial(0, 0)) == (a0, {one: 1}, {partial(0, 0): 1})
    assert rows_of(partial(0, 3)) == ({partial(0, 0): 1}, {partial(0, 2): 1},
                                      _lc((partial(0, 3), 1), (one, -k[(half + 1) * t])))
    # second partial round: w_hat of the first sparse matrix over that round's state
    w_hat, _ = c.sparse[0]
    a1 = _lc((partial(0, 3), w_hat[0]),
             *((last[i], w_hat[j] * c.pre_sparse[i][j]) for j in range(1, t) for i in range(t)))
    assert rows_of(partial(1, 0)) == (a1, {one: 1}, {partial(1, 0): 1})
    # first full round after the partial ones, element j >= 1: its pre-sparse column plus each
    # partial round's v_rest[j - 1] times that round's S-box
    for j in range(1, t):
        aj = _lc(*((last[i], c.pre_sparse[i][j]) for i in range(t)),
                 *((partial(p, 3), c.sparse[p][1][j - 1]) for p in range(rp)))
        assert rows_of(full(half, j, 0)) == (aj, {one: 1}, {full(half, j, 0): 1})
    # the terminal round adds no key; the result is column 1 of M over its S-boxes
    fin = [full(c.full_rounds - 1, e, 3) for e in range(t)]
    assert rows_of(fin[0]) == ({full(c.full_rounds - 1, 0, 0): 1}, {full(c.full_rounds - 1, 0, 2): 1}, {fin[0]: 1})
    assert rows_of(out) == (_lc(*((fin[e], c.m[e][1]) for e in range(t))), {one: 1}, {out: 1})
    assert out == base + shape.r1cs.num_constraints - shape.r1cs.num_inputs - 1


# ---------------------------------------------------------------------------- filecoin-hashers / hash.rs


@pytest.mark.parametrize("layers", [2, 11])
def test_column_hash_and_hash2_are_the_seal_rooms(layers: int) -> None:
    """hash.rs ``hash_single_column`` (2 or 11 labels) and the Poseidon tree's ``hash2_circuit``
    (comm_r = H(comm_c, comm_r_last)) give what engine/seal computes for the same values."""
    s = Synth.new("column", 0)
    col = [s.alloc(("column", 0, "drg", 0, row)) for row in range(layers)]
    h = hash_single_column(s, col)
    comm_c, comm_r_last = s.alloc(("comm_c",)), s.alloc(("comm_r_last",))
    r = hash2(s, comm_c, comm_r_last)
    shape = s.finish()
    assert gadget_rows(shape) == poseidon_constraints(layers) + poseidon_constraints(2)
    labels = [secrets.randbelow(R_MOD) for _ in range(layers)]
    c, rl = secrets.randbelow(R_MOD), secrets.randbelow(R_MOD)
    z = _witness(shape, [*labels, c, rl])
    check_witness(shape.r1cs, z)
    as_bytes = [x.to_bytes(32, "little") for x in labels]
    assert from_mont_fr(z[[h]])[0].to_bytes(32, "little") == column_hash(as_bytes)
    assert from_mont_fr(z[[r]])[0].to_bytes(32, "little") == comm_r(c.to_bytes(32, "little"), rl.to_bytes(32, "little"))
    assert comm_r(c.to_bytes(32, "little"), rl.to_bytes(32, "little")) != comm_r(rl.to_bytes(32, "little"), c.to_bytes(32, "little"))
    with pytest.raises(ValueError, match="columns of 2 or 11"):
        hash_single_column(Synth.new("bad", 0), col[:1] * 3)
