"""The count of Filecoin's StackedCircuit (engine/seal/circuit_count.py) against the constants
rust-fil-proofs' and neptune's own tests assert, SHA-256's symbolic run against hashlib, and
sealtop's porep circuit by gadget."""

from __future__ import annotations

import hashlib
import os
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.seal import circuit_count as cc
from engine.seal.registry import SEAL_PROOFS

heavy = pytest.mark.skipif(not os.environ.get("SEALTOP_HEAVY"), reason="set SEALTOP_HEAVY=1 (sealtop's tracing)")

V = 2  # a variable bit in the symbolic SHA-256


def _bits(data: bytes) -> tuple[int, ...]:
    return tuple((byte >> (7 - i)) & 1 for byte in data for i in range(8))


# ---------------------------------------------------------------------------- the two totals


def test_filecoin_test_shape_inputs_and_constraints() -> None:
    # storage-proofs-porep/tests/stacked_circuit.rs: test_stacked_input_circuit_poseidon_base_8
    c = cc.stacked_constraints(cc.TEST_SHAPE)
    assert c.public_inputs == 22
    assert c.constraints == 1_199_620
    assert cc.stacked_public_inputs(cc.TEST_SHAPE) == 21  # generate_public_inputs' length


def test_32gib_v1_1_partition() -> None:
    c = cc.stacked_constraints(SEAL_PROOFS["StackedDrg32GiBV1_1"])
    # fil-proofs-tooling circuitinfo reports 130,278,541 constraints and 328 inputs for the
    # 32 GiB PoRep; the R1CS adds one x·0 = 0 row per input (ONE and 327 public inputs)
    assert c.r1cs_constraints == 130_278_869
    assert c.public_inputs == 328
    assert c.constraints == 130_278_541


@pytest.mark.parametrize(
    ("arities", "nodes", "expected"),
    [  # the other shapes of stacked_circuit.rs (nodes = 8 · base tree count)
        ((2, 0, 0), 8, 1_206_212),
        ((8, 4, 0), 32, 1_296_576),
        ((8, 4, 2), 64, 1_346_982),
    ],
)
def test_filecoin_other_test_shapes(arities: tuple[int, int, int], nodes: int, expected: int) -> None:
    c = cc.stacked_constraints(cc.StackedShape(nodes, 2, 1, arities))
    assert (c.public_inputs, c.constraints) == (22, expected)


def test_breakdown_sums_to_total_for_every_registered_proof() -> None:
    for proof in SEAL_PROOFS.values():
        c = cc.stacked_constraints(proof)
        assert sum(r.constraints for r in c.rows) == c.constraints
        assert sum(c.by_gadget().values()) == c.constraints
        assert sum(c.by_part().values()) == c.constraints
        assert c.public_inputs == 1 + 3 + proof.challenges * 18
        assert all(r.uses > 0 and r.per_use > 0 for r in c.rows)
        table = c.table()
        assert f"{c.r1cs_constraints:,}" in table and f"{c.constraints:,}" in table
    # API versions change the graph, not the circuit's size
    assert (cc.stacked_constraints(SEAL_PROOFS["StackedDrg32GiBV1"]).constraints
            == cc.stacked_constraints(SEAL_PROOFS["StackedDrg32GiBV1_1"]).constraints)


def test_sizes_scale_as_the_rules_say() -> None:
    small = cc.stacked_constraints(SEAL_PROOFS["StackedDrg2KiBV1_1"])
    mid = cc.stacked_constraints(SEAL_PROOFS["StackedDrg8MiBV1_1"])
    g32 = cc.stacked_constraints(SEAL_PROOFS["StackedDrg32GiBV1_1"])
    g64 = cc.stacked_constraints(SEAL_PROOFS["StackedDrg64GiBV1_1"])
    # 8 MiB has 2^18 nodes, 2 KiB 2^6: 12 more SHA-256 tree_d levels and 4 more arity-8
    # levels on each of 2 · (14 + 2) Poseidon paths (2 challenges)
    sha_level = 1 + cc.insert_constraints(2) + cc.sha256_node_constraints(2)
    poseidon_level = 3 + cc.insert_constraints(8) + cc.poseidon_constraints(8)
    assert mid.constraints - small.constraints == 2 * (12 * sha_level + 16 * 4 * poseidon_level)
    # 64 GiB adds one tree_d level and a top level of arity 2 to each of 18 · 16 paths
    top = 1 + cc.insert_constraints(2) + cc.poseidon_constraints(2)
    assert g64.constraints - g32.constraints == 18 * (sha_level + 16 * top)


