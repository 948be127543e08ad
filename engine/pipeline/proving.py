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
* :func:`key_source` is where a job's key comes from: the key file (:func:`ensure_key`) when it is
  there or the disk has room for it, else, on the cuda backend, a *device source*
  (:func:`device_source`): each prover generates the key into its GPU's memory from the circuit
  cache and the seed (:func:`make_device_key`, engine.groth16.setup.device_setup) and answers with
  the verifying key. Before choosing that, the GPUs' free memory is probed (NVML, the same
  readings the telemetry takes): a GPU that cannot hold the key and one slot's buffers refuses
  in one line (free vs needed bytes), for instance a second engine on a GPU the first one's
  key already fills.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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
    device_made: bool = False  # generated in device memory: no host copy of the points


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
    params: str = "",
) -> tuple[Path, Any]:
    """(path, verifying key) of ``circuit``'s proving key, running setup if it is missing, or
    with ``params`` (Filecoin's parameter files: a folder or one .params file) reading it from
    the file made for this circuit into the cache (KeyFileError in one line when none is).
    ``progress`` receives one line per setup phase (setup of a large circuit takes a while).

    A key that is there but does not load (checksum mismatch, truncation, another circuit's
    digest) is named in a KeyFileError and left as it is, unless ``damaged`` is "regenerate"
    (config key ``damaged_key``): at porep-32g a setup nobody asked for costs many minutes.
    Setup is serialised across processes by an flock on ``<key>.lock`` (the kernel releases it
    if its holder dies): a second process waits, says so, and then loads the key the first
    one made."""
    from engine.groth16.keyfile import KeyFileError, NotAKeyFile

    path = key_path(cache_dir, circuit.name, circuit.r1cs)
    with _lock:
        if path.exists():
            try:
                return path, _load_vk(path, circuit)
            except NotAKeyFile:
                raise  # a directory there is no damaged key: setup could not replace it
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
                except KeyFileError:
                    if damaged != "regenerate":
                        raise
            if params:
                return path, _import_params(circuit, params, path, progress)
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


def _import_params(circuit: Any, params: str, path: Path,
                   progress: Callable[[str], None] | None) -> Any:
    """The key of ``circuit`` read from a bellperson .params file and kept in the cache in
    sealtop's format (so the provers map and upload it as any cached key)."""
    from engine.groth16.bellman import find_params, read_params
    from engine.groth16.keyfile import KeyFileError, load_proving_key, save_proving_key
    from engine.groth16.vkey import verifying_key

    found = find_params(params, circuit.r1cs)
    if found is None:
        raise KeyFileError(f"no parameter file in {params} is for {circuit.name}'s circuit "
                           f"({circuit.r1cs.num_constraints} constraints, {circuit.r1cs.num_inputs} "
                           "inputs): none of its counts match")
    _check_room(circuit, path, "cpu")
    if progress is not None:
        progress(f"reading {circuit.name}'s key from {found}")
    save_proving_key(read_params(found, circuit.r1cs), path)
    return verifying_key(load_proving_key(path))


def _check_room(circuit: Any, path: Path, backend_name: str) -> None:
    """Refuse (KeyRoomError, one line: free vs needed bytes) before setup when the cache's disk
    cannot hold the key; at porep-32g the key is ~75 GB and the H200 machine's disk 64 GiB."""
    from engine.groth16.keyfile import check_room, key_file_size
    from kernels.backend import is_device_backend

    r = circuit.r1cs
    size = key_file_size(r.num_inputs, r.num_aux, r.num_constraints)
    if is_device_backend(backend_name):
        instead = ("the engine (run, bench pipeline) generates it in GPU memory instead (a "
                   "device-resident key); this command needs the key file")
    else:
        instead = ('a key that does not fit the disk must be device-resident: the engine '
                   'generates it in GPU memory on backend = "cuda"')
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


