"""The pipeline's view of the Groth16 prover: keys in the parameter cache, the two proving halves,
and verification.

This is the one place the pipeline names engine.groth16's functions, so the orchestrator and the
workers stay about scheduling:

* :func:`ensure_key` finds the proving key of a circuit in the parameter cache (by the circuit's
  digest) or makes it with setup and writes it there atomically; it returns the path and the
  verification key. Keys made here use setup's deterministic test toxic waste and are marked
  insecure by setup itself.
* :func:`load_key` memory-maps a key and places its point tables where the backend's MSMs run,
  once per prover process, when the orchestrator sends the prover a load task (at submission,
  so no partition's GPU wrapper pays for it).
* :func:`start` / :func:`finish` are prove_start (H and the G1 MSMs) and prove_finish (B2,
  assembly, serialization).
* :func:`verify` is the independent pairing check; any error in it counts as "not verified".
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

from engine.groth16.r1cs import R1CS

SETUP_SEED = "sealtop-engine-params"
_lock = threading.Lock()


@dataclass
class LoadedKey:
    """A memory-mapped proving key and its queries placed where the backend's MSMs run."""

    pk: Any
    tables: dict[str, Any]
    cpu_b2: Any = None  # the B query in G2 for the CPU backend (b_g2 = "cpu" on a GPU)


def key_path(cache_dir: Path, name: str, r1cs: R1CS) -> Path:
    """Where a circuit's proving key lives: named for the preset and its digest."""
    safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in name)
    return cache_dir / f"{safe}-{r1cs.digest()[:8].hex()}.pk"


def ensure_key(
    circuit: Any,
    cache_dir: Path,
    backend_name: str = "cpu",
    progress: Callable[[str], None] | None = None,
) -> tuple[Path, Any]:
    """(path, verifying key) of ``circuit``'s proving key, running setup if it is missing.
    ``progress`` receives one line per setup phase (setup of a large circuit takes a while)."""
    from engine.groth16.keyfile import KeyFileError, load_proving_key, save_proving_key
    from engine.groth16.vkey import verifying_key

    path = key_path(cache_dir, circuit.name, circuit.r1cs)
    with _lock:
        pk = None
        if path.exists():
            try:
                pk = load_proving_key(path)
                if bytes(pk.digest) != circuit.r1cs.digest():
                    pk = None
            except KeyFileError:
                pk = None
        if pk is None:
            from engine.groth16.setup import setup
            from kernels.backend import get_backend

            cache_dir.mkdir(parents=True, exist_ok=True)
            if progress is not None:
                progress(f"no proving key for {circuit.name} in {cache_dir}: running setup")
            made = setup(circuit.r1cs, SETUP_SEED, get_backend(backend_name), progress)
            save_proving_key(made, path)
            pk = load_proving_key(path)
        return path, verifying_key(pk)


def load_key(path: str, backend: Any) -> LoadedKey:
    """Memory-map the key and make its queries resident (an upload of every table on cuda)."""
    from engine.groth16.keyfile import load_proving_key
    from engine.groth16.prove import resident_tables

    pk = load_proving_key(path)
    return LoadedKey(pk, resident_tables(pk, backend))


def start(key: LoadedKey, a: Any, b: Any, c: Any, z: Any, backend: Any) -> Any:
    """The GPU half: H on a coset and the G1 MSMs; a, b, c may be freed when it returns.
    Each input is a numpy array or a StoredArray that the backend reads from its file."""
    from engine.groth16.prove import prove_start

    return prove_start(key.pk, a, b, c, z, backend, tables=key.tables)


def kernel_timings(handle: Any) -> dict[str, float]:
    """Per-kernel-group milliseconds measured inside the GPU half (ntt, msm_h, msm_a, ...)."""
    return dict(getattr(handle, "timings_ms", {}) or {})


def finish(handle: Any, b_g2: str = "auto", key: LoadedKey | None = None) -> bytes:
    """The finalize half: B in G2, assembly with r and s, the 192-byte proof.

    b_g2 = "auto" (the default) or "gpu" keeps B2 on the prover's own backend, the faster
    choice measured on the H200 (docs/BENCHMARKS.md).
    With b_g2 = "cpu" on a GPU backend, the G2 MSM and the assembly run on the CPU backend
    from the memory-mapped key, leaving the GPU to the next partition's kernels."""
    import dataclasses

    from engine.groth16.prove import prove_finish, resident_tables

    if b_g2 == "cpu" and key is not None and getattr(handle.backend, "name", "cpu") != "cpu":
        from kernels.backend import get_backend

        cpu = get_backend("cpu")
        with _lock:
            if key.cpu_b2 is None:
                key.cpu_b2 = resident_tables(key.pk, cpu)["b_g2"]
        handle = dataclasses.replace(
            handle, backend=cpu, tables={**handle.tables, "b_g2": key.cpu_b2}
        )
    return bytes(prove_finish(handle))


def public_inputs(num_inputs: int, z: Any) -> list[int]:
    """z[1:num_inputs] as integers (num_inputs counts the constant one, as in R1CS); z is a
    numpy array or a StoredArray."""
    from kernels.cpu.convert import from_mont_fr
    from kernels.stored import StoredArray

    if num_inputs <= 1:
        return []
    rows = z.read(1, num_inputs) if isinstance(z, StoredArray) else np.array(z[1:num_inputs])
    return list(from_mont_fr(rows))


def verify(vk: Any, public: list[int], proof: bytes) -> bool:
    from engine.groth16.verify import verify as _verify

    try:
        return bool(_verify(vk, public, proof))
    except Exception:
        return False
