"""The ``porep`` circuit family: one partition of a PoRep-shaped proof, its presets, and a
seeded synthetic-sector job generator.

For each of k challenges c the partition proves:
- the data node's inclusion in tree_d (SHA-256 binary tree, root comm_d, public);
- the labelling of node c on each layer ℓ = 1..L: label = trunc(SHA-256(replica_id ‖ ℓ as u32 BE
  ‖ c as u64 BE ‖ 20 zero bytes ‖ the P parent labels)), field elements as 32 bytes LE;
- the encoding: replica node = data node + key, the key being the last layer's label;
- the replica node's inclusion in tree_r_last (Poseidon, arity 8 then 2, root comm_r_last);
- the column hash Poseidon_L(labels of c on every layer) and its inclusion in tree_c (same
  shape, root comm_c);
- and once: comm_r = Poseidon_2(comm_c, comm_r_last) (public).
Every Merkle path's bits are the bits of the public challenge index, unpacked in the circuit.
Public inputs: replica_id, comm_d, comm_r, then the k challenge indices.

Synthetic sectors: parents of node i are P seeded pseudo-random nodes, their labels taken from
layer ℓ − 1 (layer 0 is all zeros). Sectors up to ``FULL_TREE_LOG2`` nodes are computed in full
(every label, every tree node); larger ones are sparse (only what the challenged paths touch is
real, the rest are seeded stand-ins), which keeps porep-32g's shape without a 32 GiB sector.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from engine.circuit.bits import unpack
from engine.circuit.builder import CircuitBuilder, CircuitShape, cached_build
from engine.circuit.merkle import (
    eq_template,
    poseidon_level_template,
    poseidon_paths,
    poseidon_tree_arities,
    sha_level_template,
    sha_paths,
)
from engine.circuit.native import poseidon_many, random_field_254
from engine.circuit.poseidon import poseidon_gadget
from engine.circuit.poseidon_params import ARITIES
from engine.circuit.sha256 import digest_to_field, field_to_stream, sha256_field, sha256_stream
from engine.circuit.template import ONE, OP_LIN, Bit, Template, Tracer, lc_sum, var
from engine.circuit.witness import fill_inputs, witness_numba
from kernels.constants import R_MOD

FULL_TREE_LOG2 = 12
LAYER_BITS = 4  # layer indices 1..15 fit in the low nibble of the u32


@dataclass(frozen=True)
class PorepParams:
    """The shape of one partition."""

    challenges: int  # k
    layers: int  # L (2, 8 or 11: the column hash arity)
    log2_nodes: int  # sector nodes = 2^log2_nodes; tree depths follow
    parents: int  # P, parent labels hashed per label
    sha: bool = True  # prove tree_d and the labelling (False: Poseidon parts only)

    def validate(self) -> None:
        if not 1 <= self.challenges <= 4096:
            raise ValueError(f"porep: challenges must be 1..4096, got {self.challenges}")
        if self.layers not in ARITIES:
            raise ValueError(f"porep: layers must be one of {ARITIES} (the column-hash arity), got {self.layers}")
        if not 1 <= self.log2_nodes <= 32:
            raise ValueError(f"porep: log2_nodes must be 1..32, got {self.log2_nodes}")
        if not 0 <= self.parents <= 64:
            raise ValueError(f"porep: parents must be 0..64, got {self.parents}")

    @property
    def num_nodes(self) -> int:
        return 1 << self.log2_nodes

    @property
    def num_public(self) -> int:
        return 3 + self.challenges


PRESETS: dict[str, tuple[PorepParams, int]] = {
    # name: (params, partitions per job)
    "tiny": (PorepParams(challenges=2, layers=2, log2_nodes=3, parents=0, sha=False), 1),
    "small": (PorepParams(challenges=1, layers=2, log2_nodes=3, parents=0), 1),
    "medium": (PorepParams(challenges=2, layers=2, log2_nodes=6, parents=4), 1),
    "large": (PorepParams(challenges=8, layers=11, log2_nodes=9, parents=6), 1),
    "porep-32g": (PorepParams(challenges=18, layers=11, log2_nodes=30, parents=37), 10),
}


def preset_params(preset: str) -> PorepParams:
    if preset not in PRESETS:
        raise ValueError(f"unknown porep preset {preset!r} (choose one of {', '.join(PRESETS)})")
    return PRESETS[preset][0]


def preset_partitions(preset: str) -> int:
    preset_params(preset)
    return PRESETS[preset][1]


# ---------------------------------------------------------------------------- templates


def challenge_template(log2_nodes: int) -> Template:
    """Input: a challenge index. Outputs: its log2_nodes bits (binds index < 2^log2_nodes)."""
    tr = Tracer("challenge-bits", 1)
    for b in unpack(tr, var(tr.input(0)), log2_nodes):
        tr.output(b.slot)
    return tr.finish()


def zero_template() -> Template:
    """No inputs; one wire pinned to zero (feeds constant-zero bits to shared templates)."""
    tr = Tracer("zero", 0)
    z = tr.alloc()
    tr.enforce(var(z), var(ONE), {})
    tr.emit(OP_LIN, z, [])
    tr.output(z)
    return tr.finish()


def label_template(log2_nodes: int, parents: int) -> Template:
    """Inputs: replica_id, LAYER_BITS layer bits, log2_nodes node bits, P parent labels.
    Output: the label (truncated SHA-256 of the labelling message)."""
    tr = Tracer("label", 1 + LAYER_BITS + log2_nodes + parents)
    replica = tr.input(0)
    layer = [Bit(tr.input(1 + i)) for i in range(LAYER_BITS)]
    node = [Bit(tr.input(1 + LAYER_BITS + i)) for i in range(log2_nodes)]
    par = [tr.input(1 + LAYER_BITS + log2_nodes + j) for j in range(parents)]
    zero = Bit.const(0)
    stream = field_to_stream(unpack(tr, var(replica), 254))
    layer32 = layer + [zero] * (32 - LAYER_BITS)
    stream += [layer32[31 - i] for i in range(32)]  # u32 big-endian
    node64 = node + [zero] * (64 - log2_nodes)
    stream += [node64[63 - i] for i in range(64)]  # u64 big-endian
    stream += [zero] * (20 * 8)
    for p in par:
        stream += field_to_stream(unpack(tr, var(p), 254))
    tr.output(digest_to_field(tr, sha256_stream(tr, stream)))
    return tr.finish()


def column_template(layers: int) -> Template:
    tr = Tracer(f"column{layers}", layers)
    tr.output(poseidon_gadget(tr, [tr.input(i) for i in range(layers)]))
    return tr.finish()


def encode_template() -> Template:
    """Inputs data, key. Output replica = data + key."""
    tr = Tracer("encode", 2)
    out = tr.alloc()
    lc = lc_sum((1, var(tr.input(0))), (1, var(tr.input(1))))
    tr.enforce(lc, var(ONE), var(out))
    tr.emit(OP_LIN, out, tr.lc_args(lc))
    tr.output(out)
    return tr.finish()


def comm_r_template() -> Template:
    """Inputs comm_c, comm_r_last, comm_r (public): enforces comm_r = Poseidon_2(comm_c, comm_r_last)."""
    tr = Tracer("comm_r", 3)
    h = poseidon_gadget(tr, [tr.input(0), tr.input(1)])
    tr.enforce(var(h), var(ONE), var(tr.input(2)))
    return tr.finish()


# ---------------------------------------------------------------------------- the circuit


def _poseidon_path(cb: CircuitBuilder, leaf: np.ndarray, bits: list[np.ndarray], name: str,
                   log2_nodes: int, tmpl: dict[int, Template]) -> np.ndarray:
    k = len(leaf)
    cur = leaf
    pos = 0
    for lvl, a in enumerate(poseidon_tree_arities(log2_nodes)):
        m = a.bit_length() - 1
        sib = cb.free(f"{name}_sib{lvl}", (k, a - 1))
        inputs = np.concatenate([cur[:, None], sib, np.stack(bits[pos : pos + m], axis=1)], axis=1)
        (cur,) = cb.place(tmpl[a], inputs)
        pos += m
    return cur


def _build(p: PorepParams, say: Callable[[str], None] = lambda _msg: None) -> CircuitShape:
    k, L, n = p.challenges, p.layers, p.log2_nodes
    say(f"tracing the porep gadgets (k={k}, L={L}, 2^{n} nodes, {p.parents} parents)")
    cb = CircuitBuilder("porep", p.num_public)
    replica_id, comm_d, comm_r = cb.public(0), cb.public(1), cb.public(2)
    chal = np.array([cb.public(3 + i) for i in range(k)], np.int64)
    eq = eq_template()
    bits = cb.place(challenge_template(n), chal[:, None])  # n arrays of (k,)
    data = cb.free("data", k)
    comm_c = cb.free("comm_c", 1)[0]
    comm_r_last = cb.free("comm_r_last", 1)[0]

    if p.sha:
        (zero,) = cb.place(zero_template(), np.zeros((1, 0), np.int64))
        zero_var = int(zero[0])
        parents = cb.free("parent_labels", (k, L, p.parents))
        say(f"tracing the labelling gadget ({p.parents} parents)")
        lt = label_template(n, p.parents)
        labels = []
        for layer in range(1, L + 1):
            lbits = [ONE if (layer >> i) & 1 else zero_var for i in range(LAYER_BITS)]
            inputs = np.concatenate(
                [np.full((k, 1), replica_id), np.tile(np.array(lbits, np.int64), (k, 1)),
                 np.stack(bits, axis=1), parents[:, layer - 1, :]], axis=1)
            (lab,) = cb.place(lt, inputs)
            labels.append(lab)
        labels_arr = np.stack(labels, axis=1)  # (k, L)
        cb.name_region("labels", labels_arr)
        # tree_d
        say("tracing the SHA-256 Merkle level")
        st = sha_level_template()
        cur = data
        for lvl in range(n):
            sib = cb.free(f"d_sib{lvl}", k)
            (cur,) = cb.place(st, np.stack([cur, sib, bits[lvl]], axis=1))
        cb.place(eq, np.stack([cur, np.full(k, comm_d)], axis=1))
    else:
        labels_arr = cb.free("labels", (k, L))

    (replica,) = cb.place(encode_template(), np.stack([data, labels_arr[:, L - 1]], axis=1))
    cb.name_region("replica", replica)
    tmpl = {a: poseidon_level_template(a) for a in set(poseidon_tree_arities(n))}
    root_r = _poseidon_path(cb, replica, bits, "r", n, tmpl)
    cb.place(eq, np.stack([root_r, np.full(k, comm_r_last)], axis=1))
    (column,) = cb.place(column_template(L), labels_arr)
    root_c = _poseidon_path(cb, column, bits, "c", n, tmpl)
    cb.place(eq, np.stack([root_c, np.full(k, comm_c)], axis=1))
    cb.place(comm_r_template(), np.array([[comm_c, comm_r_last, comm_r]], np.int64))
    say(f"assembling the matrices (about {cb.matrix_bytes() / 2**20:.0f} MiB)")
    return cb.compile()


def build_porep(
    p: PorepParams | str,
    cache_dir: Path | str | None = None,
    progress: Callable[[str], None] | None = None,
) -> CircuitShape:
    """The compiled partition circuit (R1CS with the input constraints applied), loaded from
    ``cache_dir`` when it was built before. ``progress`` receives one line per phase."""
    if isinstance(p, str):
        p = preset_params(p)
    p.validate()
    say = progress or (lambda _msg: None)
    return cached_build("porep", asdict(p), lambda: _build(p, say), cache_dir, progress)


# ---------------------------------------------------------------------------- jobs


@dataclass
class PorepPartition:
    """One partition's inputs: public values and the private regions of the witness."""

    params: PorepParams
    public: list[int]  # replica_id, comm_d, comm_r, challenges
    free: dict[str, object]
    challenges: list[int]


