"""The verifier's public inputs of a C2 partition (engine/c2/public.py) and the statement file.

Oracles that are not the code under test: replica_id and the interactive challenges recomputed
with hashlib over Python ints (filecoin-proofs' generate_replica_id, storage-proofs-porep's
InteractiveChallenges::derive), the parents from the sealer's whole-graph parent table
(engine/seal/graph.sdr_parents, which sealing used to build the labels the vanilla verifier
accepted), and the input count from engine/seal/circuit_count (checked there against Filecoin's
328 inputs of the 32 GiB circuit)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import secrets
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.c2.public import (
    STATEMENT_FIELDS,
    Statement,
    StatementError,
    loads_statement,
    public_inputs,
    read_statement,
    statement_json,
    write_statement,
)
from engine.seal.circuit_count import stacked_constraints, stacked_public_inputs
from engine.seal.graph import sdr_parents
from engine.seal.registry import SEAL_PROOFS, seal_proof
from engine.seal.sealer import seal_sector
from kernels.constants import R_MOD

PROOF_2K = seal_proof("StackedDrg2KiBV1_1")


def _fe() -> bytes:
    """A random canonical, non-zero field element's 32 bytes."""
    return (1 + secrets.randbelow(R_MOD - 1)).to_bytes(32, "little")


def _random_statement(proof=PROOF_2K) -> Statement:
    return Statement(proof, secrets.token_bytes(32), secrets.randbelow(1 << 64), secrets.token_bytes(32),
                     secrets.token_bytes(32), _fe(), _fe())


def _oracle_replica_id(st: Statement) -> int:
    d = bytearray(hashlib.sha256(st.prover_id + struct.pack(">Q", st.sector_id) + st.ticket + st.comm_d
                                 + st.proof.porep_id).digest())
    d[31] &= 0x3F
    return int.from_bytes(d, "little")


def _oracle_challenges(st: Statement, k: int) -> list[int]:
    rid = _oracle_replica_id(st).to_bytes(32, "little")
    n = st.proof.challenges
    return [int.from_bytes(hashlib.sha256(rid + st.seed + struct.pack("<I", n * k + i)).digest(), "little")
            % (st.proof.nodes - 1) + 1 for i in range(n)]


@pytest.fixture(scope="module")
def sealed():
    """A random 2 KiB sector, sealed (its vanilla proofs verified by the sealer)."""
    prover, sector = secrets.token_bytes(32), secrets.randbelow(1 << 64)
    res = seal_sector(PROOF_2K, secrets.token_bytes(secrets.randbelow(2033)), prover, sector,
                      secrets.token_bytes(32), secrets.token_bytes(32))
    return res, Statement.of_c1(res.c1, prover, sector)


@pytest.fixture(scope="module")
def parents_2k():
    return sdr_parents(PROOF_2K)


def test_inputs_of_a_sealed_sector_against_the_oracles(sealed, parents_2k):
    res, st = sealed
    got = public_inputs(st, 0)
    assert len(got) == stacked_public_inputs(PROOF_2K) == 39
    assert st.replica_id == res.replica_id
    assert got[:3] == [_oracle_replica_id(st), int.from_bytes(res.comm_d, "little"),
                       int.from_bytes(res.comm_r, "little")]
    challenges = _oracle_challenges(st, 0)
    want = got[:3]
    for c in challenges:
        row = [int(p) for p in parents_2k[c]]
        want += [c, *row[:6], *row[6:], c, c, c]
    assert got == want
    # the sealer opened exactly these challenges and these parents' columns
    for c, v in zip(challenges, res.c1.vanilla_proofs[0]):
        rc = v.replica_column_proofs
        assert v.labeling_proofs[0].node == c
        assert [p.column.index for p in rc.drg_parents + rc.exp_parents] == [int(p) for p in parents_2k[c]]


@pytest.mark.parametrize("name", sorted(SEAL_PROOFS))
def test_length_is_the_circuits_for_every_registered_proof(name):
    proof = seal_proof(name)
    st = _random_statement(proof)
    k = secrets.randbelow(proof.partitions)
    got = public_inputs(st, k)
    assert len(got) == stacked_public_inputs(proof)
    assert len(got) + 1 == stacked_constraints(proof).public_inputs  # bellperson's num_inputs: ONE too
    assert all(0 <= x < R_MOD for x in got)
    per = (len(got) - 3) // proof.challenges
    assert per == 18
    for i, c in enumerate(_oracle_challenges(st, k)):
        block = got[3 + per * i: 3 + per * (i + 1)]
        assert block[0] == block[15] == block[16] == block[17] == c
        assert all(0 <= p < proof.nodes for p in block[1:15])
    if name.startswith("StackedDrg32GiB"):
        assert len(got) + 1 == 328  # Filecoin's circuitinfo


