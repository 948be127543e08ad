"""The device-made key's logic on the CPU: device_setup makes the very key setup makes (same seed,
every section equal), says INSECURE first and last, and reports each large section once with its
time; a different seed gives a different key."""

from __future__ import annotations

import secrets

import numpy as np

from engine.groth16 import examples
from engine.groth16.keyfile import SECTIONS
from engine.groth16.setup import BIG_SECTIONS, INSECURE_LABEL, device_setup, setup
from kernels.backend import get_backend


def test_device_setup_equals_setup_on_the_cpu_backend() -> None:
    cpu = get_backend("cpu")
    circuit = examples.chain_for_constraints(1 << 9)
    seed = secrets.token_hex(8)
    lines: list[str] = []
    made = device_setup(circuit.r1cs, seed, cpu, lines.append)
    want = setup(circuit.r1cs, seed, cpu)
    for name in SECTIONS:
        assert np.array_equal(getattr(made, name), getattr(want, name)), name
    assert made.digest == want.digest and made.insecure
    assert lines[0].startswith(INSECURE_LABEL) and lines[-1].startswith(INSECURE_LABEL)
    for name in BIG_SECTIONS:
        hits = [ln for ln in lines if ln.split(":")[0] in (f"G1 {name}", f"G2 {name}")]
        assert len(hits) == 1 and hits[0].endswith(" s, cpu)"), (name, hits)
    other = device_setup(circuit.r1cs, seed + "x", cpu)
    assert not np.array_equal(other.a, made.a) and not np.array_equal(other.h, made.h)
