"""The porep circuit family: presets, the parent graph, synthetic sectors checked against
hashlib and the Python-int Poseidon, witness satisfaction (numba and an independent Python-int
check), every public input bound, foreign graphs rejected, the disk cache, bad input."""

from __future__ import annotations

import hashlib
import os
import random
import secrets

import numpy as np
import pytest

from engine.circuit import porep as porep_mod
from engine.circuit.check import free_variables, unsatisfied_rows_py
from engine.circuit.graph import ParentGraph
from engine.circuit.merkle import poseidon_tree_arities
from engine.circuit.porep import (
    PRESETS,
    PorepParams,
    build_porep,
    count_porep,
    generate_partitions,
    porep_witness,
    preset_params,
)
from engine.circuit.poseidon_params import poseidon_hash
from engine.circuit.statement import PorepStatement
from engine.circuit.witness import witness_python
from engine.synthesis import bench_synth, evaluate, first_unsatisfied, is_satisfied
from kernels.constants import R_MOD
from kernels.cpu.convert import from_mont_fr, to_mont_fr

# A Poseidon-only shape with parents: the graph statement end to end in about 2^14 constraints.
WITH_PARENTS = PorepParams(challenges=2, layers=2, log2_nodes=4, base_parents=2, exp_parents=1, sha=False)
MASK254 = (1 << 254) - 1
# Builds of the 37-entry labelling (medium, large) and porep-32g's count take minutes here: they
# run with SEALTOP_HEAVY=1, not in the default suite.
heavy = pytest.mark.skipif(not os.environ.get("SEALTOP_HEAVY"), reason="set SEALTOP_HEAVY=1 (minutes of tracing)")


def _tamper(z: np.ndarray, v: int, rnd: random.Random) -> np.ndarray:
    bad = z.copy()
    bad[v] = to_mont_fr([from_mont_fr(z[v : v + 1])[0] + rnd.randrange(1, R_MOD)])[0]
    return bad


def _foreign_seed(p: PorepParams, cs: list[int]) -> bytes:
    """A graph seed whose parents differ from the shape's own graph at some challenged node."""
    true = ParentGraph(porep_mod.default_graph_seed(p), p.num_nodes, p.base_parents, p.exp_parents)
    while True:
        seed = secrets.token_bytes(32)
        g = ParentGraph(seed, p.num_nodes, p.base_parents, p.exp_parents)
        if any(g.parents(c) != true.parents(c) for c in cs):
            return seed


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    cache = tmp_path_factory.mktemp("circuits")
    return build_porep("tiny", cache), cache


@pytest.fixture(scope="module")
def with_parents():
    return build_porep(WITH_PARENTS)


# ---------------------------------------------------------------------------- natively, by oracles


def _root(leaf: int, pos: int, sibs: list, arities: list[int], sha: bool) -> int:
    """A Merkle root from a leaf, its position and siblings, with hashlib / Python Poseidon."""
    cur = leaf
    for a, s in zip(arities, sibs):
        s = [s] if sha else list(s)
        kids = s[: pos % a] + [cur] + s[pos % a :]
        if sha:
            raw = hashlib.sha256(b"".join(x.to_bytes(32, "little") for x in kids)).digest()
            cur = int.from_bytes(raw, "little") & MASK254
        else:
            cur = poseidon_hash(kids)
        pos //= a
    assert pos == 0
    return cur


def _filecoin_entries(layer: int, base: list[int], exp: list[int]) -> list[int]:
    """Filecoin's 37 parent entries, written out as its circuit does for 6 + 8 parents."""
    if layer == 1:
        return base * 6 + base[:1]
    both = base + exp
    return both * 2 + both[:9]