def start(key: LoadedKey, a: Any, b: Any, c: Any, z: Any, backend: Any,
          compact: tuple[Any, Any] | None = None, b2: bool = False) -> Any:
    """The GPU half: H on a coset and the G1 MSMs (and B2's G2 MSM with ``b2``); a, b, c may be
    freed when it returns.
    Each input is a numpy array or a StoredArray that the backend reads from its file.
    ``compact`` (abc_eval = "gpu"): (resident compact matrices, compact witness) instead of
    a, b, c (engine.groth16.prove.prove_start)."""
    from engine.groth16.prove import prove_start

    return prove_start(key.pk, a, b, c, z, backend, tables=key.tables, compact=compact, b2=b2)


def kernel_timings(handle: Any) -> dict[str, float]:
    """Per-kernel-group milliseconds measured inside the GPU half (ntt, msm_h, msm_a, ...)."""
    return dict(getattr(handle, "timings_ms", {}) or {})


def finish(handle: Any, b_g2: str = "auto", key: LoadedKey | None = None,
           turn: Callable[[], AbstractContextManager[Any]] | None = None) -> bytes:
    """The finalize half: B in G2, assembly with r and s, the 192-byte proof.

    b_g2 = "auto" (the default) or "gpu" keeps B2 on the prover's own backend, the faster
    choice measured on the H200 (docs/BENCHMARKS.md).
    With b_g2 = "cpu" on a GPU backend, the G2 MSM and the assembly run on the CPU backend
    from the memory-mapped key, leaving the GPU to the next partition's kernels. ``turn``, where
    given, is held around B2's MSM alone (the prover's GPU turn, SEALTOP_B2=turn); a handle
    whose call made B2 already (SEALTOP_B2=call) has only the assembly left."""
    import dataclasses

    from engine.groth16.prove import prove_b2, prove_finish, resident_tables

    if (b_g2 == "cpu" and key is not None and not key.device_made
            and getattr(handle.backend, "is_device", False)):  # a device key has no host B2
        from kernels.backend import get_backend

        cpu = get_backend("cpu")
        with _lock:
            if key.cpu_b2 is None:
                key.cpu_b2 = resident_tables(key.pk, cpu)["b_g2"]
        handle = dataclasses.replace(
            handle, backend=cpu, tables={**handle.tables, "b_g2": key.cpu_b2}
        )
    with turn() if turn is not None else nullcontext():  # the GPU turn, for B2's MSM only
        acc_b2 = prove_b2(handle)
    return bytes(prove_finish(handle, acc_b2))


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


# ---------------------------------------------------------------------------- device-made keys

DEVICE_PREFIX = "device:"
DEVICE_ALLOWANCE = 1 << 30  # CUDA context and pool slack beside the key and a slot (PLAN-32G)


@dataclass(frozen=True)
class DeviceSource:
    """What a prover needs to generate a key on its device: the preset, the circuit cache it
    loads the circuit from, and the first 8 bytes of the circuit's digest (so a prover whose
    cache holds another build of the preset refuses instead of making the wrong key)."""

    preset: str
    cache_dir: str
    digest8: str

    def __str__(self) -> str:
        return f"{DEVICE_PREFIX}{self.digest8}:{self.preset}:{self.cache_dir}"


def device_source(circuit: Any, cache_dir: str) -> str:
    """The key source string of ``circuit``'s device-made key (see :class:`DeviceSource`)."""
    return str(DeviceSource(circuit.name, str(cache_dir), circuit.r1cs.digest()[:8].hex()))


def parse_device_source(source: str) -> DeviceSource | None:
    """The DeviceSource of a device key source string; None for a key file's path."""
    if not source.startswith(DEVICE_PREFIX):
        return None
    digest8, preset, cache_dir = source[len(DEVICE_PREFIX):].split(":", 2)
    return DeviceSource(preset, cache_dir, digest8)


