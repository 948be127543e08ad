"""The porep circuit family: presets, job generator, witness satisfaction (numba and an
independent Python-int check), tampering, public-input binding, the disk cache, bad input."""

from __future__ import annotations

import random

import numpy as np
import pytest

from engine.circuit import porep as porep_mod
from engine.circuit.check import free_variables, unsatisfied_rows_py
from engine.circuit.porep import (
    PRESETS,
    PorepParams,
    build_porep,
    generate_partitions,
    label_message,
    porep_witness,
    preset_params,
)
from engine.circuit.poseidon_params import poseidon_hash
from engine.circuit.sha256 import sha256_field
from engine.circuit.witness import witness_python
from engine.synthesis import bench_synth, evaluate, first_unsatisfied, is_satisfied
from kernels.constants import R_MOD
from kernels.cpu.convert import from_mont_fr, to_mont_fr


def _tamper(z: np.ndarray, v: int, rnd: random.Random) -> np.ndarray:
    bad = z.copy()
    bad[v] = to_mont_fr([from_mont_fr(z[v : v + 1])[0] + rnd.randrange(1, R_MOD)])[0]
    return bad


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    cache = tmp_path_factory.mktemp("circuits")
    return build_porep("tiny", cache), cache


def test_tiny_witness_satisfies_and_every_value_matters(tiny) -> None:
    shape, _ = tiny
    seed = random.randrange(2**32)
    sector, parts = generate_partitions("tiny", seed)
    pub, z = porep_witness(shape, parts[0])
    assert pub == [sector.replica_id, sector.comm_d, sector.comm_r, *parts[0].challenges]
    r = shape.r1cs
    assert r.num_constraints <= 2**12
    assert is_satisfied(r, z)
    zi = from_mont_fr(z)
    assert unsatisfied_rows_py(r, zi) == []
    assert witness_python(shape, parts[0].public, parts[0].free) == zi
    # changing any one witness value breaks some constraint (tiny leaves out the SHA-256
    # parts, so replica_id and comm_d, public inputs 1 and 2, are not used by its constraints)
    rnd = random.Random()
    variables = list(range(3, r.num_vars))
    assert free_variables(r, zi, variables, [rnd.randrange(1, R_MOD) for _ in variables]) == []
    assert free_variables(r, zi, [1, 2], [5, 7]) == [1, 2]  # the checker does see free ones
    for v in rnd.sample(variables, 5):  # the same, through the numba evaluation
        assert not is_satisfied(r, _tamper(z, v, rnd))


def test_tiny_public_inputs_are_bound(tiny) -> None:
    shape, _ = tiny
    sector, parts = generate_partitions("tiny", random.randrange(2**32))
    part = parts[0]
    assert sector.comm_r == poseidon_hash([sector.comm_c, sector.comm_r_last])
    wrong_r = [part.public[0], part.public[1], (part.public[2] + 1) % R_MOD, *part.public[3:]]
    n = part.params.num_nodes
    wrong_c = [*part.public[:3], (part.public[3] + 1) % n, *part.public[4:]]
    for pub in (wrong_r, wrong_c):
        bad = porep_mod.PorepPartition(part.params, pub, part.free, part.challenges)
        _, z = porep_witness(shape, bad)
        assert not is_satisfied(shape.r1cs, z)


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
    other = PorepParams(challenges=1, layers=2, log2_nodes=3, parents=0, sha=False)
    with pytest.raises(pytest.fail.Exception):
        build_porep(other, cache)  # a different shape is not served from the cache


def test_generator_is_reproducible_and_real() -> None:
    s1, p1 = generate_partitions("small", 11)
    s2, p2 = generate_partitions("small", 11)
    s3, _ = generate_partitions("small", 12)
    assert s1 == s2 and p1[0].public == p2[0].public and s1.comm_r != s3.comm_r
    p = preset_params("small")
    # the labels of a full sector are real: layer 1 of challenged node c
    c = p1[0].challenges[0]
    label1 = sha256_field(label_message(s1.replica_id, 1, c, [0] * p.parents))
    assert label1 < 2**254