@dataclass
class Sector:
    """A synthetic sector (possibly sparse): what the partitions are proven against."""

    params: PorepParams
    seed: int
    replica_id: int
    comm_d: int
    comm_c: int
    comm_r_last: int
    comm_r: int


def _u64(seed: int, *tags: int | str) -> int:
    h = hashlib.sha256(repr((seed, *tags)).encode()).digest()
    return int.from_bytes(h[:8], "little")


def parent_indices(seed: int, node: int, count: int, num_nodes: int) -> list[int]:
    """The P parents of ``node``: seeded pseudo-random node indices."""
    return [_u64(seed, "parent", node, j) % num_nodes for j in range(count)]


def label_message(replica_id: int, layer: int, node: int, parent_labels: list[int]) -> bytes:
    return (replica_id.to_bytes(32, "little") + layer.to_bytes(4, "big") + node.to_bytes(8, "big")
            + bytes(20) + b"".join(x.to_bytes(32, "little") for x in parent_labels))


def generate_partitions(p: PorepParams | str, seed: int, partitions: int = 1) -> tuple[Sector, list[PorepPartition]]:
    """A reproducible synthetic sector from ``seed`` and its partitions' inputs.

    Small sectors (≤ 2^FULL_TREE_LOG2 nodes) are real throughout: random data, every label,
    every tree node. Larger ones keep real values on everything the challenges touch."""
    if isinstance(p, str):
        p = preset_params(p)
    p.validate()
    if partitions < 1:
        raise ValueError("a job has at least one partition")
    rng = np.random.default_rng(seed)
    N = p.num_nodes
    k = p.challenges
    replica_id = sha256_field(b"sealtop replica id" + seed.to_bytes(16, "little", signed=True))
    chals = [[_u64(seed, "challenge", part, i) % N for i in range(k)] for part in range(partitions)]
    full = p.log2_nodes <= FULL_TREE_LOG2
    nodes = list(range(N)) if full else sorted({c for cs in chals for c in cs})
    data = dict(zip(nodes, random_field_254(rng, len(nodes))))

    # labels[layer][node] for the nodes we need; parents' labels of layer-1 come from the
    # full computation (small sectors) or from seeded stand-ins (sparse sectors)
    labels: list[dict[int, int]] = [{i: 0 for i in nodes}]
    parent_vals: dict[tuple[int, int], list[int]] = {}
    for layer in range(1, p.layers + 1):
        cur: dict[int, int] = {}
        prev = labels[layer - 1]
        for i in nodes:
            pars = parent_indices(seed, i, p.parents, N)
            if layer == 1:
                pv = [0] * p.parents
            elif full:
                pv = [prev[j] for j in pars]
            else:
                pv = [prev[j] if j in prev else _u64(seed, "stand-in", layer - 1, j) for j in pars]
            parent_vals[(layer, i)] = pv
            cur[i] = sha256_field(label_message(replica_id, layer, i, pv))
        labels.append(cur)
    key = labels[p.layers]
    replica = {i: (data[i] + key[i]) % R_MOD for i in nodes}
    columns = dict(zip(nodes, poseidon_many([[labels[l][i] for l in range(1, p.layers + 1)] for i in nodes])))

    all_ch = sorted({c for cs in chals for c in cs})
    d_paths = sha_paths(data, N, all_ch, rng)
    r_paths = poseidon_paths(replica, N, all_ch, rng)
    c_paths = poseidon_paths(columns, N, all_ch, rng)
    comm_r = poseidon_many([[c_paths.root, r_paths.root]])[0]
    sector = Sector(p, seed, replica_id, d_paths.root, c_paths.root, r_paths.root, comm_r)

    at = {c: j for j, c in enumerate(all_ch)}
    parts = []
    arities = poseidon_tree_arities(p.log2_nodes)
    for cs in chals:
        free: dict[str, object] = {
            "data": [data[c] for c in cs],
            "comm_c": [c_paths.root],
            "comm_r_last": [r_paths.root],
        }
        for lvl in range(len(arities)):
            free[f"r_sib{lvl}"] = [r_paths.siblings[at[c]][lvl] for c in cs]
            free[f"c_sib{lvl}"] = [c_paths.siblings[at[c]][lvl] for c in cs]
        if p.sha:
            for lvl in range(p.log2_nodes):
                free[f"d_sib{lvl}"] = [d_paths.siblings[at[c]][lvl][0] for c in cs]
            free["parent_labels"] = [[parent_vals[(l, c)] for l in range(1, p.layers + 1)] for c in cs]
        else:
            free["labels"] = [[labels[l][c] for l in range(1, p.layers + 1)] for c in cs]
        public = [replica_id, d_paths.root, comm_r, *cs]
        parts.append(PorepPartition(p, public, free, list(cs)))
    return sector, parts


def porep_witness(
    shape: CircuitShape, part: PorepPartition, z: np.ndarray | None = None
) -> tuple[list[int], np.ndarray]:
    """(public inputs as ints, full witness z as uint64[num_vars, 4] Montgomery). ``z`` may be
    a preallocated buffer (shared memory) to write into."""
    if shape.name != "porep" or shape.num_public != part.params.num_public:
        raise ValueError("this partition does not belong to this circuit (different shape)")
    z = fill_inputs(shape, part.public, part.free, z)
    witness_numba(shape, z)
    return list(part.public), z