def device_bytes(r1cs: R1CS, slots: int = 1, gpu_calls: str = "parallel",
                 waiting: int | None = None, kept: dict[str, int] | None = None) -> tuple[int, int]:
    """(key bytes, bytes of the GPU's slots) a device-made key and its partitions hold on the
    GPU. The key: its sections as engine.groth16.setup.device_key makes them (``kept``: the rows
    of each sparse one, :func:`kept_rows`; else every row: docs/PLAN-32G.md's 70.16 GiB at
    porep-32g, 44 GiB with B's used rows alone) and the compact matrices resident beside it
    (abc_eval = "gpu", at most engine.groth16.compact.resident_bytes_bound). Per call's working
    set: z and six vectors of the domain's size, the larger of the H step's (padded a, b, c, h
    and one uploaded vector with abc_eval = "cpu"; kernels/cuda/hstep.py) and H's MSM's (h, an
    unsplit MSM's scalars, its sorted entries with their runs' slack, ~10.6 GB at porep-32g, the
    sort's staging and the accumulators): 28 GiB at porep-32g. With gpu_calls = "parallel"
    every slot's call runs at once: a working set per slot. With "serial" one call runs at a
    time: one working set, plus per further slot what a slot waiting for its turn holds there,
    its uploaded compact witness: ``waiting`` bytes (:func:`waiting_bytes`; by default the
    bound of a witness whose every value is general, engine.groth16.compact.WitnessLayout).
    H's GLV images (and the split MSM's larger scratch) and the witness tables' pair sums are
    not counted: the backend makes them only where they leave the calls their room
    (kernels/cuda/backend.py, pairs.PAIRS_RESERVE)."""
    from engine.groth16.compact import resident_bytes_bound
    from engine.groth16.keyfile import SECTIONS
    from engine.groth16.qap import domain_log

    n = 1 << domain_log(r1cs.num_constraints)
    rows = {k: 1 for k in ("alpha_g1", "beta_g1", "beta_g2", "gamma_g2", "delta_g1", "delta_g2")}
    rows |= {"ic": r1cs.num_inputs, "a": r1cs.num_vars, "b_g1": r1cs.num_vars, "b_g2": r1cs.num_vars,
             "l": r1cs.num_aux, "h": n - 1} | (kept or {})
    key = sum(8 * SECTIONS[k] * r for k, r in rows.items()) + resident_bytes_bound(r1cs)
    slot = 32 * r1cs.num_vars + 6 * 32 * n
    slots = max(1, slots)
    if gpu_calls != "serial":
        return key, slot * slots
    if waiting is None:
        from engine.groth16.compact import WitnessLayout

        waiting = WitnessLayout(r1cs.num_vars, r1cs.num_vars).nbytes
    return key, slot + waiting * (slots - 1)


def kept_rows(r1cs: R1CS) -> dict[str, int]:
    """The rows engine.groth16.setup.device_key keeps of each sparse section, at most: a variable
    with an entry in A's (B's) columns counted as used. At porep-32g B uses 33 M of 130 M
    variables, so B1 and B2 keep a quarter of their rows; A is dense (the whole section)."""
    from engine.groth16.setup import DENSE_ENOUGH

    out: dict[str, int] = {}
    for m, sections in ((r1cs.A, ("a",)), (r1cs.B, ("b_g1", "b_g2"))):
        count = int(np.count_nonzero(m.used_columns(r1cs.num_vars, coefficients=False)))
        if count < DENSE_ENOUGH * r1cs.num_vars:
            out |= {k: count for k in sections}
    return out


def waiting_bytes(circuit: Any) -> int:
    """Bytes a slot waiting for its turn holds on the GPU (gpu_calls = "serial"): its uploaded
    compact witness, at most the segment the circuit's layout reserves (its general capacity
    where the preset knows one, engine.synthesis.compact_layout; else every variable general)."""
    from engine.groth16.compact import WitnessLayout

    nv = circuit.r1cs.num_vars
    cap = getattr(circuit, "general_capacity", None)
    return WitnessLayout(nv, nv if cap is None else int(cap)).nbytes


def _nvml_free(index: int) -> int | None:
    """Free bytes of GPU ``index`` as NVML reports them (None where NVML cannot say)."""
    from engine.telemetry.nvml import read_gpu

    r = read_gpu(index)
    if r.get("mem_total") is None or r.get("mem_used") is None:
        return None
    return int(r["mem_total"]) - int(r["mem_used"])


