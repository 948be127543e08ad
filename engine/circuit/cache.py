"""The circuit cache on disk: a compiled CircuitShape (engine/circuit/builder.py) stored under a
digest of its shape (family, parameters, builder version and the sources that decide the shape),
its CSR arrays as memory-mappable .npy files, written whole or not at all, and served mapped."""

from __future__ import annotations

import hashlib
import json
import pickle
import threading
from collections.abc import Callable
from pathlib import Path

import numpy as np

from engine.circuit.builder import BUILDER_VERSION, CircuitShape
from engine.groth16.r1cs import CSR, R1CS

# modules that compute values, not the shape: editing them keeps the cached circuits
_NOT_SHAPE = ("witness.py", "native.py", "poseidon_native.py", "check.py", "__init__.py", "graph.py",
              "statement.py", "sector.py")


def _source_digest() -> str:
    """Digest of the code and constants that decide a circuit's shape, so that a change to a
    gadget never serves a stale cache entry."""
    here = Path(__file__).resolve().parent
    h = hashlib.sha256()
    for f in sorted(here.glob("*.py")) + sorted(here.glob("*.json")):
        if f.name not in _NOT_SHAPE:
            h.update(f.name.encode() + b"\0" + f.read_bytes())
    return h.hexdigest()


def spec_digest(family: str, params: dict) -> str:
    """Digest of a circuit's *shape*: family, parameters, builder version and gadget sources
    (not the job)."""
    blob = json.dumps(
        {"v": BUILDER_VERSION, "src": _source_digest(), "family": family, "params": params},
        sort_keys=True,
    )
    return hashlib.sha256(blob.encode()).hexdigest()


_MATS = ("A", "B", "C")
_PARTS = ("indptr", "indices", "data")


def save_shape(shape: CircuitShape, directory: Path) -> None:
    """Write a compiled shape: one .npy per CSR array (memory-mappable) plus a pickle of the
    templates, stages and regions. Written under a temporary name and renamed, so a reader
    never sees half a cache entry."""
    directory = Path(directory)
    tmp = directory.with_name(directory.name + f".tmp{id(shape)}")
    tmp.mkdir(parents=True, exist_ok=True)
    # the matrices' digest (SHA-256 over 31 GB at porep-32g, ~17 s) beside the writes: both
    # release the GIL, so the hash and the disk overlap instead of adding up
    hashing = threading.Thread(target=shape.r1cs.digest, name="sealtop-r1cs-digest", daemon=True)
    hashing.start()
    try:
        for m in _MATS:
            csr = getattr(shape.r1cs, m)
            for part in _PARTS:
                np.save(tmp / f"{m}_{part}.npy", getattr(csr, part))
    finally:
        hashing.join()
    meta = {
        "name": shape.name,
        "num_public": shape.num_public,
        "num_aux": shape.num_aux,
        "num_inputs": shape.r1cs.num_inputs,
        "templates": shape.templates,
        "stages": shape.stages,
        "regions": shape.regions,
        "spec_digest": shape.spec_digest,
        "r1cs_digest": shape.r1cs.digest(),  # made above, beside the writes; kept by the R1CS
        "meta": shape.meta,
    }
    with open(tmp / "shape.pkl", "wb") as f:
        pickle.dump(meta, f, protocol=pickle.HIGHEST_PROTOCOL)
    try:
        tmp.rename(directory)
    except OSError:  # another process wrote it first: keep theirs
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)


def load_shape(directory: Path) -> CircuitShape:
    directory = Path(directory)
    with open(directory / "shape.pkl", "rb") as f:
        meta = pickle.load(f)
    mats = []
    for m in _MATS:
        parts = [np.load(directory / f"{m}_{p}.npy", mmap_mode="r") for p in _PARTS]
        mats.append(CSR(*parts))
    r = R1CS(meta["num_inputs"], meta["num_aux"], *mats)
    if "r1cs_digest" in meta:
        r.known_digest(meta["r1cs_digest"])
    return CircuitShape(
        meta["name"], meta["num_public"], meta["num_aux"], meta["templates"], meta["stages"],
        meta["regions"], r, meta["spec_digest"], from_cache=True, meta=meta.get("meta", {}),
    )


def cached_build(
    family: str,
    params: dict,
    build: Callable[[], CircuitShape],
    cache_dir: Path | str | None,
    progress: Callable[[str], None] | None = None,
) -> CircuitShape:
    """Return the compiled shape for (family, params): loaded from ``cache_dir`` when present,
    else built with ``build()`` and stored there. ``cache_dir=None`` always builds."""
    say = progress or (lambda _msg: None)
    digest = spec_digest(family, params)
    if cache_dir is None:
        shape = build()
        shape.spec_digest = digest
        return shape
    entry = Path(cache_dir) / f"{family}-{digest[:24]}"
    if (entry / "shape.pkl").exists():
        say(f"loading the cached {family} circuit from {entry}")
        return load_shape(entry)
    shape = build()
    shape.spec_digest = digest
    say(f"saving the {family} circuit to {entry}")
    save_shape(shape, entry)
    # Serve the saved entry, memory-mapped, and let the built arrays go: a process that built
    # the circuit (an orchestrator whose cache missed) would otherwise hold the CSR matrices
    # as anonymous memory for its life, 29 GiB at porep-32g, where a loading process maps them.
    del shape
    loaded = load_shape(entry)
    loaded.from_cache = False  # built by this call; only its storage comes from the entry
    return loaded
