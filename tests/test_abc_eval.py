"""abc_eval = "gpu" on the CPU: the compact witness as a synthesis worker writes it into its
segment (read back equal to the plain witness's compact form), the circuit's general capacity
(a bound every real witness keeps), and the prover-side evaluation (the witness expanded and
a, b, c evaluated straight into H's padded input) giving the same proof as the a, b, c path for
the same r and s, verified by the oracle (py_arkworks_bls12381)."""

from __future__ import annotations

import os
import random
import secrets

import numpy as np
import pytest

from engine.groth16.compact import (
    CompactError,
    WitnessLayout,
    compact_r1cs,
    compact_witness,
    evaluate_abc_host,
    evaluate_compact,
    expand_witness,
    layout_of,
    public_inputs,
    read_compact,
    resident_bytes_bound,
    write_compact,
)
from engine.groth16.resident import resident_compact
from engine.synthesis import evaluate, general_capacity, synthesize_compact
from kernels.backend import get_backend
from kernels.constants import R_MOD
from kernels.cpu.convert import from_mont_fr, to_mont_fr


def _witness(rng: random.Random, n: int, general_share: float) -> np.ndarray:
    vals = [1] + [rng.randrange(R_MOD) if rng.random() < general_share else rng.randrange(2)
                  for _ in range(n - 1)]
    return np.asarray(to_mont_fr(vals), np.uint64)


def _segment(layout: WitnessLayout) -> np.ndarray:
    """A buffer like a fresh segment: zero-filled words, with junk past them (segments may be
    larger than asked)."""
    buf = np.zeros(layout.words + 3, np.uint64)
    buf[layout.words :] = np.uint64(0xDEADBEEF)
    return buf


def test_segment_round_trip_equals_the_plain_compact_form() -> None:
    rng = random.Random(secrets.randbits(64))
    for n in (1, 63, 64, 65, 1000, rng.randrange(2, 5000)):
        z = _witness(rng, n, rng.choice([0.0, 0.01, 0.3, 1.0]))
        want = compact_witness(z)
        layout = WitnessLayout(n, min(n, len(want.gidx) + rng.randrange(0, 5)))
        buf = _segment(layout)
        g = write_compact(z, buf, layout)
        assert g == len(want.gidx)
        got = read_compact(buf, layout)
        assert layout_of(buf) == layout
        for k, v in want.arrays().items():
            assert np.array_equal(got.arrays()[k], v), k
        assert np.array_equal(expand_witness(got), z)
        lo, hi = sorted(rng.randrange(0, n + 1) for _ in range(2))
        assert np.array_equal(_rows(got, lo, hi), z[lo:hi])
        ni = min(n, 5)
        assert public_inputs(got, ni) == (list(from_mont_fr(z[1:ni])) if ni > 1 else [])


def _rows(w, lo, hi):
    from engine.groth16.compact import witness_rows

    return witness_rows(w, lo, hi)


def test_segment_refuses_what_does_not_fit() -> None:
    rng = random.Random(secrets.randbits(64))
    z = _witness(rng, 300, 0.2)
    g = len(compact_witness(z).gidx)
    assert g > 0
    small = WitnessLayout(300, g - 1)
    with pytest.raises(CompactError, match=rf"^the witness has {g} general values, its circuit's layout holds {g - 1}$"):
        write_compact(z, _segment(small), small)
    layout = WitnessLayout(300, g)
    buf = _segment(layout)
    with pytest.raises(CompactError, match="no compact witness"):
        read_compact(buf, layout)  # never written: no header
    write_compact(z, buf, layout)
    with pytest.raises(CompactError, match="no compact witness of 301 variables"):
        read_compact(buf, WitnessLayout(301, g))
    with pytest.raises(CompactError, match=r"must be uint64\[\d+\] or more"):
        layout.views(buf[: layout.words - 1])
    with pytest.raises(CompactError, match="must be uint64"):
        write_compact(z[:-1], buf, layout)
    with pytest.raises(CompactError, match="at most one general value each"):
        WitnessLayout(10, 11)


def test_host_evaluation_into_the_padded_input() -> None:
    """The CPU's prover-side evaluation equals the CSR evaluation in the rows of the padded
    array, zeroes the rest (even where junk was), and returns the full z."""
    from test_compact import _random_case

    rng = random.Random(secrets.randbits(64))
    for _ in range(5):
        r, z = _random_case(rng)
        cm, w = compact_r1cs(r), compact_witness(z)
        rows = r.num_constraints
        dom = 1 << max(1, (rows - 1).bit_length())
        abc = np.full((3, dom, 4), 7, np.uint64)
        zz = evaluate_abc_host(cm, w, abc)
        assert np.array_equal(zz, z)
        for i, e in enumerate(evaluate(r, z)):
            assert np.array_equal(abc[i, :rows], e)
        assert not abc[:, rows:].any()
        assert all(np.array_equal(x, y) for x, y in zip(evaluate_compact(cm, w), evaluate(r, z)))
        assert cm.nbytes() <= resident_bytes_bound(r) <= cm.nbytes() + 32 * (1 << 16)
    with pytest.raises(CompactError, match="H input must be"):
        evaluate_abc_host(cm, w, np.zeros((3, rows - 1, 4), np.uint64) if rows > 1 else np.zeros((2, 4, 4), np.uint64))


