"""a, b, c evaluated on the GPU from the compact resident matrices equal the CPU reference
(engine/groth16/compact.py, itself equal to the CSR evaluation) bit for bit; the expanded z
equals the witness."""

from __future__ import annotations

import random
import secrets

import numpy as np
import pytest

from kernels.backend import cuda_unavailable_reason

_REASON = cuda_unavailable_reason()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(_REASON is not None, reason=f"cuda: {_REASON}")]


def _check(r, z) -> None:
    import cupy as cp

    from engine.groth16.compact import compact_r1cs, compact_witness, evaluate_compact
    from kernels.cuda import abc as dev

    cm, w = compact_r1cs(r), compact_witness(z)
    want = evaluate_compact(cm, w)
    m, wd = dev.upload(cm.arrays()), dev.upload(w.arrays())
    zd, *got = dev.evaluate(m, wd, cm.num_vars)
    assert np.array_equal(cp.asnumpy(zd), z)
    for g, e in zip(got, want):
        assert np.array_equal(cp.asnumpy(g), e)
    # negative: a changed general value moves some row, on both sides alike
    if len(w.gidx):
        w.gval[0, 0] ^= np.uint64(1)
        wd2 = dev.upload(w.arrays())
        _, *got2 = dev.evaluate(m, wd2, cm.num_vars)
        want2 = evaluate_compact(cm, w)
        assert all(np.array_equal(cp.asnumpy(g), e) for g, e in zip(got2, want2))


def test_random_circuits_on_device() -> None:
    from test_compact import _random_case

    rng = random.Random(secrets.randbits(64))
    for _ in range(10):
        _check(*_random_case(rng))


@pytest.mark.slow
def test_porep_small_on_device(tmp_path) -> None:
    from engine.circuit.porep import build_porep, generate_partitions, porep_witness

    shape = build_porep("small", tmp_path)
    _, parts = generate_partitions("small", secrets.randbelow(2**32))
    _, z = porep_witness(shape, parts[0])
    _check(shape.r1cs, z)


def test_wrong_dtype_is_one_line() -> None:
    from kernels.cuda import abc as dev

    with pytest.raises(ValueError, match="^compact array a_cols must be int32, got int64$"):
        dev.upload({"a_cols": np.zeros(3, np.int64)})


def test_evaluate_abc_writes_the_padded_h_input() -> None:
    """evaluate_abc writes A·z, B·z, C·z into the rows of a zeroed uint64[3, domain, 4] device
    array (the H step's input) equal to the CPU's prover-side evaluation, leaves the padding
    zero, and returns the full z; a wrong shape is one line."""
    import cupy as cp
    from test_compact import _random_case

    from engine.groth16.compact import compact_r1cs, compact_witness, evaluate_abc_host
    from kernels.cuda import abc as dev

    rng = random.Random(secrets.randbits(64))
    for _ in range(5):
        r, z = _random_case(rng)
        cm, w = compact_r1cs(r), compact_witness(z)
        rows = r.num_constraints
        dom = 1 << max(1, rows.bit_length())
        want = np.zeros((3, dom, 4), np.uint64)
        evaluate_abc_host(cm, w, want)
        got = cp.zeros((3, dom, 4), dtype=cp.uint64)
        zd = dev.evaluate_abc(dev.upload(cm.arrays()), dev.upload(w.arrays()), cm.num_vars, got)
        assert np.array_equal(cp.asnumpy(got), want)
        assert np.array_equal(cp.asnumpy(zd), z)
    with pytest.raises(ValueError, match="H input must be a contiguous"):
        dev.evaluate_abc(dev.upload(cm.arrays()), dev.upload(w.arrays()), cm.num_vars,
                         cp.zeros((3, rows - 1 if rows > 1 else 0, 4), dtype=cp.uint64))
