"""Synthesis's multi-threaded variants (the witness waves, the value flags, the a, b, c
evaluation) against Python-int oracles. The engine takes them from 2^15 constraints on, past
every preset CI synthesizes, so here the tiny preset asks for them (``parallel=True``), as the
first-run warm-up does to compile them."""

from __future__ import annotations

import random

import numpy as np
import pytest

from engine.circuit.check import unsatisfied_rows_py
from engine.circuit.porep import build_porep, generate_partitions
from engine.circuit.witness import witness_python
from engine.synthesis import is_satisfied, synthesize_partition, value_flags
from kernels.constants import R_MOD
from kernels.cpu.convert import from_mont_fr, to_mont_fr


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return build_porep("tiny", tmp_path_factory.mktemp("circuits"))


def _times(m, z: list[int]) -> list[int]:
    """m·z over Fr with Python ints: the oracle for one of A, B, C."""
    coef = from_mont_fr(np.asarray(m.data))
    ind, ptr = np.asarray(m.indices).tolist(), np.asarray(m.indptr).tolist()
    return [sum(coef[k] * z[ind[k]] for k in range(ptr[i], ptr[i + 1])) % R_MOD
            for i in range(len(ptr) - 1)]


@pytest.mark.parametrize("parallel", [True, False])
def test_synthesis_either_way_equals_the_oracles(tiny, parallel: bool) -> None:
    shape = tiny
    r = shape.r1cs
    _, parts = generate_partitions("tiny", random.randrange(2**32))
    syn = synthesize_partition(shape, parts[0], parallel=parallel)
    zi = from_mont_fr(syn.z)
    assert zi == witness_python(shape, parts[0].public, parts[0].free)
    for m, out in zip((r.A, r.B, r.C), syn.abc):
        assert from_mont_fr(out) == _times(m, zi)
    assert unsatisfied_rows_py(r, zi) == []
    assert is_satisfied(r, syn.z, parallel=parallel)
    # a witness value changed alone breaks some constraint, seen the same way
    bad = syn.z.copy()
    v = random.randrange(1, r.num_vars)
    bad[v] = to_mont_fr([zi[v] + random.randrange(1, R_MOD)])[0]
    assert not is_satisfied(r, bad, parallel=parallel)


def test_value_flags_either_way_classify_zero_one_and_the_rest() -> None:
    values = [0, 1, 2, R_MOD - 1] + [random.randrange(R_MOD) for _ in range(200)]
    random.shuffle(values)
    z = to_mont_fr(values)
    want = [0 if x == 0 else 1 if x == 1 else 2 for x in values]
    for parallel in (True, False):
        flags = np.full(len(values), -1, np.int8)
        value_flags(z, flags, parallel)
        assert flags.tolist() == want


def test_every_wave_spreads_each_stage_over_its_range() -> None:
    """A parallel loop gives its threads contiguous shares of a wave, so each stage's instances
    lie spread over the wave's range (in witness._SPREAD slices): any half or quarter of a wave
    holds about that share of every stage's instances. Grouped by stage, the first thread got
    every dear instance. Filecoin's 2 KiB C2 circuit (its witness program alone) mixes stages of
    tens of instances in a wave."""
    from engine.c2.circuit import build_c2
    from engine.circuit import witness as W
    from engine.seal.registry import seal_proof

    shape = build_c2(seal_proof("StackedDrg2KiBV1_1"), matrices=False).shape
    prog = W.witness_program(shape)
    mixed = 0
    for wave in prog.waves:
        stages, counts = np.unique(wave[:, 0], return_counts=True)
        big = counts >= 8
        if np.count_nonzero(big) < 2:
            continue
        stages, counts = stages[big], counts[big]
        mixed += 1
        for parts in (2, 4):
            for share in np.array_split(wave, parts):
                for s, c in zip(stages, counts):
                    got = int(np.count_nonzero(share[:, 0] == s))
                    assert abs(got - c / parts) <= c / W._SPREAD + 2, (s, c, parts, got)
    assert mixed, "the circuit has waves of several sizeable stages"
    # the order is a permutation of the (stage, instance) pairs: none lost or repeated
    pairs = np.concatenate(prog.waves)
    assert len(pairs) == sum(st.count for st in shape.stages)
    assert len(np.unique(pairs, axis=0)) == len(pairs)
