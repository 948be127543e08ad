"""A porep partition proven on the CPU and checked by py_arkworks_bls12381's pairing; the proof
is rejected against a wrong comm_r, replica_id or comm_d and a wrong challenge index; snarkjs
accepts small's export and rejects a tampered one (tiny's: test_snarkjs). CI proves `tiny` (Poseidon trees, column hash,
encoding); `small` adds every SHA-256 gadget (tree_d and labelling) and takes 25 s of a 2-core
machine, so it runs with SEALTOP_HEAVY=1 (its circuit's satisfiability is in CI:
test_circuit_porep)."""

from __future__ import annotations

import os
import random
import secrets

import pytest

from engine.circuit.porep import build_porep, generate_partitions, porep_witness
from engine.groth16.prove import prove
from engine.groth16.setup import setup
from engine.groth16.verify import verify
from engine.groth16.vkey import verifying_key
from kernels.backend import get_backend
from kernels.constants import R_MOD

HEAVY = pytest.mark.skipif(not os.environ.get("SEALTOP_HEAVY"),
                           reason="set SEALTOP_HEAVY=1 (25 s on 2 cores)")


@pytest.mark.slow
@pytest.mark.parametrize("preset, least", [("tiny", 2**9), pytest.param("small", 2**17, marks=HEAVY)])
def test_partition_proof_verifies_and_binds_public_inputs(tmp_path, preset: str, least: int) -> None:
    be = get_backend("cpu")
    shape = build_porep(preset, cache_dir=tmp_path)
    assert shape.r1cs.num_constraints > least
    pk = setup(shape.r1cs, secrets.token_hex(8), be)
    sector, parts = generate_partitions(preset, random.randrange(2**32))
    pub, z = porep_witness(shape, parts[0])
    assert pub[:3] == [sector.replica_id, sector.comm_d, sector.comm_r]
    proof = prove(pk, shape.r1cs, z, be)
    vk = verifying_key(pk)
    assert verify(vk, sector.statement(0).public_inputs(), proof)  # what the verifier derives
    for i in range(3):  # replica_id, comm_d, comm_r
        wrong = list(pub)
        wrong[i] = (wrong[i] + 1) % R_MOD
        assert not verify(vk, wrong, proof)
    wrong_challenge = [*pub[:3], pub[3] ^ 1, *pub[4:]]
    assert not verify(vk, wrong_challenge, proof)
    # snarkjs, where it runs, accepts the exported proof and rejects a tampered one (tiny's
    # partitions are test_snarkjs's own case)
    from test_snarkjs import _accepted, _snarkjs, _snarkjs_verify

    from engine.groth16 import snarkjs

    if preset != "tiny" and _snarkjs() is not None:
        vkj, pj, pubj = snarkjs.vk_json(vk), snarkjs.proof_json(proof), snarkjs.public_json(pub)
        assert _accepted(_snarkjs_verify(tmp_path, vkj, pubj, pj))
        assert not _accepted(_snarkjs_verify(tmp_path, vkj, pubj, dict(pj, pi_c=pj["pi_a"])))


def test_cli_porep_statement_setup_prove_verify(tmp_path, capsys) -> None:
    """setup/prove/verify --preset tiny from the command line: the public-input file is the
    statement, verify derives every input from it; a foreign comm_d or partition is rejected
    (exit 1), a malformed statement is one line and exit 2."""
    import dataclasses
    import json

    from engine.verbs.cli import main

    d = tmp_path
    pk, vk, proof, st = d / "t.pk", d / "t.vk.json", d / "proof.bin", d / "st.json"
    assert main(["setup", "--preset", "tiny", "--pk", str(pk), "--vk", str(vk), "--backend", "cpu"]) == 0
    seed = str(random.randrange(2**32))
    assert main(["prove", "--preset", "tiny", "--pk", str(pk), "--x", seed, "--proof", str(proof),
                 "--public", str(st), "--backend", "cpu"]) == 0
    obj = json.loads(st.read_text())
    assert obj["statement"] == "sealtop-porep" and obj["preset"] == "tiny" and "challenges" not in obj
    verify_args = ["verify", "--vk", str(vk), "--proof", str(proof), "--public"]
    assert main([*verify_args, str(st)]) == 0
    from engine.circuit.statement import statement_from_json

    _, statement = statement_from_json(obj)
    other = next(i for i in range(1, 100)  # a partition whose derived challenge differs
                 if dataclasses.replace(statement, partition=i).challenges() != statement.challenges())
    for field, value in (("comm_d", str((int(obj["comm_d"]) + 1) % R_MOD)), ("partition", other)):
        bad = d / f"bad-{field}.json"
        bad.write_text(json.dumps({**obj, field: value}))
        assert main([*verify_args, str(bad)]) == 1, field
    capsys.readouterr()
    broken = d / "broken.json"
    broken.write_text(json.dumps({k: v for k, v in obj.items() if k != "comm_r"}))
    assert main([*verify_args, str(broken)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "comm_r" in err and "Traceback" not in err
    assert main(["setup", "--preset", "huge", "--pk", str(pk), "--vk", str(vk)]) == 2