def check_device_room(
    circuit: Any,
    devices: list[int],
    slots: int,
    probe: Callable[[int], int | None] | None = None,
    gpu_calls: str = "parallel",
    kept: dict[str, int] | None = None,
) -> None:
    """Raise KeyRoomError (one line: the GPU, free vs needed bytes) unless every GPU in
    ``devices`` has room for ``circuit``'s device-made key, ``slots`` slots' buffers (as
    ``gpu_calls`` shares the GPU among them, :func:`device_bytes`; ``kept``: :func:`kept_rows`
    of the circuit, when already counted) and the allowance. A GPU whose
    free memory cannot be read is not refused here (the prover checks again with the CUDA
    runtime's own figure before it makes the key)."""
    from engine.groth16.keyfile import KeyRoomError

    key, per_slots = device_bytes(circuit.r1cs, slots, gpu_calls, waiting_bytes(circuit),
                                  kept if kept is not None else kept_rows(circuit.r1cs))
    need = key + per_slots + DEVICE_ALLOWANCE
    probe = probe or _nvml_free
    for d in devices:
        free = probe(d)
        if free is not None and free < need:
            raise KeyRoomError(
                f"GPU {d} cannot hold the device-made proving key of {circuit.name}: {need} bytes "
                f"needed (key {key}, {slots} slot(s), {gpu_calls} calls, {per_slots}, allowance {DEVICE_ALLOWANCE}), "
                f"{free} free; is another engine's key on it?"
            )


def key_source(
    circuit: Any,
    cache_dir: Path,
    backend_name: str = "cpu",
    progress: Callable[[str], None] | None = None,
    damaged: str = "refuse",
    devices: list[int] | None = None,
    slots: int = 1,
    params: str = "",
    gpu_calls: str = "parallel",
) -> tuple[str, Any]:
    """(source, verifying key or None) of ``circuit``'s proving key. The key file when it is in
    the cache or the disk has room for it (:func:`ensure_key`, setup included); otherwise, on the
    cuda backend, a device source (the verifying key comes back from the prover that makes
    it), after the free-memory check of :func:`check_device_room`. Other backends refuse in one
    line (KeyRoomError), as before."""
    from engine.groth16.keyfile import KeyRoomError
    from kernels.backend import is_device_backend

    path = key_path(cache_dir, circuit.name, circuit.r1cs)
    if not is_device_backend(backend_name) or path.exists() or params:
        p, vk = ensure_key(circuit, cache_dir, backend_name, progress, damaged, params)
        return str(p), vk
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        _check_room(circuit, path, backend_name)
    except KeyRoomError as exc:
        check_device_room(circuit, list(devices or [0]), slots, gpu_calls=gpu_calls)
        if progress is not None:
            progress(f"{exc.args[0].split('; ')[0]}; each prover generates it in GPU memory "
                     "instead (INSECURE TEST PARAMETERS, from the seed)")
        return device_source(circuit, str(circuit_dir(cache_dir))), None
    except OSError as exc:
        raise KeyRoomError(f"cannot use the key cache {cache_dir}: {exc.strerror or exc}") from None
    p, vk = ensure_key(circuit, cache_dir, backend_name, progress, damaged, params)
    return str(p), vk


def circuit_dir(cache_dir: Path) -> Path:
    """Where the provers load a device key's circuit from (the compiled circuits' cache)."""
    from engine.pipeline.circuits import circuit_cache_dir

    return Path(circuit_cache_dir(cache_dir))


def device_free(backend: Any) -> int | None:
    """Free bytes on the backend's current device (its memory_info: the CUDA runtime's figure);
    None on a host backend."""
    info = backend.memory_info()
    return None if info is None else int(info[0])


