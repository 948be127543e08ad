"""The pipeline's view of the Groth16 prover: keys in the parameter cache, the two proving halves,
and verification.

This is the one place the pipeline names engine.groth16's functions, so the orchestrator and the
workers stay about scheduling:

* :func:`ensure_key` finds the proving key of a circuit in the parameter cache (by the circuit's
  digest) or makes it with setup and writes it there atomically (one setup at a time per key,
  across processes); it returns the path and the verification key. A damaged key is named,
  never silently replaced. Keys made here use setup's deterministic test toxic waste and are marked
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
from collections.abc import Iterator
from contextlib import contextmanager
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
    damaged: str = "refuse",
) -> tuple[Path, Any]:
    """(path, verifying key) of ``circuit``'s proving key, running setup if it is missing.
    ``progress`` receives one line per setup phase (setup of a large circuit takes a while).

    A key that is there but does not load (checksum mismatch, truncation, another circuit's
    digest) is named in a KeyFileError and left as it is, unless ``damaged`` is "regenerate"
    (config key ``damaged_key``): at porep-32g a setup nobody asked for costs many minutes.
    Setup is serialised across processes by an flock on ``<key>.lock`` (the kernel releases it
    if its holder dies): a second process waits, says so, and then loads the key the first
    one made."""
    from engine.groth16.keyfile import KeyFileError

    path = key_path(cache_dir, circuit.name, circuit.r1cs)
    with _lock:
        if path.exists():
            try:
                return path, _load_vk(path, circuit)
            except KeyFileError as exc:
                if damaged != "regenerate":
                    raise KeyFileError(f"{exc}; not replaced: set damaged_key = \"regenerate\" "
                                       "([paths]) to run setup again") from None
                if progress is not None:
                    progress(f"{exc}: running setup again (damaged_key = \"regenerate\")")
        try:
            cache_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise KeyFileError(f"cannot create the key cache {cache_dir}: "
                               f"{exc.strerror or exc}") from None
        with _setup_lock(path, progress):
            if path.exists():  # made by the process we waited for, or damaged
                try:
                    return path, _load_vk(path, circuit)
                except KeyFileError as exc:
                    if damaged != "regenerate":
                        raise
            return path, _setup(circuit, path, backend_name, progress)


def _load_vk(path: Path, circuit: Any) -> Any:
    from engine.groth16.keyfile import KeyFileError, load_proving_key
    from engine.groth16.vkey import verifying_key

    pk = load_proving_key(path)
    if bytes(pk.digest) != circuit.r1cs.digest():
        raise KeyFileError(f"{path} holds the key of another circuit (digest mismatch)")
    return verifying_key(pk)


def _setup(circuit: Any, path: Path, backend_name: str,
           progress: Callable[[str], None] | None) -> Any:
    from engine.groth16.keyfile import load_proving_key, save_proving_key
    from engine.groth16.setup import setup
    from engine.groth16.vkey import verifying_key
    from kernels.backend import get_backend

    _check_room(circuit, path, backend_name)
    if progress is not None:
        progress(f"no proving key for {circuit.name} in {path.parent}: running setup")
    made = setup(circuit.r1cs, SETUP_SEED, get_backend(backend_name), progress)
    save_proving_key(made, path)
    return verifying_key(load_proving_key(path))


def _check_room(circuit: Any, path: Path, backend_name: str) -> None:
    """Refuse (KeyRoomError, one line: free vs needed bytes) before setup when the cache's disk
    cannot hold the key; at porep-32g the key is ~75 GB and the H200 machine's disk 64 GiB."""
    from engine.groth16.keyfile import check_room, key_file_size

    r = circuit.r1cs
    size = key_file_size(r.num_inputs, r.num_aux, r.num_constraints)
    if backend_name == "cuda":
        instead = "generating it straight into GPU memory (a device-resident key) is not built yet"
    else:
        instead = ('a key that does not fit the disk must be device-resident, generated in GPU '
                   'memory (backend = "cuda"; not built yet)')
    check_room(path.parent, size, circuit.name, instead)


@contextmanager
def _setup_lock(path: Path, progress: Callable[[str], None] | None) -> Iterator[None]:
    """Hold an exclusive flock on ``<key>.lock`` (it records the holder's pid, for the message
    a waiter prints). flock belongs to the open file, so a killed holder releases it."""
    import fcntl
    import os

    lock = path.with_name(path.name + ".lock")
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "?"
            if progress is not None:
                progress(f"waiting for another process's setup of {path.name} "
                         f"(pid {holder} holds {lock.name})...")
            fcntl.flock(fd, fcntl.LOCK_EX)
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        yield
    finally:
        try:
            os.ftruncate(fd, 0)
        except OSError:
            pass
        os.close(fd)  # releases the lock


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
