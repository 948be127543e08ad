"""The circuit builder: places gadget templates as arrays of instances and compiles the whole
circuit once into the R1CS of engine/groth16/r1cs.py, cached on disk by a digest of its shape.

Variables are ordered z = [1, public..., aux...]. Aux variables are allocated in build order:
*free* regions (private values the job supplies, such as Merkle siblings) and the local slots
of each placement (instance i of a placement owns ``n_loc`` consecutive variables from
``base + i * n_loc``). A :class:`Stage` records one placement; the witness (witness.py) runs
the stages in dependency waves, every instance of a wave in parallel.
"""

from __future__ import annotations

import hashlib
import json
import pickle
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from engine.circuit.template import SparseRows, Template
from engine.groth16.r1cs import CSR, R1CS
from kernels.cpu.convert import to_mont_fr
from kernels.textfmt import fmt_bytes

BUILDER_VERSION = "sealtop-circuit-v1"
ONE_MONT = to_mont_fr([1])[0]


@dataclass(frozen=True)
class Stage:
    """One placement: ``count`` instances of template ``template`` (index into the shape's
    templates), locals from ``base``, input slots mapped through ``inmap[count, n_in]``."""

    template: int
    base: int
    count: int
    inmap: np.ndarray  # int64[count, n_in], global variable indices


@dataclass
class CircuitShape:
    """Everything synthesis needs about a circuit: the R1CS (input constraints applied), the
    templates and stages of the witness program, and the named variable regions."""

    name: str
    num_public: int
    num_aux: int
    templates: list[Template]
    stages: list[Stage]
    regions: dict[str, np.ndarray]  # name -> global variable indices (any shape)
    r1cs: R1CS
    spec_digest: str = ""
    from_cache: bool = False
    meta: dict = field(default_factory=dict)  # what a circuit family keeps beside its shape

    @property
    def num_vars(self) -> int:
        return 1 + self.num_public + self.num_aux


@dataclass
class CircuitBuilder:
    """Collects public inputs, free regions and template placements."""

    name: str
    num_public: int
    templates: list[Template] = field(default_factory=list)
    stages: list[Stage] = field(default_factory=list)
    regions: dict[str, np.ndarray] = field(default_factory=dict)
    next_var: int = 0

    def __post_init__(self) -> None:
        if self.num_public < 0:
            raise ValueError("a circuit cannot have a negative number of public inputs")
        self.next_var = 1 + self.num_public
        self._tmpl_ids: dict[int, int] = {}
        self._grown: dict[str, list[int]] = {}

    def public(self, i: int) -> int:
        if not 0 <= i < self.num_public:
            raise ValueError(f"public input {i} out of range (circuit has {self.num_public})")
        return 1 + i

    def free(self, name: str, shape: tuple[int, ...] | int) -> np.ndarray:
        """A region of private variables that the job fills; returns their global indices."""
        if name in self.regions:
            raise ValueError(f"variable region {name!r} is defined twice")
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        n = int(np.prod(shape)) if shape else 1
        idx = np.arange(self.next_var, self.next_var + n, dtype=np.int64).reshape(shape)
        self.next_var += n
        self.regions[name] = idx
        return idx

    def alloc_aux(self, name: str, n: int = 1) -> np.ndarray:
        """n private variables allocated now (the next aux indices), appended to the 1-D region
        ``name``, which grows with every call: bellperson allocates a supplied value wherever
        its gadget is, not in one block."""
        if name in self.regions and name not in self._grown:
            raise ValueError(f"variable region {name!r} is defined twice")
        grown = self._grown.setdefault(name, [])
        idx = np.arange(self.next_var, self.next_var + n, dtype=np.int64)
        self.next_var += n
        grown.extend(idx.tolist())
        self.regions[name] = idx  # replaced by the whole region in compile()
        return idx

    def call(self, tmpl: Template, inputs: list[int]) -> list[int]:
        """One instance of ``tmpl`` over ``inputs`` (global indices), its variables and
        constraints next in the circuit; returns the global index of each output."""
        outs = self.place(tmpl, np.asarray(inputs, np.int64).reshape(1, tmpl.n_in))
        return [int(o[0]) for o in outs]

    def name_region(self, name: str, idx: np.ndarray) -> None:
        """Give a name to existing variables (for reading them back from a witness)."""
        if name in self.regions:
            raise ValueError(f"variable region {name!r} is defined twice")
        self.regions[name] = np.asarray(idx, np.int64)

    def place(self, tmpl: Template, inputs: np.ndarray) -> list[np.ndarray]:
        """Replicate ``tmpl`` once per row of ``inputs`` (int[count, n_in] global indices).
        Returns, for each template output, the global indices of that output per instance."""
        inputs = np.asarray(inputs, np.int64)
        if inputs.ndim == 1 and tmpl.n_in == 1:
            inputs = inputs[:, None]
        if inputs.ndim != 2 or inputs.shape[1] != tmpl.n_in:
            raise ValueError(
                f"template {tmpl.name} takes {tmpl.n_in} inputs, got an array of shape {inputs.shape}"
            )
        count = inputs.shape[0]
        if inputs.size and (inputs.min() < 0 or inputs.max() >= self.next_var):
            raise ValueError(f"template {tmpl.name}: an input refers to an unallocated variable")
        tid = self._tmpl_ids.get(id(tmpl))
        if tid is None:
            tid = len(self.templates)
            self.templates.append(tmpl)
            self._tmpl_ids[id(tmpl)] = tid
        base = self.next_var
        self.next_var += count * tmpl.n_loc
        self.stages.append(Stage(tid, base, count, inputs))
        inst = np.arange(count, dtype=np.int64)
        return [base + inst * tmpl.n_loc + (s - 1 - tmpl.n_in) for s in tmpl.outputs]

    def matrix_bytes(self) -> int:
        """Bytes the compiled A, B and C will take (36 per nonzero, 8 per row pointer)."""
        nnz = rows = 0
        for st in self.stages:
            t = self.templates[st.template]
            nnz += st.count * t.nnz
            rows += st.count * t.n_rows
        return 36 * nnz + 24 * rows

    def compile(self) -> CircuitShape:
        """Assemble the CSR matrices of all placements, with bellman's input constraints
        appended (the rows :func:`with_input_constraints` adds, written in place)."""
        for name, grown in self._grown.items():
            self.regions[name] = np.array(grown, np.int64)
        num_inputs = 1 + self.num_public
        need = self.matrix_bytes()
        avail = available_memory_bytes()
        if avail is not None and need > avail:
            raise ValueError(
                f"circuit {self.name} needs about {fmt_bytes(need)} for its matrices; "
                f"this machine has {fmt_bytes(avail)} available"
            )
        mats = [_assemble(self.templates, self.stages, m, num_inputs) for m in ("A", "B", "C")]
        r = R1CS(num_inputs, self.next_var - num_inputs, *mats)
        r.check()
        return CircuitShape(
            self.name, self.num_public, self.next_var - num_inputs, self.templates, self.stages,
            self.regions, r,
        )


