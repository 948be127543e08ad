"""A C1 output as an engine job: Filecoin's commit phase 2 of one sector, every partition of it.

The job names the C2 preset of the sector's size and carries a JobSource (the C1 file on this
host, the prover and sector ids the file does not hold); synthesis workers read the file once
each (cached by path, size and modification time) and fill their partition from it, and the
engine verifies each proof against the public values derived from the ids and the file's ticket,
seed and commitments (the values the chain holds), never against the witness.
"""

from __future__ import annotations

import os
import re
from typing import Any

from engine.c2.c1file import C1JobError, load_c1
from engine.c2.preset import PRESETS
from engine.pipeline.messages import JobSource
from engine.pipeline.records import Job


def preset_for(registered_proof: str) -> str:
    """The C2 preset whose circuit proves ``registered_proof`` (V1 and V1_1 share a circuit)."""
    for preset, name in PRESETS.items():
        if name.removesuffix("V1_1") == registered_proof.removesuffix("V1_1").removesuffix("V1") \
                and preset.startswith("c2-"):
            return preset
    raise C1JobError(f"no C2 preset proves {registered_proof!r}")


def c1_job(path: str, prover_id: str, sector_id: int) -> Job:
    """The job proving every partition of the C1 output at ``path``."""
    if not re.fullmatch(r"(0x)?[0-9a-fA-F]{64}", prover_id or ""):
        raise C1JobError(f"a C1 job needs its prover id as 64 hex digits, got {prover_id!r}")
    if not isinstance(sector_id, int) or not 0 <= sector_id < 1 << 64:
        raise C1JobError(f"a C1 job needs its sector id, a u64, got {sector_id!r}")
    c1 = load_c1(path)
    source = JobSource(os.path.abspath(path), prover_id.removeprefix("0x").lower(), sector_id)
    return Job(preset_for(c1.registered_proof), len(c1.vanilla_proofs), 0, source)


def config_job(cfg: Any, seed: int) -> Job:
    """The job a config submits: its C1 output's (``[jobs] c1``) when it names one, else its
    preset's partitions for ``seed``."""
    if getattr(cfg, "c1", ""):
        return c1_job(cfg.c1, cfg.prover_id, cfg.sector_id)
    return Job(cfg.preset, cfg.partitions, seed)