def _check_natively(sector, part, challenges: int | None = None) -> None:
    """Every claim of a SHA-256 partition with 6 + 8 parents, with hashlib and Python Poseidon."""
    p = part.params
    assert (p.base_parents, p.exp_parents) == (6, 8) and p.sha
    arities = poseidon_tree_arities(p.log2_nodes)
    g = ParentGraph(sector.graph_seed, p.num_nodes, 6, 8)
    assert sector.comm_r == poseidon_hash([sector.comm_c, sector.comm_r_last])
    assert part.public[:3] == [sector.replica_id, sector.comm_d, sector.comm_r]
    ipc = 1 + 14
    for i, c in enumerate(part.challenges[:challenges]):
        block = part.public[3 + i * ipc : 3 + (i + 1) * ipc]
        assert block[0] == c and 1 <= c < p.num_nodes and block[1:] == g.parents(c)
        cols = part.free["parent_cols"][i]
        for j, pos in enumerate(block[1:]):
            sibs = [part.free[f"pc_sib{lvl}"][i][j] for lvl in range(len(arities))]
            assert _root(poseidon_hash(cols[j]), pos, sibs, arities, False) == sector.comm_c
        labels = []
        for layer in range(1, p.layers + 1):
            base = [cols[j][layer - 1] for j in range(6)]
            exp = [cols[6 + j][layer - 2] for j in range(8)] if layer > 1 else []
            msg = (sector.replica_id.to_bytes(32, "little") + layer.to_bytes(4, "big") + c.to_bytes(8, "big")
                   + bytes(20) + b"".join(x.to_bytes(32, "little") for x in _filecoin_entries(layer, base, exp)))
            assert len(msg) == 64 + 37 * 32
            labels.append(int.from_bytes(hashlib.sha256(msg).digest(), "little") & MASK254)
        c_sibs = [part.free[f"c_sib{lvl}"][i] for lvl in range(len(arities))]
        assert _root(poseidon_hash(labels), c, c_sibs, arities, False) == sector.comm_c
        replica = (part.free["data"][i] + labels[-1]) % R_MOD
        r_sibs = [part.free[f"r_sib{lvl}"][i] for lvl in range(len(arities))]
        assert _root(replica, c, r_sibs, arities, False) == sector.comm_r_last
        d_sibs = [part.free[f"d_sib{lvl}"][i] for lvl in range(p.log2_nodes)]
        assert _root(part.free["data"][i], c, d_sibs, [2] * p.log2_nodes, True) == sector.comm_d


def test_graph_shape_and_seeding() -> None:
    seed = secrets.token_bytes(32)
    n = 1 << random.randrange(4, 31)
    g = ParentGraph(seed, n, 6, 8)
    rnd = random.Random()
    for v in [0, 1, 2, 3, n - 1] + [rnd.randrange(n) for _ in range(50)]:
        base, exp = g.base_parents(v), g.exp_parents(v)
        assert len(base) == 6 and len(exp) == 8 and g.parents(v) == base + exp
        assert all(0 <= e < n for e in exp)
        if v < 2:
            assert base == [0] * 6
        else:
            assert base[0] == v - 1 and all(0 <= b < v for b in base)
    assert ParentGraph(seed, n, 6, 8).parents(n - 1) == g.parents(n - 1)
    other = ParentGraph(secrets.token_bytes(32), n, 6, 8)
    assert any(other.parents(v) != g.parents(v) for v in range(2, 40))
    with pytest.raises(ValueError, match="outside the graph"):
        g.parents(n)


@pytest.mark.parametrize("params", [
    preset_params("medium"),  # a full sector: every label real
    PorepParams(challenges=2, layers=2, log2_nodes=20, base_parents=6, exp_parents=8),  # sparse
])
def test_sector_statement_matches_hashlib_and_poseidon(params: PorepParams) -> None:
    sector, parts = generate_partitions(params, random.randrange(2**32), partitions=2)
    for part in parts:
        assert part.public == sector.statement(parts.index(part)).public_inputs()
        _check_natively(sector, part)


def test_porep_32g_statement_matches_hashlib_and_poseidon() -> None:
    p = preset_params("sealtop-32g")
    assert (p.challenges, p.layers, p.num_nodes, p.base_parents, p.exp_parents) == (18, 11, 2**30, 6, 8)
    sector, parts = generate_partitions("sealtop-32g", random.randrange(2**32))
    assert len(parts[0].public) == 3 + 18 * 15
    _check_natively(sector, parts[0], challenges=1)


# ---------------------------------------------------------------------------- tiny


