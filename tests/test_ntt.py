"""The CPU NTT against naive evaluation with Python ints, and its round trips."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kernels.backend import get_backend
from kernels.constants import FR_COSET_SHIFT, R_MOD, root_of_unity
from kernels.cpu.convert import from_mont_fr, to_mont_fr
from kernels.cpu.ntt import ntt, ntt_many

SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def random_fr(n: int, rng: np.random.Generator) -> np.ndarray:
    """n uniform Fr elements in storage form, drawn fresh (limbs masked below 2^255, then reduced)."""
    raw = rng.integers(0, 2**63, size=(n, 4), dtype=np.uint64) * np.uint64(2) + rng.integers(
        0, 2, size=(n, 4), dtype=np.uint64
    )
    ints = [int.from_bytes(row.tobytes(), "little") % R_MOD for row in raw]
    return to_mont_fr(ints)


def poly_eval(coeffs: list[int], x: int) -> int:
    acc = 0
    for c in reversed(coeffs):
        acc = (acc * x + c) % R_MOD
    return acc


def naive_dft(a: list[int], shift: int = 1) -> list[int]:
    """Evaluations of sum a_i X^i at shift * w^k, k < n, w the size-n root every backend uses."""
    n = len(a)
    w = root_of_unity(n.bit_length() - 1)
    return [poly_eval(a, shift * pow(w, k, R_MOD) % R_MOD) for k in range(n)]


field_lists = st.integers(0, 5).flatmap(
    lambda log_n: st.lists(
        st.one_of(st.sampled_from([0, 1, R_MOD - 1]), st.integers(0, R_MOD - 1)),
        min_size=1 << log_n,
        max_size=1 << log_n,
    )
)


@SETTINGS
@given(field_lists)
def test_forward_equals_naive_dft(a: list[int]) -> None:
    assert from_mont_fr(ntt(to_mont_fr(a))) == naive_dft(a)


@SETTINGS
@given(field_lists)
def test_inverse_interpolates_naive_evaluations(a: list[int]) -> None:
    assert from_mont_fr(ntt(to_mont_fr(naive_dft(a)), inverse=True)) == a


@SETTINGS
@given(field_lists)
def test_coset_forward_equals_evaluation_on_the_coset(a: list[int]) -> None:
    assert from_mont_fr(ntt(to_mont_fr(a), coset=True)) == naive_dft(a, FR_COSET_SHIFT)


@SETTINGS
@given(field_lists)
def test_inverse_coset_interpolates_from_the_coset(a: list[int]) -> None:
    evals = naive_dft(a, FR_COSET_SHIFT)
    assert from_mont_fr(ntt(to_mont_fr(evals), inverse=True, coset=True)) == a


@pytest.mark.parametrize("log_n", range(1, 13))
def test_round_trips(log_n: int) -> None:
    rng = np.random.default_rng()
    a = random_fr(1 << log_n, rng)
    keep = a.copy()
    for coset in (False, True):
        evals = ntt(a, coset=coset)
        assert np.array_equal(a, keep), "the input must not be modified"
        assert np.array_equal(ntt(evals, inverse=True, coset=coset), a)
        # the other order: interpolate, then evaluate
        assert np.array_equal(ntt(ntt(a, inverse=True, coset=coset), coset=coset), a)


def test_round_trip_2_16_and_spot_checks() -> None:
    """2^16: several threads' worth of blocks and flat stages; a few outputs checked by Horner."""
    rng = np.random.default_rng()
    n = 1 << 16
    a = random_fr(n, rng)
    evals = ntt(a)
    assert np.array_equal(ntt(evals, inverse=True), a)
    cos = ntt(a, coset=True)
    assert np.array_equal(ntt(cos, inverse=True, coset=True), a)
    coeffs = from_mont_fr(a)
    w = root_of_unity(16)
    got, got_cos = from_mont_fr(evals), from_mont_fr(cos)
    for k in [0, 1, n // 2, n - 1, int(rng.integers(0, n))]:
        x = pow(w, k, R_MOD)
        assert got[k] == poly_eval(coeffs, x)
        assert got_cos[k] == poly_eval(coeffs, FR_COSET_SHIFT * x % R_MOD)


def test_size_one_and_batched_helper_and_backend() -> None:
    rng = np.random.default_rng()
    one = random_fr(1, rng)
    assert np.array_equal(ntt(one), one)
    assert from_mont_fr(ntt(one, coset=True)) == from_mont_fr(one)  # g^0 = 1
    vecs = [random_fr(64, rng) for _ in range(3)]
    outs = ntt_many(vecs, coset=True)
    be = get_backend("cpu")
    for v, o in zip(vecs, outs):
        assert np.array_equal(o, ntt(v, coset=True))
        assert np.array_equal(be.ntt(o, inverse=True, coset=True), v)


@pytest.mark.parametrize("block_log,tile_log", [(1, 1), (2, 2), (3, 3), (4, 2), (5, 1)])
def test_every_stage_schedule_agrees_with_naive_dft(block_log: int, tile_log: int, monkeypatch) -> None:
    """Small blocks and tiles force the tiled permutation, flat single stages and fused stage
    pairs at sizes where the naive DFT is cheap (the defaults reach them only at large n)."""
    import kernels.cpu.ntt as ntt_mod

    monkeypatch.setattr(ntt_mod, "_BLOCK_LOG", block_log)
    monkeypatch.setattr(ntt_mod, "_TILE_LOG", tile_log)
    rng = np.random.default_rng()
    for log_n in (5, 6, 7):
        a = random_fr(1 << log_n, rng)
        coeffs = from_mont_fr(a)
        assert from_mont_fr(ntt(a)) == naive_dft(coeffs)
        assert from_mont_fr(ntt(a, coset=True)) == naive_dft(coeffs, FR_COSET_SHIFT)
        assert np.array_equal(ntt(ntt(a, coset=True), inverse=True, coset=True), a)


def test_a_changed_input_changes_the_transform() -> None:
    """Negative case: evaluations of a perturbed vector are not the original's."""
    rng = np.random.default_rng()
    a = random_fr(256, rng)
    b = a.copy()
    b[int(rng.integers(0, 256)), 0] ^= np.uint64(1)
    assert not np.array_equal(ntt(a), ntt(b))
    # and a forward transform is not its own inverse
    assert not np.array_equal(ntt(ntt(a)), a)


@pytest.mark.parametrize(
    "bad",
    [
        np.zeros((3, 4), np.uint64),  # not a power of two
        np.zeros((0, 4), np.uint64),  # empty
        np.zeros((8, 6), np.uint64),  # an Fp vector
        np.zeros((8, 4), np.int64),  # wrong dtype
    ],
)
def test_rejects_bad_input(bad: np.ndarray) -> None:
    with pytest.raises(ValueError):
        ntt(bad)
