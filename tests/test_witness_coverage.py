"""A reused witness buffer is not zeroed where the witness program writes every variable
(engine/circuit/coverage.py): Filecoin's 2 KiB C2 circuit and sealtop's porep are such programs,
and a witness written over another partition's leaves nothing of it behind; a template that
leaves a local unwritten, or regions fill_inputs does not set, keep the zeroing."""

from __future__ import annotations

import dataclasses
import secrets

import numpy as np
import pytest

from engine.circuit.coverage import tiles_aux, writes_all_locals, writes_every_variable
from engine.circuit.porep import build_porep, generate_partitions, porep_witness
from engine.circuit.witness import fill_inputs


@pytest.fixture(scope="module")
def porep_tiny():
    return build_porep("tiny")


def test_porep_writes_every_variable_and_a_reused_buffer_keeps_nothing(porep_tiny) -> None:
    shape = porep_tiny
    _, parts = generate_partitions("tiny", secrets.randbelow(2**32))
    _, other = generate_partitions("tiny", secrets.randbelow(2**32))
    assert writes_every_variable(shape, parts[0].free)
    fresh = porep_witness(shape, parts[0])[1].copy()
    z = np.full((shape.num_vars, 4), 0xA5A5A5A5A5A5A5A5, np.uint64)  # garbage, not zeros
    porep_witness(shape, other[0], z)  # another sector's partition first
    porep_witness(shape, parts[0], z)
    assert np.array_equal(z, fresh)


def test_c2_2kib_writes_every_variable_and_a_reused_buffer_keeps_nothing() -> None:
    from engine.c2.preset import partition_circuit

    c = partition_circuit("c2-2KiB", None)
    s1, s2 = secrets.randbelow(2**31), secrets.randbelow(2**31)
    fresh = c.witness(s1, 0, 1).copy()
    z = np.full_like(fresh, 0x5A5A5A5A5A5A5A5A)
    c.witness(s2, 0, 1, z)
    c.witness(s1, 0, 1, z)
    assert np.array_equal(z, fresh)


def test_an_unwritten_local_or_an_unset_region_keeps_the_zeroing(porep_tiny) -> None:
    shape = porep_tiny
    _, parts = generate_partitions("tiny", secrets.randbelow(2**32))
    free = parts[0].free
    assert all(writes_all_locals(t) for t in shape.templates)
    t0 = next(i for i, t in enumerate(shape.templates) if len(t.ops) > 1 and t.n_loc > 0)
    t = shape.templates[t0]
    last = int(np.argmax(t.ops[:, 1]))  # the op writing the highest slot, left out
    short = dataclasses.replace(t, ops=np.delete(t.ops, last, axis=0))
    assert not writes_all_locals(short)
    broken = dataclasses.replace(shape, templates=[short if i == t0 else x for i, x in enumerate(shape.templates)])
    assert not writes_every_variable(broken, free)
    assert not tiles_aux(shape, [])  # without the free regions the aux variables are not covered
    z = np.full((shape.num_vars, 4), 7, np.uint64)
    fill_inputs(broken, parts[0].public, free, z)  # zeroed first, then the inputs set
    assert not (z == 7).all(axis=1).any()
    with pytest.raises(ValueError, match="no variable region"):
        fill_inputs(shape, parts[0].public, {"nowhere": []}, z)
