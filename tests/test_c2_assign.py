"""A partition's supplied values from a C1 output (engine/c2/assign.py).

A random 2 KiB sector is sealed and every Source of its partition circuit is resolved, by the
reference reader and by the compiled plan (they must agree), and checked against oracles that
are not the code under test: the data leaf against Fr32 padding of the raw data in Python ints,
the tree_d path (its resolved bits and siblings) hashed with hashlib up to comm_d, the column and
tree_c paths hashed with the plain Python-int Poseidon up to comm_c, comm_r = Poseidon(comm_c,
comm_r_last), the challenge bits against hashlib's challenge. The prover's copy of the public
inputs, read from the proofs' per-level indices, must equal the verifier's derivation from the
statement (engine/c2/public.py: challenges and graph). Synthetic C1 outputs (engine/c2/synthetic.py)
carry the same check to the 8 MiB, 32 GiB (sub-tree) and 64 GiB (top-tree) path shapes."""

from __future__ import annotations

import dataclasses
import hashlib
import os
import random
import re
import secrets
import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.c2.assign import (
    Partition,
    SourceError,
    assign,
    assign_mont,
    compile_plan,
    stacked_sources,
    value_of,
)
from engine.c2.public import Statement, public_inputs
from engine.c2.synthetic import synthetic_c1
from engine.circuit.poseidon_params import poseidon_hash
from engine.seal.circuit_count import TEST_SHAPE, stacked_constraints, stacked_public_inputs
from engine.seal.registry import seal_proof
from engine.seal.sealer import seal_sector
from engine.seal.vanilla import PathElement
from kernels.constants import R_MOD
from kernels.cpu.convert import from_mont_fr

HEAVY = os.environ.get("SEALTOP_HEAVY") == "1"
PROOF_2K = seal_proof("StackedDrg2KiBV1_1")
RNG = random.Random()


def _seal(proof=PROOF_2K, data: bytes | None = None):
    prover, sector = secrets.token_bytes(32), secrets.randbelow(1 << 64)
    if data is None:
        data = secrets.token_bytes(secrets.randbelow(2033))
    res = seal_sector(proof, data, prover, sector, secrets.token_bytes(32), secrets.token_bytes(32))
    return res, data, Statement.of_c1(res.c1, prover, sector)


@pytest.fixture(scope="module")
def sealed():
    return _seal()