# ---------------------------------------------------------------------------- gadgets


def test_poseidon_round_numbers_match_neptune() -> None:
    # neptune round_numbers.rs test_round_numbers_against_known_values: t -> R_P, R_F = 8
    known = {2: 55, 3: 55, 4: 56, 5: 56, 6: 56, 7: 56, 8: 57, 9: 57, 10: 57, 11: 57, 12: 57,
             13: 57, 14: 57, 15: 57, 16: 59, 17: 59, 25: 59, 37: 60, 65: 61}
    for t, rp in known.items():
        assert cc.poseidon_round_numbers(t - 1) == (8, rp), t


def test_poseidon_and_column_hash_costs() -> None:
    # storage-proofs-porep stacked/circuit/hash.rs: hash2 311, hash_single_column(11) 598
    assert cc.poseidon_constraints(2) == 311
    assert cc.poseidon_constraints(11) == 598


def test_insertion_costs() -> None:
    # storage-proofs-core gadgets/insertion.rs test_insert
    assert [cc.insert_constraints(1 << k) for k in (1, 2, 3, 4)] == [2, 8, 22, 16 * 15]


@pytest.mark.parametrize(
    ("levels", "expected"),
    [  # storage-proofs-core tests/por_circuit.rs, 64 · base-tree-count leaves, public root
        ([2] * 6, 1_887), ([4] * 3, 1_164), ([8] * 2, 1_063), ([8, 8, 2], 1_377),
        ([8, 8, 4, 2], 1_764), ([8, 8, 8], 1_593), ([8, 8, 8, 2], 1_907), ([8, 8, 2, 4], 1_764),
    ],
)
def test_por_circuit_constants(levels: list[int], expected: int) -> None:
    assert cc.por_constraints(levels, private=False) == expected
    assert cc.por_constraints(levels) == expected - 1  # private roots: test_por_circuit_private_root


def test_sha256_gadget_constants() -> None:
    # storage-proofs-core util.rs hash_leaf_bits_circuit: 512 allocated bits, hash, pack
    assert 512 + cc.sha256_constraints((V,) * 512) + 1 == 45_387
    # por_circuit.rs with Sha256Hasher (64 leaves, public root): 6 / 3 / 2 levels
    for arity, levels, expected in ((2, 6, 272_295), (4, 3, 216_258), (8, 2, 250_987)):
        level = (arity.bit_length() - 1) + cc.insert_constraints(arity) + cc.sha256_node_constraints(arity)
        assert levels * level + 3 == expected


def test_create_label_constant() -> None:
    # stacked/circuit/create_label.rs test_create_label: 38 · 256 allocated bits (id and 37
    # parents), layer 3 and node 22 as constants, then the label
    node = tuple((22 >> i) & 1 for i in range(63, -1, -1))
    layer = tuple((3 >> i) & 1 for i in range(31, -1, -1))
    head = (V,) * 256 + layer + node
    head += (0,) * (512 - len(head))
    assert 38 * 256 + cc.sha256_constraints(head + (V,) * (256 * 37)) + 1 == 532_025


@settings(max_examples=25, deadline=None)
@given(st.binary(max_size=200))
def test_sha256_symbolic_run_is_sha256_on_constants(data: bytes) -> None:
    n, digest = cc.sha256_count(_bits(data))
    assert n == 0  # every bit folds: nothing to enforce
    assert digest == _bits(hashlib.sha256(data).digest())


