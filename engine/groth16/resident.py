"""The compact forms where a prover evaluates them: the circuit's matrices resident once per
prover, a partition's witness placed ahead of its call, and a, b, c evaluated from them straight
into the H step's input.

engine/groth16/compact.py holds the forms themselves and their host reference; this module is the
prover's side of them, the only one that knows a backend may be a device (CuPy imported only
there, so the host path needs no GPU).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from engine.groth16.compact import CompactError, CompactR1CS, CompactWitness, evaluate_abc_host


@dataclass
class ResidentCompact:
    """One circuit's compact matrices where a prover evaluates, made once per prover and kept:
    uploaded to the device on a GPU backend (the host copy is dropped), the host form itself on
    the CPU backend."""

    num_vars: int
    num_constraints: int
    nbytes: int
    host: CompactR1CS | None
    device: dict[str, Any] | None


def resident_compact(cm: CompactR1CS, backend: Any) -> ResidentCompact:
    """Place ``cm`` where ``backend`` evaluates (one upload on a device backend)."""
    if not backend.is_device:
        return ResidentCompact(cm.num_vars, cm.num_constraints, cm.nbytes(), cm, None)
    from kernels.cuda import abc as dev
    from kernels.cuda.stream import thread_stream

    st = thread_stream()
    with st:
        up = dev.upload(cm.arrays())
    st.synchronize()  # other threads' streams read it next
    return ResidentCompact(cm.num_vars, cm.num_constraints, cm.nbytes(), None, up)


@dataclass
class PlacedWitness:
    """A compact witness already where a device backend evaluates: its arrays uploaded on the
    placing thread's stream (:func:`place_witness`), so a later call on that thread finds them
    there. A prover slot places its next partition's witness before it takes its turn at the GPU
    (gpu_calls = "serial"), so the upload overlaps another slot's call."""

    num_vars: int
    nbytes: int
    device: dict[str, Any]


def place_witness(w: CompactWitness, backend: Any) -> CompactWitness | PlacedWitness:
    """``w`` where ``backend`` evaluates: on a device backend its arrays uploaded on the calling
    thread's stream (kernels/cuda/abc.py ``upload``) and waited for, so a call on another stream
    (kernels/cuda/stream.py ``turn_stream``) may read them; on a host backend ``w`` itself
    (there is nothing to place)."""
    if not backend.is_device:
        return w
    from kernels.cuda import abc as dev
    from kernels.cuda.stream import thread_stream

    st = thread_stream()
    with st:
        placed = PlacedWitness(w.num_vars, w.nbytes(), dev.upload(w.arrays()))
    st.synchronize()  # releases the GIL: another slot's call goes on meanwhile
    return placed


def abc_and_h(rc: ResidentCompact, w: CompactWitness | PlacedWitness, n: int, backend: Any,
              marks: list[Any]) -> tuple[Any, Any]:
    """(z where the backend computes, H's coefficients before the 1/(g^n - 1) scale) from a
    compact witness: the witness goes to the backend (a mark appended: the "upload" group; a
    witness placed already (:func:`place_witness`) is not uploaded again, so that group
    measures ~0), z is expanded and a, b, c are evaluated straight into the zero-padded array
    the H step transforms (a mark appended: "abc"); the caller marks the end of H ("ntt")."""
    if w.num_vars != rc.num_vars:
        raise CompactError(f"the witness has {w.num_vars} values, the circuit {rc.num_vars} variables")
    if rc.device is None:
        assert rc.host is not None
        if not isinstance(w, CompactWitness):
            raise CompactError("a witness placed on a device, but the circuit's matrices are on the host")
        marks.append(backend.mark())  # nothing to upload on the host
        abc = np.empty((3, n, 4), np.uint64)
        z = evaluate_abc_host(rc.host, w, abc)
        marks.append(backend.mark())
        return z, backend.h_coefficients(abc[0], abc[1], abc[2], n)
    from kernels.cuda import abc as dev
    from kernels.cuda import poly
    from kernels.cuda.stream import thread_stream

    mats: dict[str, Any] = rc.device
    out: dict[str, Any] = {}

    def fill(abc: Any) -> None:
        out["z"] = dev.evaluate_abc(mats, wd, rc.num_vars, abc)
        marks.append(backend.mark())

    with thread_stream():
        wd = w.device if isinstance(w, PlacedWitness) else dev.upload(w.arrays())
        marks.append(backend.mark())
        h = poly.h_from(fill, n, rows=rc.num_constraints)
    return out["z"], h