def test_tiny_witness_satisfies_and_every_value_matters(tiny) -> None:
    shape, _ = tiny
    sector, parts = generate_partitions("tiny", random.randrange(2**32))
    pub, z = porep_witness(shape, parts[0])
    assert pub == [sector.replica_id, sector.comm_d, sector.comm_r, *parts[0].challenges]
    r = shape.r1cs
    assert 2**11 < r.num_constraints <= 2**12
    assert is_satisfied(r, z)
    zi = from_mont_fr(z)
    assert unsatisfied_rows_py(r, zi) == []
    assert witness_python(shape, parts[0].public, parts[0].free) == zi
    # no witness value can change alone, public inputs included (replica_id and comm_d as well)
    rnd = random.Random()
    variables = list(range(1, r.num_vars))
    assert free_variables(r, zi, variables, [rnd.randrange(1, R_MOD) for _ in variables]) == []
    for v in rnd.sample(variables, 5):  # the same, through the numba evaluation
        assert not is_satisfied(r, _tamper(z, v, rnd))


def test_tiny_public_inputs_are_bound(tiny) -> None:
    shape, _ = tiny
    sector, parts = generate_partitions("tiny", random.randrange(2**32))
    part = parts[0]
    assert sector.comm_r == poseidon_hash([sector.comm_c, sector.comm_r_last])
    for i in range(4):  # replica_id, comm_d, comm_r, the challenge
        pub = list(part.public)
        pub[i] = (pub[i] + random.randrange(1, 7)) % (part.params.num_nodes if i == 3 else R_MOD)
        bad = porep_mod.PorepPartition(part.params, pub, part.free, part.challenges)
        _, z = porep_witness(shape, bad)
        assert not is_satisfied(shape.r1cs, z), f"public input {i} is free"


def test_tiny_groth16_proof_verifies_and_binds_replica_id_and_comm_d(tiny) -> None:
    """A tiny partition proven with the project's Groth16, checked by the oracle's pairing
    against the statement's public inputs; rejected for a foreign comm_d, replica_id or comm_r
    and for another challenge seed."""
    from engine.groth16.prove import prove
    from engine.groth16.setup import setup
    from engine.groth16.verify import verify
    from engine.groth16.vkey import verifying_key
    from kernels.backend import get_backend

    shape, _ = tiny
    backend = get_backend("cpu")
    pk = setup(shape.r1cs, secrets.token_hex(8), backend)
    vk = verifying_key(pk)
    seed = random.randrange(2**32)
    sector, parts = generate_partitions("tiny", seed)
    other, _ = generate_partitions("tiny", seed + 1)
    _, z = porep_witness(shape, parts[0])
    proof = prove(pk, shape.r1cs, z, backend)
    st = sector.statement(0)
    assert verify(vk, st.public_inputs(), proof)
    for field in ("comm_d", "replica_id", "comm_r"):
        foreign = PorepStatement(**{**st.__dict__, field: getattr(other, field)})
        # a foreign replica_id may move the challenge too; either way the proof must fail
        assert not verify(vk, foreign.public_inputs(), proof), field
    for x in range(1, 8):  # every other challenge index of this 8-node sector
        if x != parts[0].challenges[0]:
            assert not verify(vk, [*st.public_inputs()[:3], x], proof)
    # and no satisfying witness exists for a foreign comm_d: the prover refuses
    pub = [parts[0].public[0], other.comm_d, *parts[0].public[2:]]
    _, zbad = porep_witness(shape, porep_mod.PorepPartition(parts[0].params, pub, parts[0].free, []))
    with pytest.raises(ValueError):
        prove(pk, shape.r1cs, zbad, backend)


# ---------------------------------------------------------------------------- parents


