"""Job presets → partition circuits and witnesses, for the pipeline's processes.

A job names a preset; every partition of the job is a proof of the same circuit with a different
witness (Filecoin's partitions differ in their challenges). A preset resolves to a
:class:`PartitionCircuit`: the R1CS, and a function from (seed, partition) to the witness z.

Presets understood:
- ``cubic``: the x^3 + x + 5 = y example;
- ``chain-N``: N chained multiplications (engine.groth16.examples), e.g. ``chain-1024``;
- Filecoin's C2 circuit of a registered proof (``c2-2KiB`` ... ``c2-64GiB``, and ``porep-32g``,
  the 32 GiB one) with synthetic sectors (engine/c2/preset.py);
- sealtop's own porep presets of engine.circuit.porep (tiny, small, ..., sealtop-32g).

Circuits are cached per process: synthesis workers, provers and the orchestrator each build a
preset's circuit once.

A circuit also says what a verifier's public inputs are for (seed, partition, partitions),
derived from the job alone: for porep the sector's commitments and the seeds give the challenges
and every parent position (engine/circuit/statement.py); the engine verifies each proof against
those, never against the values the prover's witness carries.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import re
from pathlib import Path

import numpy as np

from engine.pipeline.partition import PartitionCircuit, Public, Witness

_CHAIN_RE = re.compile(r"^chain-(\d+)$")
MAX_CHAIN = 1 << 27


class PresetError(ValueError):
    """An unknown or malformed preset name; the message lists what exists."""


def _example_witness(c) -> Witness:
    def witness(seed: int, partition: int, partitions: int, out=None, source=None, inputs=None,
                known=None) -> np.ndarray:
        z = c.witness(private_input(seed, partition))
        if out is None:
            return z
        out[:] = z
        return out

    return witness


def _example_public(name: str, n: int = 0) -> Public:
    """y from the partition's private input x: x^3 + x + 5 (cubic) or x^(n+1) (chain-n)."""
    from kernels.constants import R_MOD

    def public(seed: int, partition: int, partitions: int, source=None) -> list[int]:
        x = private_input(seed, partition) % R_MOD
        return [(x**3 + x + 5) % R_MOD] if name == "cubic" else [pow(x, n + 1, R_MOD)]

    return public


def circuit_cache_dir(param_cache: Path) -> str:
    """Where compiled circuits live: beside the proving keys, shared by every process."""
    return str(Path(param_cache) / "circuits")


def private_input(seed: int, partition: int) -> int:
    """A deterministic per-partition private input (the partition's 'challenge')."""
    h = hashlib.sha256(f"sealtop-partition:{seed}:{partition}".encode()).digest()
    return int.from_bytes(h[:31], "little") + 2


def _porep_module():
    try:
        return importlib.import_module("engine.circuit.porep")
    except ImportError:
        return None


def preset_names() -> list[str]:
    from engine.c2.preset import PRESETS as C2_PRESETS

    names = ["cubic", "chain-N", *C2_PRESETS]
    mod = _porep_module()
    if mod is not None:
        presets = getattr(mod, "PRESETS", None)
        if isinstance(presets, dict):
            names.extend(sorted(presets))
        elif presets:
            names.extend(list(presets))
    return names


def _porep_parts(mod, preset: str, shape) -> tuple[Witness, Public]:
    """The witness and the verifier's public inputs of a porep preset, sharing one sector per
    (seed, partitions) in this process. The verifier's side takes the sector's commitments (what
    Filecoin reads from the chain) and derives the rest from the seeds."""

    @functools.lru_cache(maxsize=2)  # a sector's partitions hold every private value: few
    def sector(seed: int, partitions: int):
        return mod.generate_partitions(preset, seed, partitions)

    @functools.lru_cache(maxsize=256)  # the commitments alone are small: one entry per job
    def commitments(seed: int, partitions: int):
        return sector(seed, partitions)[0]

    def witness(seed: int, partition: int, partitions: int, out=None, source=None, inputs=None,
                known=None) -> np.ndarray:
        parts = sector(seed, max(partitions, partition + 1))[1]
        return mod.porep_witness(shape, parts[partition], out, known=known)[1]

    def public(seed: int, partition: int, partitions: int, source=None) -> list[int]:
        sec = commitments(seed, max(partitions, partition + 1))
        return sec.statement(partition).public_inputs()

    return witness, public


@functools.lru_cache(maxsize=8)
def resolve(preset: str, cache_dir: str | None = None) -> PartitionCircuit:
    """The circuit of a preset (cached per process). ``cache_dir`` is where compiled porep
    circuits are kept between processes and runs. PresetError with the known names if
    unknown."""
    from engine.groth16 import examples

    if preset == "cubic":
        c = examples.cubic_circuit()
        return PartitionCircuit("cubic", c.r1cs, _example_witness(c), _example_public("cubic"))
    m = _CHAIN_RE.match(preset)
    if m:
        n = int(m.group(1))
        if not 1 <= n <= MAX_CHAIN:
            raise PresetError(f"preset {preset!r}: chain length must be 1..{MAX_CHAIN}")
        c = examples.chain_circuit(n)
        return PartitionCircuit(preset, c.r1cs, _example_witness(c), _example_public("chain", n))
    from engine.c2.preset import PRESETS as C2_PRESETS

    if preset in C2_PRESETS:
        from engine.c2.preset import partition_circuit

        return partition_circuit(preset, cache_dir)
    mod = _porep_module()
    if mod is not None and preset in getattr(mod, "PRESETS", {}):
        from engine.synthesis import general_capacity

        shape = mod.build_porep(preset, cache_dir)
        return PartitionCircuit(preset, shape.r1cs, *_porep_parts(mod, preset, shape),
                                general_capacity=general_capacity(shape))
    raise PresetError(f"unknown preset {preset!r} (presets: {', '.join(preset_names())})")
