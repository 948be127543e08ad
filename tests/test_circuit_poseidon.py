"""Poseidon (neptune, arity 2/8/11): native reference, gadget and numba witness against the
neptune vectors and against each other on fresh random inputs."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest

from engine.circuit.check import place_on_free, run, unsatisfied_rows_py
from engine.circuit.native import poseidon_many
from engine.circuit.poseidon import poseidon_gadget
from engine.circuit.poseidon_params import poseidon_hash, poseidon_params
from engine.circuit.template import Tracer
from engine.synthesis import is_satisfied
from kernels.constants import R_MOD
from kernels.cpu.convert import from_mont_fr, to_mont_fr

VECTORS = json.loads((Path(__file__).parent / "data" / "poseidon_vectors.json").read_text())


def _cases(arity: int) -> list[tuple[list[int], int]]:
    return [([int(x, 16) for x in v["inputs"]], int(v["output"], 16)) for v in VECTORS["vectors"][str(arity)]]


def _template(arity: int):
    tr = Tracer(f"p{arity}", arity)
    tr.output(poseidon_gadget(tr, [tr.input(i) for i in range(arity)]))
    return tr.finish()


@pytest.mark.parametrize("arity", [2, 8, 11])
def test_reference_matches_neptune_vectors(arity: int) -> None:
    for inputs, out in _cases(arity):
        assert poseidon_hash(inputs) == out
        assert poseidon_hash([*inputs[:-1], (inputs[-1] + 1) % R_MOD]) != out


@pytest.mark.parametrize("arity", [2, 8, 11])
def test_gadget_matches_vectors_and_random(arity: int) -> None:
    rnd = random.Random()
    cases = _cases(arity)
    rand = [[rnd.randrange(R_MOD) for _ in range(arity)] for _ in range(3)]
    rows = [c[0] for c in cases] + rand
    shape, (out,) = place_on_free(_template(arity), len(rows))
    z = run(shape, rows)
    zi = from_mont_fr(z)
    for k, (_inputs, expected) in enumerate(cases):
        assert zi[out[k]] == expected
    for k, inputs in enumerate(rand):
        assert zi[out[len(cases) + k]] == poseidon_hash(inputs)
    assert is_satisfied(shape.r1cs, z)
    assert unsatisfied_rows_py(shape.r1cs, zi) == []
    # a wrong output wire breaks the circuit
    bad = z.copy()
    bad[out[0]] = to_mont_fr([zi[out[0]] + 1])[0]
    assert not is_satisfied(shape.r1cs, bad)


def test_native_batch_matches_reference() -> None:
    rnd = random.Random()
    for arity in (2, 8, 11):
        rows = [[rnd.randrange(R_MOD) for _ in range(arity)] for _ in range(4)]
        assert poseidon_many(rows) == [poseidon_hash(r) for r in rows]


def test_constraint_count_is_three_per_sbox() -> None:
    for arity in (2, 8, 11):
        p = poseidon_params(arity)
        assert _template(arity).n_rows == 3 * p.sboxes + 1


def test_bad_arity_and_input() -> None:
    with pytest.raises(ValueError, match="arity"):
        poseidon_params(3)
    with pytest.raises(ValueError, match="canonical"):
        poseidon_hash([R_MOD, 0])
    with pytest.raises(ValueError):
        poseidon_many([[1, 2], [1, 2, 3]])
    with pytest.raises(ValueError):
        from engine.circuit.native import poseidon_many_mont

        poseidon_many_mont(np.zeros((1, 3, 4), np.uint64))