def test_parent_positions_and_labels_are_bound(with_parents) -> None:
    """The graph statement on a Poseidon-only shape with 2 + 1 parents: the genuine witness
    satisfies; labels computed over a foreign graph satisfy nothing, whether the prover opens
    the true graph's parents (the labels then do not hash to them) or claims the foreign
    graph's positions (the verifier derives the true ones)."""
    shape = with_parents
    seed = random.randrange(2**32)
    sector, parts = generate_partitions(WITH_PARENTS, seed)
    _, z = porep_witness(shape, parts[0])
    zi = from_mont_fr(z)
    assert is_satisfied(shape.r1cs, z) and unsatisfied_rows_py(shape.r1cs, zi) == []
    assert witness_python(shape, parts[0].public, parts[0].free) == zi
    foreign = _foreign_seed(WITH_PARENTS, parts[0].challenges)
    # labels from the foreign graph, the true graph's parents opened at the true positions
    cheat_sector, cheat = generate_partitions(WITH_PARENTS, seed, label_graph_seed=foreign)
    assert cheat[0].public[3:] == parts[0].public[3:]
    _, zc = porep_witness(shape, cheat[0])
    assert not is_satisfied(shape.r1cs, zc)
    assert unsatisfied_rows_py(shape.r1cs, from_mont_fr(zc))
    # a sector consistent with the foreign graph, against the true graph's public inputs
    f_sector, f_parts = generate_partitions(WITH_PARENTS, seed, graph_seed=foreign)
    true_public = PorepStatement(**{**f_sector.statement(0).__dict__,
                                    "graph_seed": sector.graph_seed}).public_inputs()
    assert true_public != f_parts[0].public
    _, zf = porep_witness(shape, f_parts[0])
    assert is_satisfied(shape.r1cs, zf)  # its own statement holds
    _, zt = porep_witness(shape, porep_mod.PorepPartition(WITH_PARENTS, true_public, f_parts[0].free, []))
    assert not is_satisfied(shape.r1cs, zt)
    # a full single-variable scan: no witness value, public inputs included, changes alone
    rnd = random.Random()
    variables = list(range(1, shape.r1cs.num_vars))
    assert free_variables(shape.r1cs, zi, variables, [rnd.randrange(1, R_MOD) for _ in variables]) == []


def test_proof_over_a_foreign_graph_is_rejected(with_parents) -> None:
    """A proof made with another graph's parents verifies for that graph's public inputs and is
    rejected by the oracle's pairing against the true graph's."""
    from engine.groth16.prove import prove
    from engine.groth16.setup import setup
    from engine.groth16.verify import verify
    from engine.groth16.vkey import verifying_key
    from kernels.backend import get_backend

    shape = with_parents
    be = get_backend("cpu")
    pk = setup(shape.r1cs, secrets.token_hex(8), be)
    vk = verifying_key(pk)
    seed = random.randrange(2**32)
    sector, parts = generate_partitions(WITH_PARENTS, seed)
    foreign = _foreign_seed(WITH_PARENTS, parts[0].challenges)
    f_sector, f_parts = generate_partitions(WITH_PARENTS, seed, graph_seed=foreign)
    _, z = porep_witness(shape, f_parts[0])
    proof = prove(pk, shape.r1cs, z, be)
    f_statement = f_sector.statement(0)
    assert verify(vk, f_statement.public_inputs(), proof)
    true_statement = PorepStatement(**{**f_statement.__dict__, "graph_seed": sector.graph_seed})
    assert not verify(vk, true_statement.public_inputs(), proof)
    tampered = bytes([proof[0] ^ 0x01]) + proof[1:]
    assert not verify(vk, f_statement.public_inputs(), tampered)


# ---------------------------------------------------------------------------- shapes and counts


def test_counts_equal_real_builds(tiny, with_parents) -> None:
    for shape, p in ((tiny[0], preset_params("tiny")), (with_parents, WITH_PARENTS)):
        total, per = count_porep(p)
        assert total == shape.r1cs.num_constraints and sum(per.values()) == total
        assert per["public inputs (x·0 = 0)"] == 1 + p.num_public == shape.r1cs.num_inputs


@pytest.mark.slow
@heavy
def test_porep_32g_count_is_filecoins() -> None:
    total, per = count_porep("sealtop-32g")
    assert total < 2**27 and abs(total - 130_278_869) / 130_278_869 < 0.03
    assert per["public inputs (x·0 = 0)"] == 1 + 3 + 18 * 15


@pytest.mark.slow
@heavy
@pytest.mark.parametrize("preset", ["small", "medium", "large"])
def test_preset_counts_equal_real_builds(tmp_path, preset: str) -> None:
    shape = build_porep(preset, tmp_path)
    assert count_porep(preset)[0] == shape.r1cs.num_constraints
    if preset == "large":
        assert 2**23 < shape.r1cs.num_constraints <= 2**24