@pytest.mark.slow
@pytest.mark.parametrize("preset", ["small", "medium"])
def test_preset_satisfies_with_every_gadget(tmp_path, preset: str) -> None:
    shape = build_porep(preset, tmp_path)
    names = [t.name for t in shape.templates]
    assert {"label", "sha256-level", "poseidon8-level", "column2", "comm_r"} <= set(names)
    # each gadget was traced once and replicated: one template per name, many placements
    assert len(names) == len(set(names)) and len(shape.stages) > len(names)
    sector, parts = generate_partitions(preset, random.randrange(2**32))
    _, z = porep_witness(shape, parts[0])
    r = shape.r1cs
    a, b, c = evaluate(r, z)
    assert first_unsatisfied(a, b, c) < 0
    zi = from_mont_fr(z)
    if preset == "small":  # the independent Python-int check as well
        assert unsatisfied_rows_py(r, zi) == []
    labels = shape.regions["labels"]
    ch = parts[0].challenges[0]
    npar = preset_params(preset).parents
    if npar == 0:
        assert zi[labels[0, 0]] == sha256_field(label_message(sector.replica_id, 1, ch, []))
    else:  # layer 2 hashes the parents' layer-1 labels
        par = parts[0].free["parent_labels"][0][1]
        assert zi[labels[0, 1]] == sha256_field(label_message(sector.replica_id, 2, ch, par))
    rnd = random.Random()
    for v in rnd.sample(range(1, r.num_vars), 40):
        assert not is_satisfied(r, _tamper(z, v, rnd)), f"variable {v} can change freely"


def test_too_large_for_this_machine_is_a_clear_error(monkeypatch) -> None:
    from engine.circuit import builder

    monkeypatch.setattr(builder, "available_memory_bytes", lambda: 1 << 20)
    with pytest.raises(ValueError, match="GiB available"):
        build_porep("tiny")


def test_bad_presets_and_params() -> None:
    with pytest.raises(ValueError, match="unknown porep preset"):
        preset_params("huge")
    for bad in (
        PorepParams(challenges=0, layers=2, log2_nodes=3, parents=0),
        PorepParams(challenges=1, layers=3, log2_nodes=3, parents=0),
        PorepParams(challenges=1, layers=2, log2_nodes=0, parents=0),
        PorepParams(challenges=1, layers=2, log2_nodes=3, parents=-1),
    ):
        with pytest.raises(ValueError, match="porep"):
            build_porep(bad)
    with pytest.raises(ValueError):
        generate_partitions("tiny", 1, partitions=0)
    assert set(PRESETS) == {"tiny", "small", "medium", "large", "porep-32g"}


def test_bench_synth_reports(tmp_path) -> None:
    rep = bench_synth("tiny", cache_dir=str(tmp_path))
    assert rep["satisfied"] and rep["constraints"] > 0 and rep["nonzeros"] > rep["constraints"]
    assert 0.0 <= rep["aux_01_share"] <= 1.0 and rep["witness_ms"] > 0 and rep["eval_ms"] > 0


def test_input_constraints_match_r1cs_helper() -> None:
    """The builder writes bellman's input rows in place; they equal with_input_constraints."""
    from engine.circuit.builder import CircuitBuilder, ONE_MONT
    from engine.circuit.template import Tracer, var
    from engine.groth16.r1cs import R1CS, CSR, with_input_constraints

    tr = Tracer("mul", 2)
    o = tr.alloc()
    tr.enforce(var(tr.input(0)), var(tr.input(1)), var(o))
    t = tr.finish()
    cb = CircuitBuilder("x", 2)
    cb.place(t, np.array([[1, 2], [2, 1]]))
    shape = cb.compile()
    r = shape.r1cs
    n = r.num_inputs
    cut = lambda m: CSR(m.indptr[: m.rows - n + 1], m.indices[: m.indptr[m.rows - n]], m.data[: m.indptr[m.rows - n]])
    bare = R1CS(n, r.num_aux, cut(r.A), cut(r.B), cut(r.C))
    assert with_input_constraints(bare, ONE_MONT).digest() == r.digest()


def test_tiny_groth16_proof_verifies_and_binds_public_inputs(tiny) -> None:
    """A tiny partition proven with the project's Groth16 and checked by the oracle's pairing;
    rejected with a wrong comm_r and with a wrong challenge index."""
    import secrets

    from engine.groth16.prove import prove
    from engine.groth16.setup import setup
    from engine.groth16.verify import verify
    from engine.groth16.vkey import verifying_key
    from kernels.backend import get_backend

    shape, _ = tiny
    backend = get_backend("cpu")
    pk = setup(shape.r1cs, secrets.token_hex(8), backend)
    vk = verifying_key(pk)
    _, parts = generate_partitions("tiny", random.randrange(2**32))
    public, z = porep_witness(shape, parts[0])
    proof = prove(pk, shape.r1cs, z, backend)
    assert verify(vk, public, proof)
    wrong_r = list(public)
    wrong_r[2] = (wrong_r[2] + 1) % R_MOD
    assert not verify(vk, wrong_r, proof)
    wrong_c = list(public)
    wrong_c[3] = (wrong_c[3] + 1) % parts[0].params.num_nodes
    assert not verify(vk, wrong_c, proof)
    # and no satisfying witness exists for the wrong challenge: the prover refuses
    bad = porep_mod.PorepPartition(parts[0].params, wrong_c, parts[0].free, parts[0].challenges)
    _, zbad = porep_witness(shape, bad)
    with pytest.raises(ValueError):
        prove(pk, shape.r1cs, zbad, backend)


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