def _fr32_node(raw: bytes, capacity: int, node: int) -> int:
    """Node ``node`` of the Fr32-padded sector: each 127 bytes (zero-filled to the capacity),
    read as a little-endian bit string, is four 254-bit nodes."""
    raw = raw + bytes(capacity - len(raw))
    x = int.from_bytes(raw[127 * (node // 4): 127 * (node // 4 + 1)], "little")
    return (x >> (254 * (node % 4))) & ((1 << 254) - 1)


def _sha_node(children: list[int]) -> int:
    d = bytearray(hashlib.sha256(b"".join(c.to_bytes(32, "little") for c in children)).digest())
    d[31] &= 0x3F
    return int.from_bytes(d, "little")


def _climb(vals: dict, ci: int, tree, arities: list[int], leaf: int, node_hash) -> tuple[int, int]:
    """The root and leaf index a path's resolved Sources give: per level its bits (the index)
    and siblings, the current node inserted at the index, hashed."""
    cur, index, weight = leaf, 0, 1
    for level, arity in enumerate(arities):
        i = sum(vals[("path", ci, tree, level, "bit", b)] << b for b in range(arity.bit_length() - 1))
        children = [vals[("path", ci, tree, level, "sibling", j)] for j in range(arity - 1)]
        children.insert(i, cur)
        cur = node_hash(children)
        index += i * weight
        weight *= arity
    return cur, index


def _challenges(st_: Statement) -> list[int]:
    rid = st_.replica_id
    n = st_.proof.challenges
    return [int.from_bytes(hashlib.sha256(rid + st_.seed + struct.pack("<I", i)).digest(), "little")
            % (st_.proof.nodes - 1) + 1 for i in range(n)]


def test_every_source_of_a_sealed_sector_resolves_to_the_oracles(sealed):
    res, data, st_ = sealed
    proof = PROOF_2K
    part = Partition.of_c1(res.c1, 0)
    aux, inputs = stacked_sources(proof)
    assert len(inputs) == stacked_public_inputs(proof)
    assert len(set(aux)) == len(aux) == 855
    values = assign(aux, part)
    assert values == [value_of(s, part) for s in aux]
    assert from_mont_fr(assign_mont(aux, part)) == values
    vals = dict(zip(aux, values))
    assert all(0 <= v < R_MOD for v in values)
    comm_d, comm_c, comm_r_last = (int.from_bytes(b, "little") for b in (res.comm_d, res.comm_c, res.comm_r_last))
    assert vals[("comm_d",)] == comm_d and vals[("comm_c",)] == comm_c and vals[("comm_r_last",)] == comm_r_last
    assert vals[("replica_id",)] == int.from_bytes(res.replica_id, "little")
    assert poseidon_hash([comm_c, comm_r_last]) == vals[("comm_r",)] == int.from_bytes(res.comm_r, "little")
    arities = [8, 8]  # 64 nodes, tree 8-0-0
    capacity = proof.sector_size // 128 * 127
    for ci, c in enumerate(_challenges(st_)):
        assert sum(vals[("challenge_bit", ci, i)] << i for i in range(64)) == c
        leaf = vals[("data_leaf", ci)]
        assert leaf == _fr32_node(data, capacity, c)
        assert _climb(vals, ci, "comm_d", [2] * 6, leaf, _sha_node) == (comm_d, c)
        for group, count in (("drg", 6), ("exp", 8)):
            for p in range(count):
                column = [vals[("column", ci, group, p, row)] for row in range(proof.layers)]
                root, node = _climb(vals, ci, (group, p), arities, poseidon_hash(column), poseidon_hash)
                assert root == comm_c
                assert value_of(("path_input", ci, (group, p), 0), part) == node
        # the replica node and the challenge's column are not supplied (the circuit computes
        # them), so their leaves come from the proof itself; their paths must still climb
        v = res.c1.vanilla_proofs[0][ci]
        replica_leaf = int.from_bytes(v.comm_r_last_proof.leaf, "little")
        assert _climb(vals, ci, "comm_r_last", arities, replica_leaf, poseidon_hash) == (comm_r_last, c)
        column_leaf = int.from_bytes(v.replica_column_proofs.c_x.inclusion_proof.leaf, "little")
        assert _climb(vals, ci, "comm_c", arities, column_leaf, poseidon_hash) == (comm_c, c)
    # the prover's copy of the public inputs is the verifier's derivation
    assert assign(inputs, part) == [value_of(s, part) for s in inputs] == public_inputs(st_, 0)


def test_sources_are_the_circuits():
    """The enumeration is the one engine/c2/stacked.py's walk allocates (Filecoin's test shape:
    22 inputs with ONE, 1,199,620 constraints)."""
    from engine.c2.stacked import synthesize

    built = synthesize(TEST_SHAPE)
    aux, inputs = stacked_sources(TEST_SHAPE)
    assert built.sources == aux
    assert built.input_sources == inputs
    assert len(inputs) + 1 == stacked_constraints(TEST_SHAPE).public_inputs == 22


@pytest.mark.skipif(not HEAVY, reason="set SEALTOP_HEAVY=1 (the 2 KiB circuit's walk: ~10 s)")
def test_sources_are_the_2kib_circuits():
    from engine.c2.stacked import synthesize

    built = synthesize(PROOF_2K)
    assert (built.sources, built.input_sources) == stacked_sources(PROOF_2K)


@pytest.mark.parametrize("name,partitions", [("StackedDrg8MiBV1_1", 1), ("StackedDrg32GiBV1_1", 2),
                                             ("StackedDrg64GiBV1", 1)])
def test_prover_and_verifier_agree_on_every_path_shape(name, partitions):
    proof = seal_proof(name)
    prover, sector = secrets.token_bytes(31) + b"\0", secrets.randbelow(1 << 64)
    c1 = synthetic_c1(proof, secrets.randbelow(1 << 32), prover_id=prover, sector_id=sector,
                      partitions=partitions)
    st_ = Statement.of_c1(c1, prover, sector)
    aux, inputs = stacked_sources(proof)
    plan = compile_plan(inputs, proof)
    for k in range(partitions):
        part = Partition.of_c1(c1, k)
        assert assign(plan, part) == public_inputs(st_, k)
    # a sample of the aux Sources: the plan and the reference agree
    sample = RNG.sample(aux, 300)
    assert assign(sample, part) == [value_of(s, part) for s in sample]
    # a verifier of another sector (or partition) disagrees with this prover
    other = dataclasses.replace(st_, sector_id=sector ^ 1)
    assert assign(plan, part) != public_inputs(other, part.k)
    if partitions > 1:
        assert assign(plan, Partition.of_c1(c1, 0)) != public_inputs(st_, 1)


@settings(max_examples=3, deadline=None)
@given(st.binary(max_size=2032), st.randoms(use_true_random=False))
def test_random_sectors(data, rnd):
    res, _, st_ = _seal(data=data)
    part = Partition.of_c1(res.c1, 0)
    aux, inputs = stacked_sources(PROOF_2K)
    assert assign(inputs, part) == public_inputs(st_, 0)
    order = list(aux)
    rnd.shuffle(order)
    order = order[: rnd.randrange(1, len(order) + 1)]
    assert assign(order, part) == [value_of(s, part) for s in order]


# ---------------------------------------------------------------- refusals
BAD_SOURCES = [
    ("nonsense",), ("replica_id", 0), ("data_leaf",), ("data_leaf", 2), ("data_leaf", -1),
    ("data_leaf", True), ("data_leaf", 0.0), ("challenge_bit", 0, 64), ("challenge_bit", 0),
    ("column", 0, "drg", 6, 0), ("column", 0, "exp", 8, 0), ("column", 0, "exp", 0, 2),
    ("column", 0, "c_x", 0, 0), ("column", 0, "drg", 0), ("path", 0, "comm_d", 6, "bit", 0),
    ("path", 0, "comm_d", 0, "bit", 1), ("path", 0, "comm_d", 0, "sibling", 1),
    ("path", 0, "comm_c", 1, "sibling", 7), ("path", 0, "comm_c", 1, "bit", 3),
    ("path", 0, ("drg", 6), 0, "bit", 0), ("path", 0, ("tree", 0), 0, "bit", 0),
    ("path", 0, ["drg", 0], 0, "bit", 0), ("path", 0, "comm_c", 0, "leaf", 0),
    ("path_input", 0, "comm_d", 1), ("path_input", 0, "tree_q", 0), ("challenge_input", 0, 0),
    "replica_id", (), (0,), None,
]


@pytest.mark.parametrize("src", BAD_SOURCES, ids=repr)
def test_an_unknown_or_out_of_range_source_is_a_clear_error(sealed, src):
    part = Partition.of_c1(sealed[0].c1, 0)
    for resolve in (lambda: value_of(src, part), lambda: assign([("comm_d",), src], part)):
        with pytest.raises(SourceError) as info:
            resolve()
        assert repr(src)[:20] in str(info.value) and "\n" not in str(info.value)


def _replace_proof(c1, ci, v):
    part = list(c1.vanilla_proofs[0])
    part[ci] = v
    return dataclasses.replace(c1, vanilla_proofs=(tuple(part),))


def _with_path(v, tree: str, path):
    if tree == "comm_d":
        return dataclasses.replace(v, comm_d_proofs=path)
    if tree == "comm_r_last":
        return dataclasses.replace(v, comm_r_last_proof=path)
    rc = v.replica_column_proofs
    c_x = dataclasses.replace(rc.c_x, inclusion_proof=path)
    return dataclasses.replace(v, replica_column_proofs=dataclasses.replace(rc, c_x=c_x))


def _path_of(v, tree: str):
    return {"comm_d": v.comm_d_proofs, "comm_r_last": v.comm_r_last_proof,
            "comm_c": v.replica_column_proofs.c_x.inclusion_proof}[tree]


def test_bad_vanilla_proofs_are_refused(sealed):
    c1 = sealed[0].c1
    aux, inputs = stacked_sources(PROOF_2K)
    ci = secrets.randbelow(2)
    v = c1.vanilla_proofs[0][ci]
    # a sibling that is not a field element: named by its Source
    tree = RNG.choice(["comm_d", "comm_r_last"])
    path = _path_of(v, tree)
    el = path.base[0]
    src = ("path", ci, tree, 0, "sibling", 0)
    for value in (R_MOD, R_MOD + 1 + secrets.randbelow((1 << 256) - R_MOD - 2), (1 << 256) - 1, R_MOD - 1):
        hashes = (value.to_bytes(32, "little"),) + el.hashes[1:]
        base = (PathElement(hashes, el.index),) + path.base[1:]
        part = Partition.of_c1(_replace_proof(c1, ci, _with_path(v, tree, dataclasses.replace(path, base=base))), 0)
        if value == R_MOD - 1:  # the largest field element is a value like any other
            assert value_of(src, part) == value == assign(aux, part)[aux.index(src)]
            continue
        for resolve in (lambda: value_of(src, part), lambda: assign(aux, part), lambda: assign_mont(aux, part)):
            with pytest.raises(SourceError, match=re.escape(repr(src)) + ".*not a field element"):
                resolve()
    # a path of the wrong shape: a level missing, a sibling missing, an index past the arity
    short = dataclasses.replace(path, base=path.base[:-1])
    fewer = dataclasses.replace(path, base=(PathElement(el.hashes[:-1], el.index),) + path.base[1:])
    wide = dataclasses.replace(path, base=(PathElement(el.hashes, len(el.hashes) + 1),) + path.base[1:])
    for broken, why in ((short, "levels"), (fewer, "siblings"), (wide, "index")):
        part = Partition.of_c1(_replace_proof(c1, ci, _with_path(v, tree, broken)), 0)
        with pytest.raises(SourceError, match=why):
            assign(aux, part)
        with pytest.raises(SourceError, match=why):
            value_of(("path", ci, tree, 0, "bit", 0), part)
    # another tree_c root in one challenge: comm_c is inconsistent, as the Rust ensures
    cp = _path_of(v, "comm_c")
    other = dataclasses.replace(cp, root=secrets.token_bytes(31) + b"\0")
    with pytest.raises(SourceError, match="inconsistent comm_c"):
        Partition.of_c1(_replace_proof(c1, ci, _with_path(v, "comm_c", other)), 0)
    # a partition the C1 output does not hold, or a wrong number of challenges
    with pytest.raises(SourceError, match="holds partitions 0..0"):
        Partition.of_c1(c1, 1)
    with pytest.raises(SourceError, match="1 challenge proofs"):
        Partition.of_c1(dataclasses.replace(c1, vanilla_proofs=(c1.vanilla_proofs[0][:1],)), 0)
    # the proofs of another challenge in this one's place: the prover's inputs are not the verifier's
    swapped = dataclasses.replace(c1, vanilla_proofs=(c1.vanilla_proofs[0][::-1],))
    st_ = sealed[2]
    if c1.vanilla_proofs[0][0] != c1.vanilla_proofs[0][1]:
        assert assign(inputs, Partition.of_c1(swapped, 0)) != public_inputs(st_, 0)
    # a plan for another shape is refused
    with pytest.raises(SourceError, match="plan is for"):
        assign(compile_plan([("comm_d",)], seal_proof("StackedDrg8MiBV1_1")), Partition.of_c1(c1, 0))


def test_the_plan_is_fast_at_32gib():
    """33,827 Sources a 32 GiB partition: compiled once, then gathered per partition."""
    import time

    proof = seal_proof("StackedDrg32GiBV1_1")
    c1 = synthetic_c1(proof, secrets.randbelow(1 << 32), partitions=1)
    aux, _ = stacked_sources(proof)
    assert len(aux) == 33_827
    t0 = time.perf_counter()
    plan = compile_plan(aux, proof)
    t1 = time.perf_counter()
    part = Partition.of_c1(c1, 0)
    z = assign_mont(plan, part)
    t2 = time.perf_counter()
    assert z.shape == (len(aux), 4) and z.dtype == np.uint64
    sample = RNG.sample(range(len(aux)), 200)
    assert from_mont_fr(z[sample]) == [value_of(aux[i], part) for i in sample]
    print(f"\n32 GiB partition: {len(aux)} sources, plan {1e3 * (t1 - t0):.0f} ms, "
          f"tables + gather + Montgomery {1e3 * (t2 - t1):.1f} ms")


@pytest.mark.skipif(not HEAVY, reason="set SEALTOP_HEAVY=1 (sealing 8 MiB: ~30 s)")
def test_a_sealed_8mib_sector():
    proof = seal_proof("StackedDrg8MiBV1_1")
    res, _, st_ = _seal(proof, secrets.token_bytes(secrets.randbelow(1 << 20)))
    part = Partition.of_c1(res.c1, 0)
    aux, inputs = stacked_sources(proof)
    assert len(inputs) == stacked_public_inputs(proof)
    assert assign(inputs, part) == public_inputs(st_, 0)
    values = assign(aux, part)
    assert values == [value_of(s, part) for s in aux]
    vals = dict(zip(aux, values))
    for ci, c in enumerate(_challenges(st_)):
        leaf = vals[("data_leaf", ci)]
        assert _climb(vals, ci, "comm_d", [2] * 18, leaf, _sha_node) == (int.from_bytes(res.comm_d, "little"), c)