@pytest.mark.slow
@pytest.mark.parametrize("preset", ["small", pytest.param("medium", marks=heavy)])
def test_preset_satisfies_with_every_gadget(tmp_path, preset: str) -> None:
    shape = build_porep(preset, tmp_path)
    names = [t.name for t in shape.templates]
    assert {"sha256-level", "poseidon8-level", "column2", "comm_r", "replica-bits"} <= set(names)
    # each gadget was traced once and replicated: one template per name, many placements
    assert len(names) == len(set(names)) and len(shape.stages) > len(names)
    p = preset_params(preset)
    seed = random.randrange(2**32)
    sector, parts = generate_partitions(preset, seed)
    _, z = porep_witness(shape, parts[0])
    r = shape.r1cs
    a, b, c = evaluate(r, z)
    assert first_unsatisfied(a, b, c) < 0
    zi = from_mont_fr(z)
    if preset == "small":  # the independent Python-int check as well
        assert unsatisfied_rows_py(r, zi) == []
    labels = shape.regions["labels"]
    ch = parts[0].challenges[0]
    if p.num_parents == 0:
        assert zi[labels[0, 0]] == porep_mod.sha_label(sector.replica_id, 1, ch, [])
    else:
        _check_natively(sector, parts[0])
        assert {"label6", "label14"} <= set(names)
        # labels over a foreign graph, opened at the true parents: no satisfying witness
        _, cheat = generate_partitions(preset, seed, label_graph_seed=_foreign_seed(p, parts[0].challenges))
        _, zc = porep_witness(shape, cheat[0])
        assert not is_satisfied(r, zc)
    rnd = random.Random()
    for v in rnd.sample(range(1, r.num_vars), 40):
        assert not is_satisfied(r, _tamper(z, v, rnd)), f"variable {v} can change freely"


def test_presets_keep_their_shapes() -> None:
    assert set(PRESETS) == {"tiny", "small", "medium", "large", "sealtop-32g"}
    for name in ("medium", "large", "sealtop-32g"):
        p = preset_params(name)
        assert (p.base_parents, p.exp_parents, p.sha) == (6, 8, True)
    assert preset_params("large").log2_nodes == 9 and preset_params("sealtop-32g").layers == 11


# ---------------------------------------------------------------------------- cache and bad input


def test_cache_reused(tiny, monkeypatch) -> None:
    shape, cache = tiny
    calls = []
    monkeypatch.setattr(porep_mod, "_build", lambda p, say: calls.append(p) or pytest.fail("rebuilt"))
    lines: list[str] = []
    again = build_porep("tiny", cache, progress=lines.append)
    assert lines and "cached" in lines[0]
    assert calls == [] and again.from_cache and not shape.from_cache
    assert again.r1cs.digest() == shape.r1cs.digest()
    # the cache entry carries the digest, and it is the hash of the matrices it holds
    assert "_digest" in again.r1cs.__dict__
    assert again.r1cs._hash() == again.r1cs.digest()
    _, parts = generate_partitions("tiny", 3)
    _, z = porep_witness(again, parts[0])
    assert is_satisfied(again.r1cs, z)
    other = PorepParams(challenges=2, layers=2, log2_nodes=3, sha=False)
    with pytest.raises(pytest.fail.Exception):
        build_porep(other, cache)  # a different shape is not served from the cache


def test_generator_is_reproducible() -> None:
    s1, p1 = generate_partitions("small", 11)
    s2, p2 = generate_partitions("small", 11)
    s3, _ = generate_partitions("small", 12)
    assert s1 == s2 and p1[0].public == p2[0].public and s1.comm_r != s3.comm_r


def test_too_large_for_this_machine_is_a_clear_error(monkeypatch) -> None:
    from engine.circuit import builder

    monkeypatch.setattr(builder, "available_memory_bytes", lambda: 1 << 20)
    with pytest.raises(ValueError, match="needs about .* for its matrices; this machine has 1.00 MiB available"):
        build_porep("tiny")