def test_partitions_get_their_own_challenges():
    proof = seal_proof("StackedDrg32GiBV1_1")
    st = _random_statement(proof)
    per_partition = [public_inputs(st, k) for k in range(proof.partitions)]
    assert len({tuple(p) for p in per_partition}) == proof.partitions
    assert all(p[:3] == per_partition[0][:3] for p in per_partition)
    k = secrets.randbelow(proof.partitions)
    assert per_partition[k][3::18] == _oracle_challenges(st, k)
    for bad in (-1, proof.partitions, True, 1.0):
        with pytest.raises(StatementError, match="partition"):
            public_inputs(st, bad)
    with pytest.raises(StatementError, match="partition 1 is outside"):
        public_inputs(_random_statement(), 1)


def test_each_public_value_moves_the_inputs(sealed):
    _, st = sealed
    base = public_inputs(st, 0)
    for name in ("prover_id", "ticket", "comm_d"):
        other = dataclasses.replace(st, **{name: _fe() if name == "comm_d" else secrets.token_bytes(32)})
        got = public_inputs(other, 0)
        assert got[0] != base[0], name  # a new replica_id, so new challenges
        assert got[3:] != base[3:], name
    other = public_inputs(dataclasses.replace(st, sector_id=st.sector_id ^ (1 << secrets.randbelow(64))), 0)
    assert other[0] != base[0] and other[3:] != base[3:]
    seed = public_inputs(dataclasses.replace(st, seed=secrets.token_bytes(32)), 0)
    assert seed[:3] == base[:3] and seed[3:] != base[3:]
    comm_r = public_inputs(dataclasses.replace(st, comm_r=_fe()), 0)
    assert comm_r[2] != base[2] and comm_r[:2] + comm_r[3:] == base[:2] + base[3:]
    # V1 and V1_1 share the porep rules but not the porep id (nor the graph's seed)
    v1 = public_inputs(dataclasses.replace(st, proof=seal_proof("StackedDrg2KiBV1")), 0)
    assert v1[0] != base[0]


@settings(max_examples=25, deadline=None)
@given(st.binary(min_size=32, max_size=32), st.integers(0, (1 << 64) - 1), st.binary(min_size=32, max_size=32),
       st.binary(min_size=32, max_size=32), st.integers(1, R_MOD - 1), st.integers(1, R_MOD - 1),
       st.sampled_from(["StackedDrg2KiBV1_1", "StackedDrg2KiBV1", "StackedDrg8MiBV1_1", "StackedDrg64GiBV1_1"]))
def test_any_statement_against_the_oracles(prover, sector, ticket, seed, comm_d, comm_r, name):
    proof = seal_proof(name)
    s = Statement(proof, prover, sector, ticket, seed, comm_d.to_bytes(32, "little"), comm_r.to_bytes(32, "little"))
    k = proof.partitions - 1
    got = public_inputs(s, k)
    assert got[:3] == [_oracle_replica_id(s), comm_d, comm_r]
    assert got[3::18] == _oracle_challenges(s, k)
    assert 0 not in got[3::18]  # node 0 is never challenged


def test_a_statement_a_verifier_cannot_use_is_refused():
    good = _random_statement()
    bad_values = [
        ({"comm_d": bytes(32)}, "comm_d is all zero"),
        ({"comm_r": bytes(32)}, "comm_r is all zero"),
        ({"comm_r": R_MOD.to_bytes(32, "little")}, "comm_r is not a field element"),
        ({"comm_d": (R_MOD + secrets.randbelow((1 << 256) - R_MOD)).to_bytes(32, "little")},
         "comm_d is not a field element"),
        ({"ticket": secrets.token_bytes(31)}, "ticket must be 32 bytes, not 31 bytes"),
        ({"prover_id": "00" * 32}, "prover_id must be 32 bytes, not str"),
        ({"sector_id": 1 << 64}, "sector_id must be a u64"),
        ({"sector_id": -1}, "sector_id must be a u64"),
        ({"sector_id": True}, "sector_id must be a u64"),
        ({"proof": "StackedDrg2KiBV1_1"}, "proof must be a registered SealProof"),
    ]
    for change, why in bad_values:
        with pytest.raises(StatementError, match=why):
            dataclasses.replace(good, **change)
    # the largest canonical commitment is fine
    dataclasses.replace(good, comm_r=(R_MOD - 1).to_bytes(32, "little"))