def test_general_capacity_bounds_tiny_witnesses(tmp_path) -> None:
    """Every variable a bit operation writes is 0 or 1 in real witnesses, so the general
    values of each partition fit the capacity; synthesize_compact writes what compact_witness
    makes of the same witness."""
    from engine.circuit.porep import build_porep, generate_partitions, porep_witness

    shape = build_porep("tiny", tmp_path)
    cap = general_capacity(shape)
    assert 0 < cap < shape.num_vars
    layout = WitnessLayout(shape.num_vars, cap)
    _, parts = generate_partitions("tiny", secrets.randbelow(2**32), 3)
    for part in parts:
        _, z = porep_witness(shape, part)
        assert len(compact_witness(z).gidx) <= cap
        buf = _segment(layout)
        mine = np.empty_like(z)
        _, _, g = synthesize_compact(lambda out, p=part: porep_witness(shape, p, out), shape.r1cs, mine, buf, layout)
        assert np.array_equal(mine, z) and g == len(compact_witness(z).gidx)
        assert np.array_equal(expand_witness(read_compact(buf, layout)), z)


def _prove_both(preset: str, tmp_path) -> None:
    """The compact path's proof equals the a, b, c path's for the same r and s, both verify
    against the statement the verifier derives, and a tampered witness does not verify."""
    from engine.circuit.porep import build_porep, generate_partitions, porep_witness
    from engine.groth16.prove import prove_finish, prove_start
    from engine.groth16.setup import setup
    from engine.groth16.verify import verify
    from engine.groth16.vkey import verifying_key

    be = get_backend("cpu")
    shape = build_porep(preset, tmp_path)
    r1 = shape.r1cs
    pk = setup(r1, secrets.token_hex(8), be)
    vk = verifying_key(pk)
    sector, parts = generate_partitions(preset, secrets.randbelow(2**32))
    _, z = porep_witness(shape, parts[0])
    layout = WitnessLayout(r1.num_vars, general_capacity(shape))
    buf = _segment(layout)
    write_compact(z, buf, layout)
    w = read_compact(buf, layout)
    rc = resident_compact(compact_r1cs(r1), be)
    rr, ss = secrets.randbelow(R_MOD), secrets.randbelow(R_MOD)
    a, b, c = evaluate(r1, z)
    plain = prove_start(pk, a, b, c, z, be, r=rr, s=ss)
    hc = prove_start(pk, None, None, None, None, be, r=rr, s=ss, compact=(rc, w))
    assert set(hc.timings_ms) == {"upload", "abc", "ntt", "msm_h", "msm_a", "msm_b1", "msm_l"}
    assert "abc" not in plain.timings_ms
    p_plain, p_compact = prove_finish(plain), prove_finish(hc)
    assert p_plain == p_compact
    public = sector.statement(0).public_inputs()
    assert public_inputs(w, r1.num_inputs) == public
    assert verify(vk, public, p_compact)
    # negative: one general value changed in the segment gives a proof that does not verify
    gval = layout.views(buf)[4]
    gval[len(w.gidx) // 2, 0] ^= np.uint64(1 << 7)
    bad = prove_finish(prove_start(pk, None, None, None, None, be, compact=(rc, read_compact(buf, layout))))
    assert not verify(vk, public, bad)


def test_tiny_compact_proof_equals_plain_and_verifies(tmp_path) -> None:
    _prove_both("tiny", tmp_path)


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("SEALTOP_HEAVY"), reason="set SEALTOP_HEAVY=1 (about 100 s on 2 cores)")
def test_small_compact_proof_equals_plain_and_verifies(tmp_path) -> None:
    _prove_both("small", tmp_path)


def test_synthesis_task_writes_the_segment_and_keeps_one_buffer(tmp_path) -> None:
    """synthesize_to_segment (a synthesis worker's gpu-mode task) writes the compact form of
    the partition's witness into the segment, reusing its z for the same circuit and keeping
    only the last circuit's."""
    from engine.pipeline.circuits import resolve
    from engine.synthesis import compact_layout, synthesize_to_segment

    buffers: dict[str, np.ndarray] = {}
    seed = secrets.randbelow(2**32)
    for preset in ("chain-16", "tiny", "tiny"):
        circuit = resolve(preset, str(tmp_path))
        layout = compact_layout(circuit)
        buf = _segment(layout)
        before = buffers.get(preset)
        w_ms, c_ms = synthesize_to_segment(circuit, seed, 0, 1, buf, buffers)
        assert w_ms >= 0 and c_ms >= 0 and set(buffers) == {preset, preset + "/known"}
        assert before is None or buffers[preset] is before
        want = circuit.witness(seed, 0, 1, None)
        assert np.array_equal(expand_witness(read_compact(buf, layout)), want)