def test_bad_presets_and_params() -> None:
    with pytest.raises(ValueError, match="unknown porep preset"):
        preset_params("huge")
    for bad in (
        PorepParams(challenges=0, layers=2, log2_nodes=3),
        PorepParams(challenges=1, layers=3, log2_nodes=3),
        PorepParams(challenges=1, layers=2, log2_nodes=0),
        PorepParams(challenges=1, layers=2, log2_nodes=3, base_parents=-1),
        PorepParams(challenges=1, layers=2, log2_nodes=3, base_parents=30, exp_parents=8),
        PorepParams(challenges=1, layers=2, log2_nodes=3, base_parents=0, exp_parents=2),
        PorepParams(challenges=1, layers=2, log2_nodes=3, base_parents=6, exp_parents=8, sha=False),
    ):
        with pytest.raises(ValueError, match="porep"):
            build_porep(bad)
    with pytest.raises(ValueError):
        generate_partitions("tiny", 1, partitions=0)
    with pytest.raises(ValueError, match="full sector"):
        generate_partitions(PorepParams(1, 2, 20, 2, 1), 1, label_graph_seed=bytes(32))


def test_bench_synth_reports(tmp_path) -> None:
    rep = bench_synth("tiny", cache_dir=str(tmp_path))
    assert rep["satisfied"] and rep["constraints"] > 0 and rep["nonzeros"] > rep["constraints"]
    assert 0.0 <= rep["aux_01_share"] <= 1.0 and rep["witness_ms"] > 0 and rep["eval_ms"] > 0


def test_input_constraints_match_r1cs_helper() -> None:
    """The builder writes bellman's input rows in place; they equal with_input_constraints."""
    from engine.circuit.builder import ONE_MONT, CircuitBuilder
    from engine.circuit.template import Tracer, var
    from engine.groth16.r1cs import CSR, R1CS, with_input_constraints

    tr = Tracer("mul", 2)
    o = tr.alloc()
    tr.enforce(var(tr.input(0)), var(tr.input(1)), var(o))
    t = tr.finish()
    cb = CircuitBuilder("x", 2)
    cb.place(t, np.array([[1, 2], [2, 1]]))
    shape = cb.compile()
    r = shape.r1cs
    n = r.num_inputs

    def cut(m: CSR) -> CSR:
        return CSR(m.indptr[: m.rows - n + 1], m.indices[: m.indptr[m.rows - n]], m.data[: m.indptr[m.rows - n]])

    bare = R1CS(n, r.num_aux, cut(r.A), cut(r.B), cut(r.C))
    assert with_input_constraints(bare, ONE_MONT).digest() == r.digest()


def test_synthesize_into_preallocated_buffers(tiny) -> None:
    from engine.synthesis import alloc_abc, synthesize_partition

    shape, _ = tiny
    r = shape.r1cs
    _, parts = generate_partitions("tiny", random.randrange(2**32))
    z = np.full((r.num_vars, 4), 0xAB, np.uint64)  # garbage is overwritten
    abc = alloc_abc(r)
    syn = synthesize_partition(shape, parts[0], z, abc)
    assert syn.z is z and all(x is y for x, y in zip(syn.abc, abc))
    assert first_unsatisfied(*abc) < 0
    assert syn.constraints == r.num_constraints and syn.nonzeros == r.nnz
    assert 0.0 < syn.aux_01_share < 1.0 and syn.witness_ms > 0 and syn.eval_ms > 0
    with pytest.raises(ValueError, match="witness buffer"):
        synthesize_partition(shape, parts[0], np.zeros((3, 4), np.uint64))
    bad = porep_mod.PorepPartition(parts[0].params, [R_MOD, *parts[0].public[1:]], parts[0].free, [])
    with pytest.raises(ValueError, match="field element"):
        porep_witness(shape, bad)


def test_pipeline_circuits_give_the_verifiers_inputs() -> None:
    """What the engine verifies against: derived from the job (seed, partition), equal to what
    an honest witness carries, and different for another seed."""
    from engine.groth16.examples import public_inputs
    from engine.pipeline.circuits import resolve

    seed = random.randrange(2**32)
    for preset in ("cubic", "chain-9", "tiny"):
        c = resolve(preset)
        z = c.witness(seed, 1, 2, None)
        assert c.public_inputs(seed, 1, 2) == public_inputs(c.r1cs, z)
        assert c.public_inputs(seed + 1, 1, 2) != c.public_inputs(seed, 1, 2)
    sector, _ = generate_partitions("tiny", seed, 2)
    assert resolve("tiny").public_inputs(seed, 1, 2) == sector.statement(1).public_inputs()