# ---------------------------------------------------------------- the statement file
def test_statement_file_round_trip(tmp_path, sealed):
    _, st = sealed
    path = tmp_path / "statement.json"
    write_statement(path, st)
    doc = json.loads(path.read_text())
    assert list(doc) == list(STATEMENT_FIELDS)
    assert doc["sector_id"] == str(st.sector_id) and doc["comm_r"] == st.comm_r.hex()
    back = read_statement(path)
    assert back == st
    assert public_inputs(back, 0) == public_inputs(st, 0)
    # the form `sealtop verify --statement` already reads (tests/test_c2_cli.py writes it)
    cli_form = {"registered_proof": st.proof.name, "prover_id": st.prover_id.hex(),
                "sector_id": str(st.sector_id), "ticket": "0x" + st.ticket.hex(), "seed": st.seed.hex().upper(),
                "comm_d": st.comm_d.hex(), "comm_r": st.comm_r.hex()}
    assert loads_statement(json.dumps(cli_form)) == st
    assert loads_statement(json.dumps({**cli_form, "sector_id": st.sector_id})) == st


def test_statement_write_is_atomic(tmp_path, monkeypatch):
    path = tmp_path / "st.json"
    first = _random_statement()
    write_statement(path, first)
    before = path.read_bytes()

    def boom(*_a, **_k):
        raise OSError("disk full")

    monkeypatch.setattr("engine.c2.public.json.dumps", boom)
    with pytest.raises(OSError):
        write_statement(path, _random_statement())
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["st.json"]  # no temp file left
    monkeypatch.undo()
    with pytest.raises(StatementError, match="does not exist"):
        write_statement(tmp_path / "no" / "st.json", first)
    with pytest.raises(StatementError, match="is a directory"):
        write_statement(tmp_path, first)


def _damaged(good: dict) -> list[tuple[str | bytes, str]]:
    def with_(**kw) -> str:
        return json.dumps({**good, **kw})

    drop = dict(good)
    del drop["seed"]
    big = secrets.randbelow(1 << 64) + (1 << 64)
    return [
        ("", "empty"),
        ("   \n", "empty"),
        (json.dumps(good)[:-9], "not JSON"),
        (b"\xff\xfe{}", "not UTF-8"),
        ("[1, 2]", "expected a JSON object"),
        (json.dumps(drop), "missing field 'seed'"),
        (with_(extra=1), "unknown field 'extra'"),
        (json.dumps(good)[:-1] + ', "ticket": "' + "00" * 32 + '"}', "repeated field 'ticket'"),
        (with_(registered_proof="StackedDrg4KiBV1_1"), "not a seal proof this engine knows"),
        (with_(registered_proof=3), "registered_proof: expected a string"),
        (with_(ticket="ab" * 31), "ticket: expected 32 bytes as 64 hex digits"),
        (with_(seed="zz" * 32), "seed: expected 32 bytes as 64 hex digits"),
        (with_(prover_id=None), "prover_id: expected 64 hex digits in a string, got null"),
        (with_(sector_id=str(big)), f"sector_id: {big} is not a u64"),
        (with_(sector_id="-1"), "sector_id: expected a sector number"),
        (with_(sector_id=1.5), "sector_id: expected a sector number"),
        (with_(sector_id=False), "sector_id: expected a sector number"),
        (with_(comm_d="00" * 32), "comm_d is all zero"),
        (with_(comm_r="ff" * 32), "comm_r is not a field element"),
        (json.dumps(good).replace('"' + good["sector_id"] + '"', "NaN"), "NaN is not JSON"),
    ]


def test_a_damaged_statement_file_is_one_line_naming_it(tmp_path):
    good = statement_json(_random_statement())
    for i, (text, why) in enumerate(_damaged(good)):
        path = tmp_path / f"st{i}.json"
        path.write_bytes(text if isinstance(text, bytes) else text.encode())
        with pytest.raises(StatementError) as info:
            read_statement(path)
        msg = str(info.value)
        assert why in msg, (why, msg)
        assert msg.startswith(f"statement file {path}: ") and "\n" not in msg
    for path, why in ((tmp_path / "absent.json", "no such file"), (tmp_path, "is a directory")):
        with pytest.raises(StatementError, match=why):
            read_statement(path)
    huge = tmp_path / "huge.json"
    huge.write_text(" " * (1 << 17))
    with pytest.raises(StatementError, match="larger than any statement"):
        read_statement(huge)