def available_memory_bytes() -> int | None:
    """MemAvailable from /proc/meminfo (None where there is no such file)."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def global_columns(tmpl: Template, stage: Stage, slots: np.ndarray) -> np.ndarray:
    """Global variable index of local ``slots`` for every instance: int64[count, len(slots)]."""
    slots = np.asarray(slots, np.int64)
    inst = np.arange(stage.count, dtype=np.int64)[:, None]
    local = stage.base + inst * tmpl.n_loc + (slots - 1 - tmpl.n_in)[None, :]
    full_in = np.concatenate([np.zeros((stage.count, 1), np.int64), stage.inmap], axis=1)
    is_in = (slots <= tmpl.n_in)[None, :]
    picked = full_in[:, np.minimum(slots, tmpl.n_in)]
    return np.where(is_in, picked, local)


def _assemble(templates: list[Template], stages: list[Stage], which: str, num_inputs: int) -> CSR:
    """One matrix of the whole circuit, written straight into preallocated arrays (no
    concatenation copies: at Filecoin's scale a matrix is several GiB). The last num_inputs
    rows are bellman's input constraints ``x_i · 0 = 0``: A holds x_i there, B and C nothing,
    exactly what :func:`with_input_constraints` appends."""
    rows = sum(st.count * templates[st.template].n_rows for st in stages) + num_inputs
    nnz = sum(st.count * int(getattr(templates[st.template], which).ptr[-1]) for st in stages)
    extra = num_inputs if which == "A" else 0
    indptr = np.zeros(rows + 1, np.int64)
    indices = np.empty(nnz + extra, np.int32)
    data = np.empty((nnz + extra, 4), np.uint64)
    r0 = k0 = 0
    for st in stages:
        t = templates[st.template]
        m: SparseRows = getattr(t, which)
        n_r, n_k = t.n_rows * st.count, int(m.ptr[-1]) * st.count
        lens = np.diff(m.ptr)
        np.cumsum(np.tile(lens, st.count), out=indptr[r0 + 1 : r0 + n_r + 1])
        indptr[r0 + 1 : r0 + n_r + 1] += k0
        if n_k:
            indices[k0 : k0 + n_k] = global_columns(t, st, m.slot).reshape(-1)
            data[k0 : k0 + n_k].reshape(st.count, -1, 4)[:] = m.coef[None]
        r0, k0 = r0 + n_r, k0 + n_k
    ins = np.arange(1, num_inputs + 1, dtype=np.int64)
    indptr[r0 + 1 :] = k0 + (ins if which == "A" else 0)
    if which == "A":
        indices[k0:] = np.arange(num_inputs, dtype=np.int32)
        data[k0:] = ONE_MONT
    return CSR(indptr, indices, data)


# ---------------------------------------------------------------------------- the disk cache


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
    for m in _MATS:
        csr = getattr(shape.r1cs, m)
        for part in _PARTS:
            np.save(tmp / f"{m}_{part}.npy", getattr(csr, part))
    meta = {
        "name": shape.name,
        "num_public": shape.num_public,
        "num_aux": shape.num_aux,
        "num_inputs": shape.r1cs.num_inputs,
        "templates": shape.templates,
        "stages": shape.stages,
        "regions": shape.regions,
        "spec_digest": shape.spec_digest,
        "r1cs_digest": shape.r1cs.digest(),  # seconds to compute at large: once, here
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
