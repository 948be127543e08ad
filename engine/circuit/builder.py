"""The circuit builder: places gadget templates, one instance or an array of them at a time,
and compiles the whole circuit once into the R1CS of engine/groth16/r1cs.py, cached on disk by
a digest of its shape (cache.py).

Variables are ordered z = [1, public..., aux...]. Aux variables are allocated in build order:
*free* regions (private values the job supplies, such as Merkle siblings), ``alloc_aux``
regions that grow one allocation at a time, and the local slots of every instance (``n_loc``
consecutive variables each). Constraints come in the order of the ``place``/``call`` calls that
made them (an instance's ``n_rows`` rows consecutive), with bellman's input constraints last.
That is how Filecoin's C2 circuit has to be built (engine/c2/cs.py): bellperson's order of
variables and constraints, one gadget call at a time.

Every instance gets a dependency *depth* while it is placed: one more than the deepest producer
of its inputs (public inputs and free or ``alloc_aux`` variables have depth 0), looked up in a
per-variable depth array that grows with every allocation. ``compile`` gathers the instances of
one template at one depth into one :class:`Stage`, wherever they sit in the circuit, so a
circuit built from ~100k gadget calls has about templates x depths stages, not one per call.
The witness (witness.py) runs the stages depth by depth, every instance of a depth in parallel.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from itertools import repeat

import numpy as np

from engine.circuit.template import SparseRows, Template
from engine.groth16.r1cs import CSR, R1CS
from kernels.cpu.convert import to_mont_fr
from kernels.textfmt import fmt_bytes

BUILDER_VERSION = "sealtop-circuit-v2"  # v2: stages of instances at any place (bases, rows, depth)
ONE_MONT = to_mont_fr([1])[0]

_SMALL_CALL = 32  # a call with at most this many inputs looks depths up in Python, not numpy
_CHUNK = 1 << 22  # entries per vectorized step of _assemble (bounds its temporaries)


@dataclass(frozen=True)
class Stage:
    """``count`` instances of template ``template`` (index into the shape's templates), all at
    dependency ``depth``. Instance i owns the ``n_loc`` variables from ``bases[i]`` and the
    ``n_rows`` constraints from ``rows[i]``; its input slots map through ``inmap[i]``. Every
    input of an instance is produced at a lower depth, so a stage's instances are independent
    of each other and of every other stage of their depth."""

    template: int
    count: int
    bases: np.ndarray  # int64[count], first local variable of each instance
    rows: np.ndarray  # int64[count], first constraint of each instance, increasing
    inmap: np.ndarray  # int64[count, n_in], global variable indices
    depth: int


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


@dataclass(frozen=True)
class _Info:
    """What ``call`` needs of a template, looked up once per template."""

    tid: int
    n_in: int
    n_loc: int
    n_rows: int
    out_offs: tuple[int, ...]  # local offset of each output from the instance's base


@dataclass
class CircuitBuilder:
    """Collects public inputs, free regions and template instances, in circuit order."""

    name: str
    num_public: int
    templates: list[Template] = field(default_factory=list)
    regions: dict[str, np.ndarray] = field(default_factory=dict)
    next_var: int = 0
    next_row: int = 0

    def __post_init__(self) -> None:
        if self.num_public < 0:
            raise ValueError("a circuit cannot have a negative number of public inputs")
        self.next_var = 1 + self.num_public
        self.next_row = 0
        self._info: dict[int, _Info] = {}  # id(template) -> its _Info
        self._grown: dict[str, array] = {}  # alloc_aux regions, in allocation order
        self._depth = array("i", bytes(4 * self.next_var))  # per variable; len == next_var
        # one entry per instance, in circuit order: template, depth, first variable, first row
        self._i_tid, self._i_dep, self._i_base, self._i_row = (array("q") for _ in range(4))
        self._inputs: list[array] = []  # per template: its instances' inputs, in order
        self._counts: list[int] = []  # per template: instances placed

    def public(self, i: int) -> int:
        if not 0 <= i < self.num_public:
            raise ValueError(f"public input {i} out of range (circuit has {self.num_public})")
        return 1 + i

    def _claim(self, name: str) -> None:
        if name in self.regions:
            raise ValueError(f"variable region {name!r} is defined twice")

    def _alloc_free(self, n: int) -> int:
        """n variables of depth 0 (values the job supplies); returns the first."""
        if n < 0:
            raise ValueError("cannot allocate a negative number of variables")
        first = self.next_var
        self.next_var += n
        self._depth.frombytes(bytes(4 * n))
        return first

    def free(self, name: str, shape: tuple[int, ...] | int) -> np.ndarray:
        """A region of private variables that the job fills; returns their global indices."""
        self._claim(name)
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        n = int(np.prod(shape)) if shape else 1
        first = self._alloc_free(n)
        idx = np.arange(first, first + n, dtype=np.int64).reshape(shape)
        self.regions[name] = idx
        return idx

    def alloc_aux(self, name: str, n: int = 1) -> np.ndarray:
        """n private variables allocated now (the next aux indices), appended to the 1-D region
        ``name``, which grows with every call: bellperson allocates a supplied value wherever
        its gadget is, not in one block."""
        grown = self._grown.get(name)
        if grown is None:
            self._claim(name)
            grown = self._grown[name] = array("q")
            self.regions[name] = np.zeros(0, np.int64)  # the whole region is set in compile()
        first = self._alloc_free(n)
        if n == 1:
            grown.append(first)
        else:
            grown.extend(range(first, first + n))
        return np.arange(first, first + n, dtype=np.int64)

    def name_region(self, name: str, idx: np.ndarray) -> None:
        """Give a name to existing variables (for reading them back from a witness)."""
        self._claim(name)
        self.regions[name] = np.asarray(idx, np.int64)

    def _register(self, tmpl: Template) -> _Info:
        info = self._info.get(id(tmpl))
        if info is None:
            info = _Info(len(self.templates), tmpl.n_in, tmpl.n_loc, tmpl.n_rows,
                         tuple(s - 1 - tmpl.n_in for s in tmpl.outputs))
            self.templates.append(tmpl)  # kept alive, so its id is never reused
            self._inputs.append(array("q"))
            self._counts.append(0)
            self._info[id(tmpl)] = info
        return info

    def _bad_input(self, tmpl: Template) -> ValueError:
        return ValueError(f"template {tmpl.name}: an input refers to an unallocated variable")

    def call(self, tmpl: Template, inputs: Sequence[int]) -> list[int]:
        """One instance of ``tmpl`` over ``inputs`` (global indices), its variables and
        constraints next in the circuit; returns the global index of each output. Recorded in
        a few list appends: compile() gathers the instances into stages."""
        info = self._info.get(id(tmpl)) or self._register(tmpl)
        n_in = info.n_in
        if len(inputs) != n_in:
            raise ValueError(f"template {tmpl.name} takes {n_in} inputs, got {len(inputs)}")
        depth = self._depth
        if n_in == 0:
            d = 1
        elif n_in <= _SMALL_CALL:
            if min(inputs) < 0:
                raise self._bad_input(tmpl)
            try:
                d = max(map(depth.__getitem__, inputs)) + 1
            except (IndexError, TypeError):
                raise self._bad_input(tmpl) from None
        else:
            idx = np.asarray(inputs, np.int64)
            if idx.min() < 0 or idx.max() >= self.next_var:
                raise self._bad_input(tmpl)
            view = np.frombuffer(depth, np.int32)
            d = int(view[idx].max()) + 1
            del view  # a live view would stop the array from growing
        tid = info.tid
        base = self.next_var
        self._inputs[tid].extend(inputs)
        self._i_tid.append(tid)
        self._i_dep.append(d)
        self._i_base.append(base)
        self._i_row.append(self.next_row)
        self._counts[tid] += 1
        self.next_var = base + info.n_loc
        self.next_row += info.n_rows
        depth.extend(repeat(d, info.n_loc))
        return [base + o for o in info.out_offs]

    def place(self, tmpl: Template, inputs: np.ndarray) -> list[np.ndarray]:
        """Replicate ``tmpl`` once per row of ``inputs`` (int[count, n_in] global indices):
        ``count`` instances with consecutive variables and consecutive constraints, next in the
        circuit, all at one depth. Returns, for each template output, the global indices of
        that output per instance."""
        inputs = np.asarray(inputs, np.int64)
        if inputs.ndim == 1 and tmpl.n_in == 1:
            inputs = inputs[:, None]
        if inputs.ndim != 2 or inputs.shape[1] != tmpl.n_in:
            raise ValueError(
                f"template {tmpl.name} takes {tmpl.n_in} inputs, got an array of shape {inputs.shape}"
            )
        count = inputs.shape[0]
        if inputs.size and (inputs.min() < 0 or inputs.max() >= self.next_var):
            raise self._bad_input(tmpl)
        info = self._register(tmpl)
        if inputs.size:
            view = np.frombuffer(self._depth, np.int32)
            d = int(view[inputs].max()) + 1
            del view
        else:
            d = 1
        base, row0 = self.next_var, self.next_row
        inst = np.arange(count, dtype=np.int64)
        self._inputs[info.tid].frombytes(np.ascontiguousarray(inputs).tobytes())
        self._i_tid.frombytes(np.full(count, info.tid, np.int64).tobytes())
        self._i_dep.frombytes(np.full(count, d, np.int64).tobytes())
        self._i_base.frombytes((base + inst * info.n_loc).tobytes())
        self._i_row.frombytes((row0 + inst * info.n_rows).tobytes())
        self._counts[info.tid] += count
        self.next_var += count * info.n_loc
        self.next_row += count * info.n_rows
        self._depth.frombytes(np.full(count * info.n_loc, d, np.int32).tobytes())
        return [base + inst * info.n_loc + o for o in info.out_offs]

    def instances(self) -> list[tuple[Template, int]]:
        """(template, instances placed so far) for every template, in first-use order."""
        return list(zip(self.templates, self._counts))

    def matrix_bytes(self) -> int:
        """Bytes the compiled A, B and C will take (36 per nonzero, 8 per row pointer)."""
        nnz = sum(c * t.nnz for t, c in self.instances())
        return 36 * nnz + 24 * self.next_row

    def _columns(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Every instance's template, depth, first variable and first row (copies, in circuit
        order), and its rank among its template's instances (the row of its input map)."""
        tid, dep, base, row = (np.frombuffer(c, np.int64).copy()
                               for c in (self._i_tid, self._i_dep, self._i_base, self._i_row))
        counts = np.bincount(tid, minlength=len(self.templates))
        by_t = np.argsort(tid, kind="stable")
        rank = np.empty(len(tid), np.int64)
        rank[by_t] = np.arange(len(tid), dtype=np.int64) - np.repeat(np.cumsum(counts) - counts, counts)
        return tid, dep, base, row, rank

    def _inmap(self, t: int) -> np.ndarray:
        """Template t's input maps, one row per instance in circuit order: a view of the
        recorded inputs (no copy), to be dropped before anything more is placed (a live view
        keeps the record from growing)."""
        n_in = self.templates[t].n_in
        if not n_in:
            return np.zeros((self._counts[t], 0), np.int64)
        return np.frombuffer(self._inputs[t], np.int64).reshape(-1, n_in)

    def coalesce(self) -> list[Stage]:
        """The instances placed so far as stages, one per (depth, template), ordered by depth
        and then by template; instances in circuit order within a stage. The stages' arrays
        are slices of a few arrays sorted once, so a circuit of many depths costs a slice per
        stage, not a gather."""
        tid, dep, base, row, rank = self._columns()
        n, nt = len(tid), max(len(self.templates), 1)
        order = np.argsort(dep * nt + tid, kind="stable")
        tid, dep, base, row, rank = tid[order], dep[order], base[order], row[order], rank[order]
        del order
        key = dep * nt + tid
        cuts = (np.flatnonzero(np.diff(key)) + 1).tolist() if n else []
        del key
        # every template's input maps in the sorted order of its instances
        by_t = np.argsort(tid, kind="stable")
        inmaps, off = [], 0
        for t, c in enumerate(np.bincount(tid, minlength=len(self.templates)).tolist()):
            inmaps.append(self._inmap(t)[rank[by_t[off : off + c]]])
            off += c
        del by_t, rank
        used = [0] * len(self.templates)
        stages: list[Stage] = []
        for a, b in zip([0, *cuts], [*cuts, n]):
            if a == b:
                continue
            t = int(tid[a])
            j = used[t]
            used[t] = j + b - a
            stages.append(Stage(t, b - a, base[a:b], row[a:b], inmaps[t][j : j + b - a], int(dep[a])))
        return stages

    def _by_template(self) -> list[tuple[int, np.ndarray, np.ndarray, np.ndarray]]:
        """(template, bases, rows, input maps) of every template's instances in circuit order:
        what the matrices need, whatever the depths (one vectorized pass per template)."""
        tid, _dep, base, row, _rank = self._columns()
        by_t = np.argsort(tid, kind="stable")
        out, off = [], 0
        for t, c in enumerate(self._counts):
            sel = by_t[off : off + c]
            out.append((t, base[sel], row[sel], self._inmap(t)))
            off += c
        return out

    def compile(self, matrices: bool = True) -> CircuitShape:
        """Assemble the CSR matrices of all instances, with bellman's input constraints
        appended (the rows :func:`with_input_constraints` adds, written in place). Without
        ``matrices`` the shape holds the witness program alone and an R1CS of no rows: enough to
        time synthesis on a machine the matrices do not fit (porep-32g's need 27 GiB), never a
        circuit to prove or to cache."""
        for name, grown in self._grown.items():
            self.regions[name] = np.frombuffer(grown, np.int64).copy()
        num_inputs = 1 + self.num_public
        if not matrices:
            empty = CSR(np.zeros(1, np.int64), np.zeros(0, np.int32), np.zeros((0, 4), np.uint64))
            return CircuitShape(
                self.name, self.num_public, self.next_var - num_inputs, self.templates, self.coalesce(),
                self.regions, R1CS(num_inputs, self.next_var - num_inputs, empty, empty, empty),
                meta={"witness_only": True},
            )
        need = self.matrix_bytes()
        avail = available_memory_bytes()
        if avail is not None and need > avail:
            raise ValueError(
                f"circuit {self.name} needs about {fmt_bytes(need)} for its matrices; "
                f"this machine has {fmt_bytes(avail)} available"
            )
        placed = self._by_template()
        # the three matrices side by side: numpy's copies and scatters release the GIL, and each
        # matrix writes only its own arrays
        with ThreadPoolExecutor(3, thread_name_prefix="sealtop-assemble") as pool:
            mats = list(pool.map(_assemble, repeat(self.templates), repeat(placed), ("A", "B", "C"),
                                 repeat(num_inputs), repeat(self.next_row)))
        del placed
        r = R1CS(num_inputs, self.next_var - num_inputs, *mats)
        r.check()
        return CircuitShape(
            self.name, self.num_public, self.next_var - num_inputs, self.templates, self.coalesce(),
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


def global_columns(tmpl: Template, bases: np.ndarray, inmap: np.ndarray, slots: np.ndarray) -> np.ndarray:
    """Global variable index of local ``slots`` for instances with first variables ``bases``
    and input maps ``inmap``: int64[len(bases), len(slots)]."""
    slots = np.asarray(slots, np.int64)
    out = bases[:, None] + (slots - 1 - tmpl.n_in)[None, :]
    is_in = (slots >= 1) & (slots <= tmpl.n_in)
    if is_in.any():
        out[:, is_in] = inmap[:, slots[is_in] - 1]
    out[:, slots == 0] = 0
    return out


def _chunks(count: int, width: int) -> list[tuple[int, int]]:
    """Instance ranges of at most ~_CHUNK entries of ``width`` each."""
    step = max(1, _CHUNK // max(width, 1))
    return [(a, min(a + step, count)) for a in range(0, count, step)]


def _consecutive(rows: np.ndarray, n_rows: int) -> bool:
    """Whether instances with increasing, non-overlapping first rows ``rows`` are back to back
    (then their rows and their entries are one block)."""
    return int(rows[-1] - rows[0]) == (len(rows) - 1) * n_rows


def _cumsum_inplace(a: np.ndarray) -> None:
    """Running sum of ``a`` in place, a chunk at a time (no full-size temporary)."""
    carry = 0
    for s in range(0, len(a), _CHUNK):
        seg = a[s : s + _CHUNK]
        np.cumsum(seg, out=seg)
        seg += carry
        carry = int(seg[-1])


# An instance with at least this many entries of one matrix, placed apart from its neighbours, is
# copied as one block; smaller ones are scattered together. A scatter of (n, 4) rows by a 2-D index
# moves each row's four words one by one: on the 2-core it took 2.05 of the 512 MiB circuit's 2.4 s
# of A (10.9 M entries), against 0.17 s as 32-byte items and 0.02 s as block copies.
_BLOCK_MIN = 64


def _items(a: np.ndarray) -> np.ndarray:
    """A C-contiguous (n, 4) uint64 array as n 32-byte items (a view: writes go through)."""
    return a.view(np.dtype((np.void, 32))).reshape(-1)


def _assemble(templates: list[Template], placed: list[tuple[int, np.ndarray, np.ndarray, np.ndarray]],
              which: str, num_inputs: int, num_rows: int) -> CSR:
    """One matrix of the whole circuit, written straight into preallocated arrays (no
    concatenation copies: at Filecoin's scale a matrix is several GiB). ``placed`` holds each
    template's instances (template, bases, rows, input maps; rows increasing): instances sit
    at their own rows, anywhere, so the row lengths are scattered first and summed in place
    into the row pointers, then each instance's entries (one block, its rows being
    consecutive) go to the pointer of its first row, a chunk of instances at a time; a chunk of
    back-to-back instances is one slice. The last num_inputs rows are bellman's input
    constraints ``x_i · 0 = 0``: A holds x_i there, B and C nothing, exactly what
    :func:`with_input_constraints` appends."""
    rows = num_rows + num_inputs
    nnz = sum(len(b) * int(getattr(templates[t], which).ptr[-1]) for t, b, _r, _i in placed)
    extra = num_inputs if which == "A" else 0
    indptr = np.zeros(rows + 1, np.int64)
    lens = indptr[1:]  # row lengths first, then summed in place into the row pointers
    for t, bases, starts, _inmap in placed:
        tmpl = templates[t]
        n_r = tmpl.n_rows
        m: SparseRows = getattr(tmpl, which)
        if not n_r or not m.ptr[-1]:
            continue
        tl = np.diff(m.ptr)
        for a, b in _chunks(len(bases), n_r):
            r = starts[a:b]
            if _consecutive(r, n_r):
                lens[r[0] : r[0] + (b - a) * n_r].reshape(b - a, n_r)[:] = tl
            else:
                lens[r[:, None] + np.arange(n_r)] = tl
    lens[num_rows:] = 1 if which == "A" else 0
    _cumsum_inplace(lens)
    indices = np.empty(nnz + extra, np.int32)
    data = np.empty((nnz + extra, 4), np.uint64)
    for t, bases, starts, inmap in placed:
        tmpl = templates[t]
        m = getattr(tmpl, which)
        n_k = int(m.ptr[-1])
        if not n_k:
            continue
        for a, b in _chunks(len(bases), n_k):
            cols = global_columns(tmpl, bases[a:b], inmap[a:b], m.slot)
            r = starts[a:b]
            if _consecutive(r, tmpl.n_rows):
                k0 = int(indptr[r[0]])
                indices[k0 : k0 + (b - a) * n_k] = cols.reshape(-1)
                data[k0 : k0 + (b - a) * n_k].reshape(b - a, n_k, 4)[:] = m.coef[None]
            elif n_k >= _BLOCK_MIN:  # few, large instances: a block copy each
                for i, k0 in enumerate(indptr[r].tolist()):
                    indices[k0 : k0 + n_k] = cols[i]
                    data[k0 : k0 + n_k] = m.coef
            else:  # many small ones: one scatter, the coefficients as 32-byte items
                dest = indptr[r][:, None] + np.arange(n_k)
                indices[dest] = cols
                _items(data)[dest] = _items(np.ascontiguousarray(m.coef))[None]
    if which == "A":
        indices[nnz:] = np.arange(num_inputs, dtype=np.int32)
        data[nnz:] = ONE_MONT
    return CSR(indptr, indices, data)
