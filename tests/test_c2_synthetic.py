"""Synthetic C1 outputs (engine/c2/synthetic.py): what C2 takes at sizes this machine cannot
seal. The independent check is the vanilla verifier (engine/seal/vanilla_verify.py), which
re-derives replica_id, the challenges and every parent from public values and checks every
path, column, label and encoding."""

from __future__ import annotations

import dataclasses
import secrets

import pytest

from engine.c2.synthetic import synthetic_c1
from engine.seal.commitments import zero_comm_d
from engine.seal.registry import seal_proof
from engine.seal.vanilla_verify import verify_c1


@pytest.mark.parametrize("name", ["StackedDrg2KiBV1_1", "StackedDrg8MiBV1_1", "StackedDrg32GiBV1_1"])
def test_synthetic_c1_passes_the_vanilla_verifier(name):
    proof = seal_proof(name)
    prover, sector = secrets.token_bytes(31) + b"\0", secrets.randbelow(1 << 40)
    c1 = synthetic_c1(proof, secrets.randbelow(1 << 32), prover_id=prover, sector_id=sector)
    assert len(c1.vanilla_proofs) == proof.partitions
    assert all(len(p) == proof.challenges for p in c1.vanilla_proofs)
    assert c1.comm_d == zero_comm_d(proof.sector_size)  # a CC sector's published comm_d
    verdict = verify_c1(c1, prover, sector)
    assert verdict.ok, verdict.first_reason()
    # another sector id makes another replica_id: the same file no longer verifies
    assert not verify_c1(c1, prover, sector + 1).ok


def test_a_tampered_synthetic_label_is_rejected():
    proof = seal_proof("StackedDrg2KiBV1_1")
    prover = bytes(32)
    c1 = synthetic_c1(proof, secrets.randbelow(1 << 32), prover_id=prover, sector_id=3)
    v = c1.vanilla_proofs[0][0]
    rc = v.replica_column_proofs
    col = rc.c_x.column
    bad_row = bytes([col.rows[0][0] ^ 1]) + col.rows[0][1:]
    bad_cx = dataclasses.replace(rc.c_x, column=dataclasses.replace(col, rows=(bad_row, *col.rows[1:])))
    bad_v = dataclasses.replace(v, replica_column_proofs=dataclasses.replace(rc, c_x=bad_cx))
    bad = dataclasses.replace(c1, vanilla_proofs=((bad_v, *c1.vanilla_proofs[0][1:]),))
    assert verify_c1(c1, prover, 3).ok
    assert not verify_c1(bad, prover, 3).ok


def test_seeds_make_different_sectors_and_repeat():
    proof = seal_proof("StackedDrg2KiBV1_1")
    a = synthetic_c1(proof, 1, prover_id=bytes(32))
    assert synthetic_c1(proof, 1, prover_id=bytes(32)) == a
    b = synthetic_c1(proof, 2, prover_id=bytes(32))
    assert (a.ticket, a.seed, a.comm_r) != (b.ticket, b.seed, b.comm_r)
    with pytest.raises(ValueError):
        synthetic_c1(proof, 1, partitions=2)


def test_batched_stand_ins_are_the_keyed_hash_of_what_they_stand_in_for():
    import hashlib
    import struct

    import numpy as np

    from engine.c2.synthetic import _StandIns

    seed = secrets.randbelow(1 << 64)
    rng = np.random.default_rng(secrets.randbits(64))
    a = np.concatenate([[0, 9, 10], rng.integers(0, 1 << 62, 40)])
    b = np.concatenate([[0, 99, 1 << 62], rng.integers(0, 1 << 40, 40)])
    for name in ("label", "tree_c", "tree_r_last"):
        got = _StandIns(seed).batch(name, a, b)
        for r in range(len(a)):
            msg = b"sealtop-synthetic-c1" + struct.pack("<Q", seed) + repr((name, int(a[r]), int(b[r]))).encode()
            d = hashlib.sha256(msg).digest()
            assert bytes(got[r]) == d[:31] + bytes([d[31] & 0x3F])


def test_partitions_made_when_asked_for_are_the_whole_outputs():
    """A sector's partitions made one at a time, last first, are the whole C1 output's, and
    each Partition a preset hands a worker equals the one read from that output."""
    from engine.c2.assign import Partition
    from engine.c2.synthetic import synthetic_sector

    proof = seal_proof("StackedDrg32GiBV1_1")
    seed, prover = secrets.randbelow(1 << 32), secrets.token_bytes(31) + b"\0"
    whole = synthetic_c1(proof, seed, prover_id=prover, sector_id=9, partitions=3)
    sec = synthetic_sector(proof, seed, prover_id=prover, sector_id=9, partitions=3)
    for k in (2, 0, 1):
        assert sec.vanilla(k) == whole.vanilla_proofs[k]
        mine = Partition(proof, k, sec.replica_id, sec.comm_d, sec.comm_r, sec.comm_r_last, sec.comm_c,
                         sec.vanilla(k))
        assert mine == Partition.of_c1(whole, k)
    assert sec.c1() == whole
    with pytest.raises(ValueError, match="partitions 0..2"):
        sec.vanilla(3)