def make_device_key(
    source: str,
    backend: Any,
    slots: int = 1,
    progress: Callable[[str], None] | None = None,
    gpu_calls: str = "parallel",
) -> tuple[LoadedKey, Any]:
    """(loaded key, verifying key) of a device source: the circuit from the cache, the key made
    by device_setup straight into the backend's memory and its queries made resident (progress:
    one line per step with its seconds: the circuit, its digest, each setup phase, the resident
    tables, the verifying key). Sections the MSMs read compacted (rows of points at infinity left
    out) drop their full arrays, so only the compacted tables stay. Refuses (KeyRoomError, one
    line) when the device has less free memory than the key and ``slots`` slots need (shared as
    ``gpu_calls`` says, :func:`device_bytes`)."""
    from engine.groth16.keyfile import SECTIONS, KeyFileError, KeyRoomError
    from engine.groth16.prove import resident_table
    from engine.groth16.setup import BIG_SECTIONS, device_key
    from engine.groth16.vkey import verifying_key
    from engine.pipeline.circuits import resolve

    say = progress or (lambda _msg: None)
    src = parse_device_source(source)
    if src is None:
        raise KeyFileError(f"{source} is not a device key source")
    t0 = time.perf_counter()
    circuit = resolve(src.preset, src.cache_dir)
    r = circuit.r1cs
    say(f"circuit {src.preset}: {r.num_constraints} constraints, {r.nnz} nonzeros, from "
        f"{src.cache_dir} ({time.perf_counter() - t0:.2f} s)")
    t0 = time.perf_counter()
    digest8 = r.digest()[:8].hex()
    if digest8 != src.digest8:
        raise KeyFileError(f"the circuit of {src.preset} in {src.cache_dir} is another build "
                           f"(digest {digest8}, the engine's {src.digest8})")
    say(f"circuit digest {digest8}: the engine's ({time.perf_counter() - t0:.2f} s)")
    key, per_slots = device_bytes(r, slots, gpu_calls, waiting_bytes(circuit), kept_rows(r))
    need = key + per_slots + DEVICE_ALLOWANCE
    free = device_free(backend)
    if free is not None and free < need:
        raise KeyRoomError(f"this GPU cannot hold the device-made proving key of {src.preset}: "
                           f"{need} bytes needed, {free} free; is another engine's key on it?")
    made = device_key(r, SETUP_SEED, backend, progress)
    pk = made.pk
    t0 = time.perf_counter()
    # a sparse section was made from its used rows alone (device_key), so the card never holds
    # a full copy of it; each section's array goes as soon as its table is made: a compacted
    # table holds the points the MSMs read (the key keeps a fresh empty array: a view would keep
    # the whole allocation), and a GLV or pair table copied the section's points (the key keeps
    # its view of them)
    tables, compacted = {}, []
    for k in BIG_SECTIONS:  # H first (prove.resident_tables)
        tables[k] = q = resident_table(pk, k, backend, made.kept.get(k))
        if q.index is not None:
            compacted.append(k)
            setattr(pk, k, np.empty((0, SECTIONS[k]), np.uint64))
        elif getattr(q.points, "endo", None) is not None or getattr(q.points, "pairs", None) is not None:
            setattr(pk, k, q.points.data)
    say(f"resident tables: {len(tables)} sections, {len(compacted)} compacted "
        f"({time.perf_counter() - t0:.2f} s)")
    t0 = time.perf_counter()
    vk = verifying_key(pk)
    say(f"verifying key: {pk.num_inputs} inputs ({time.perf_counter() - t0:.2f} s)")
    return LoadedKey(pk, tables, device_made=True), vk


def load_source(
    source: str,
    backend: Any,
    slots: int = 1,
    progress: Callable[[str], None] | None = None,
    gpu_calls: str = "parallel",
) -> tuple[LoadedKey, Any]:
    """(loaded key, verifying key or None) from a key source: a device source is generated on
    the backend's device (:func:`make_device_key`, with its verifying key, which the engine has
    no other way to know); a key file's path is loaded (:func:`load_key`; the engine read its
    verifying key from the file already)."""
    if parse_device_source(source) is not None:
        return make_device_key(source, backend, slots, progress, gpu_calls)
    return load_key(source, backend), None