def test_sha256_variables_cost_and_stay_unknown() -> None:
    rng = random.Random()
    data = rng.randbytes(64)
    bits = list(_bits(data))
    for i in rng.sample(range(512), 3):
        bits[i] = V
    n, digest = cc.sha256_count(tuple(bits))
    assert n > 0 and V in digest
    # a variable in the last block only: the first block still folds to constants
    n_tail, _ = cc.sha256_count(_bits(data) + (V,) * 8)
    n_full, _ = cc.sha256_count((V,) * 8 + _bits(data))
    assert 0 < n_tail < n_full


def test_label_message_layout() -> None:
    msg = cc.label_message(5)
    assert len(msg) == (1 + 1 + cc.TOTAL_PARENTS) * 256
    # the layer is a big-endian u32 constant after the replica id
    assert msg[256:288] == tuple((5 >> i) & 1 for i in range(31, -1, -1))
    assert msg[288:352] == (V,) * 64 and set(msg[352:512]) == {0}
    # a field element: 255 variables and one constant bit, the top bit of its last byte
    field = msg[512:768]
    assert field.count(V) == 255 and field[248] == 0


# ---------------------------------------------------------------------------- bad shapes


def test_bad_shapes_are_refused() -> None:
    with pytest.raises(ValueError, match="2 or 11 layers"):
        cc.stacked_constraints(cc.StackedShape(8, 3, 1, (8, 0, 0)))
    with pytest.raises(ValueError, match="do not fill"):
        cc.stacked_constraints(cc.StackedShape(16, 2, 1, (8, 0, 0)))
    with pytest.raises(ValueError, match="power of two"):
        cc.stacked_public_inputs(cc.StackedShape(12, 2, 1, (2, 0, 0)))
    with pytest.raises(ValueError, match="whole bytes"):
        cc.sha256_constraints((V,) * 7)
    with pytest.raises(ValueError, match="0, 1"):
        cc.sha256_constraints((3,) * 8)


# ---------------------------------------------------------------------------- against sealtop's


def test_sealtop_comparison_groups_cover_both_sides() -> None:
    rng = random.Random()
    fc = cc.stacked_constraints(SEAL_PROOFS["StackedDrg32GiBV1_1"])
    names = ["challenge-bits", "column11", "poseidon8-level", "eq", "zero", "replica-bits", "label6",
             "label14", "sha256-level", "encode", "comm_r", "public inputs (x·0 = 0)"]
    fake = {n: rng.randrange(1, 10**6) for n in names}
    rows = cc.sealtop_comparison(fc, fake)
    assert sum(r[1] for r in rows) == fc.r1cs_constraints
    assert sum(r[2] for r in rows) == sum(fake.values())
    with pytest.raises(ValueError, match="lines up with no"):
        cc.sealtop_comparison(fc, {**fake, "mystery": 1})


@pytest.mark.slow
@heavy
def test_sealtop_porep_32g_against_filecoin(capsys: pytest.CaptureFixture[str]) -> None:
    from engine.circuit.porep import count_porep

    total, per = count_porep("sealtop-32g")
    fc = cc.stacked_constraints(SEAL_PROOFS["StackedDrg32GiBV1_1"])
    rows = cc.sealtop_comparison(fc, per)
    with capsys.disabled():
        print(f"\n{'group':<50} {'Filecoin':>13} {'sealtop':>13} {'sealtop - Filecoin':>19}")
        for group, f, s in rows:
            print(f"{group:<50} {f:>13,} {s:>13,} {s - f:>+19,}")
        print(f"{'total':<50} {fc.r1cs_constraints:>13,} {total:>13,} {total - fc.r1cs_constraints:>+19,}")
    assert sum(r[1] for r in rows) == 130_278_869
    assert sum(r[2] for r in rows) == total
    # the circuits line up: every group exists on both sides
    assert all(f > 0 and s > 0 for _, f, s in rows)
