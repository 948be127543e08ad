"""A `small` porep partition (every gadget: SHA-256 tree_d and labelling, Poseidon trees, column
hash, encoding) proven on the CPU and checked by py_arkworks_bls12381's pairing; the proof is
rejected against a wrong comm_r, replica_id or comm_d and a wrong challenge index."""

from __future__ import annotations

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


@pytest.mark.slow
def test_small_partition_proof_verifies_and_binds_public_inputs(tmp_path) -> None:
    be = get_backend("cpu")
    shape = build_porep("small", cache_dir=tmp_path)
    assert shape.r1cs.num_constraints > 2**17
    pk = setup(shape.r1cs, secrets.token_hex(8), be)
    sector, parts = generate_partitions("small", random.randrange(2**32))
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
