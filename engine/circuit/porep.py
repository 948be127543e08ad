"""The ``porep`` circuit family: one partition of a PoRep proof as Filecoin's StackedCircuit
states it, built from gadget templates.

Public inputs (engine/circuit/statement.py derives them from the sector's commitments and the
seeds): replica_id, comm_d, comm_r, then per challenge its node index c and the positions of its
base and expander parents. For each challenge the partition proves:
- the data node's inclusion in tree_d (SHA-256 binary tree, root comm_d);
- each parent's column (its labels on every layer) opened against comm_c: the column hash
  Poseidon_L and a tree_c path whose position bits are the unpacked public parent position;
- the label of c on each layer ℓ = 1..L recomputed from the opened columns (engine/circuit/
  sector.py has the formula: base parents' labels on ℓ, expander parents' on ℓ − 1, cycled to
  37 entries);
- the encoding: replica node = data node + key, the key being the last layer's label;
- the replica node's inclusion in tree_r_last (Poseidon, arity 8 then 2, root comm_r_last);
- the column hash of c's labels and its inclusion in tree_c;
- and once: comm_r = Poseidon_2(comm_c, comm_r_last).
The challenged paths' bits are the bits of the public index c, unpacked in the circuit, so every
opened position is bound to a public input. In the Poseidon-only mode (``sha=False``: ``tiny``)
tree_d is a Poseidon tree and a label is Poseidon_11 of replica_id, ℓ·2^64 + c and 9 parent
entries, so replica_id and comm_d stay bound at about 2^11 constraints.

The shape, presets and seeds are in params.py, the graph in graph.py, the synthetic sectors in
sector.py; this module re-exports what callers use.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

import numpy as np

from engine.circuit.bits import unpack
from engine.circuit.builder import CircuitBuilder, CircuitShape
from engine.circuit.cache import cached_build
from engine.circuit.merkle import (
    eq_template,
    poseidon_level_template,
    poseidon_tree_arities,
    sha_level_template,
)
from engine.circuit.params import (  # noqa: F401  (re-exported)
    LABEL_PARENTS,
    LAYER_BITS,
    POSEIDON_LABEL_ENTRIES,
    PRESETS,
    PorepParams,
    default_graph_seed,
    job_challenge_seed,
    preset_params,
    preset_partitions,
)
from engine.circuit.poseidon import poseidon_gadget
from engine.circuit.sector import (  # noqa: F401  (re-exported)
    FULL_TREE_LOG2,
    PorepPartition,
    Sector,
    expand_parents,
    generate_partitions,
    label_message,
    sha_label,
)
from engine.circuit.sha256 import digest_to_field, field_to_stream, sha256_stream
from engine.circuit.statement import PorepStatement  # noqa: F401  (re-exported)
from engine.circuit.template import ONE, OP_LIN, Bit, Template, Tracer, lc_sum, var
from engine.circuit.witness import fill_inputs, witness_numba
from kernels.textfmt import fmt_bytes

REPLICA_BITS = 254  # replica ids and labels are truncated digests, below 2^254

# ---------------------------------------------------------------------------- templates


def challenge_template(log2_nodes: int) -> Template:
    """Input: a node index. Outputs: its log2_nodes bits (binds index < 2^log2_nodes)."""
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


def replica_bits_template() -> Template:
    """Input: replica_id. Outputs: its 254 LE bits, unpacked once for every label."""
    tr = Tracer("replica-bits", 1)
    for b in unpack(tr, var(tr.input(0)), REPLICA_BITS):
        tr.output(b.slot)
    return tr.finish()


def label_template(log2_nodes: int, parents: int) -> Template:
    """Inputs: 254 replica_id bits, LAYER_BITS layer bits, log2_nodes node bits, then the
    ``parents`` parent labels (base, then expander). Output: the label, the truncated SHA-256 of
    the label message with the parents cycled to 37 entries."""
    n_in = REPLICA_BITS + LAYER_BITS + log2_nodes + parents
    tr = Tracer(f"label{parents}", n_in)
    rep = [Bit(tr.input(i)) for i in range(REPLICA_BITS)]
    layer = [Bit(tr.input(REPLICA_BITS + i)) for i in range(LAYER_BITS)]
    node = [Bit(tr.input(REPLICA_BITS + LAYER_BITS + i)) for i in range(log2_nodes)]
    par = [tr.input(REPLICA_BITS + LAYER_BITS + log2_nodes + j) for j in range(parents)]
    zero = Bit.const(0)
    stream = field_to_stream(rep)
    layer32 = layer + [zero] * (32 - LAYER_BITS)
    stream += [layer32[31 - i] for i in range(32)]  # u32 big-endian
    node64 = node + [zero] * (64 - log2_nodes)
    stream += [node64[63 - i] for i in range(64)]  # u64 big-endian
    stream += [zero] * (20 * 8)
    par_streams = [field_to_stream(unpack(tr, var(x), REPLICA_BITS)) for x in par]
    for s in expand_parents(par_streams):
        stream += s
    tr.output(digest_to_field(tr, sha256_stream(tr, stream)))
    return tr.finish()


def poseidon_label_template() -> Template:
    """Inputs: replica_id, the node index, LAYER_BITS layer bits, 9 parent entries (already
    cycled, or zero wires). Output: Poseidon_11(replica_id, layer·2^64 + node, entries), the
    Poseidon-only mode's label."""
    tr = Tracer("poseidon-label", 2 + LAYER_BITS + POSEIDON_LABEL_ENTRIES)
    tag = tr.alloc()
    lc = lc_sum((1, var(tr.input(1))), *((1 << (64 + i), var(tr.input(2 + i))) for i in range(LAYER_BITS)))
    tr.enforce(lc, var(ONE), var(tag))
    tr.emit(OP_LIN, tag, tr.lc_args(lc))
    entries = [tr.input(2 + LAYER_BITS + j) for j in range(POSEIDON_LABEL_ENTRIES)]
    tr.output(poseidon_gadget(tr, [tr.input(0), tag, *entries]))
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


def _poseidon_path(cb: CircuitBuilder, leaf: np.ndarray, bits: list[np.ndarray], name: str, shape: tuple,
                   log2_nodes: int, tmpl: dict[int, Template]) -> np.ndarray:
    """Place a Poseidon Merkle path per leaf (flat arrays); siblings are free regions
    ``{name}_sib{level}`` of shape ``shape + (arity − 1,)``."""
    cur = leaf
    pos = 0
    for lvl, a in enumerate(poseidon_tree_arities(log2_nodes)):
        m = a.bit_length() - 1
        sib = cb.free(f"{name}_sib{lvl}", (*shape, a - 1)).reshape(-1, a - 1)
        inputs = np.concatenate([cur[:, None], sib, np.stack(bits[pos : pos + m], axis=1)], axis=1)
        (cur,) = cb.place(tmpl[a], inputs)
        pos += m
    return cur


def _place(p: PorepParams, say: Callable[[str], None] = lambda _msg: None) -> CircuitBuilder:
    """Every placement of the partition circuit (not yet compiled into matrices)."""
    k, L, n, P = p.challenges, p.layers, p.log2_nodes, p.num_parents
    say(f"tracing the porep gadgets (k={k}, L={L}, 2^{n} nodes, {p.base_parents} + {p.exp_parents} parents)")
    cb = CircuitBuilder("porep", p.num_public)
    replica_id, comm_d, comm_r = cb.public(0), cb.public(1), cb.public(2)
    ipc = p.inputs_per_challenge
    chal = np.array([cb.public(3 + i * ipc) for i in range(k)], np.int64)
    eq = eq_template()
    ct = challenge_template(n)
    bits = cb.place(ct, chal[:, None])  # n arrays of (k,)
    data = cb.free("data", k)
    comm_c = cb.free("comm_c", 1)[0]
    comm_r_last = cb.free("comm_r_last", 1)[0]
    tmpl = {a: poseidon_level_template(a) for a in set(poseidon_tree_arities(n))}
    col = column_template(L)

    if P:  # open every parent's column against comm_c at its public position
        pos = np.array([[cb.public(3 + i * ipc + 1 + j) for j in range(P)] for i in range(k)], np.int64)
        pbits = cb.place(ct, pos.reshape(-1, 1))  # n arrays of (k·P,)
        pcols = cb.free("parent_cols", (k, P, L))
        (pcol_hash,) = cb.place(col, pcols.reshape(k * P, L))
        root_p = _poseidon_path(cb, pcol_hash, pbits, "pc", (k, P), n, tmpl)
        cb.place(eq, np.stack([root_p, np.full(k * P, comm_c)], axis=1))

    (zero,) = cb.place(zero_template(), np.zeros((1, 0), np.int64))
    zero_var = int(zero[0])
    labels = []

    def parents_of(layer: int) -> np.ndarray:
        """(k, m) variables of the parent labels a layer's label hashes (base, then expander)."""
        if not P:
            return np.zeros((k, 0), np.int64)
        par = pcols[:, : p.base_parents, layer - 1]
        if layer > 1 and p.exp_parents:
            par = np.concatenate([par, pcols[:, p.base_parents :, layer - 2]], axis=1)
        return par

    if p.sha:
        say(f"tracing the labelling gadget ({LABEL_PARENTS} parent entries)")
        rbits = np.concatenate(cb.place(replica_bits_template(), np.array([[replica_id]])))  # (254,)
        first = label_template(n, p.base_parents)
        later = label_template(n, P) if p.exp_parents else first
        for layer in range(1, L + 1):
            lbits = [ONE if (layer >> i) & 1 else zero_var for i in range(LAYER_BITS)]
            inputs = np.concatenate(
                [np.tile(rbits, (k, 1)), np.tile(np.array(lbits, np.int64), (k, 1)),
                 np.stack(bits, axis=1), parents_of(layer)], axis=1)
            (lab,) = cb.place(first if layer == 1 else later, inputs)
            labels.append(lab)
        say("tracing the SHA-256 Merkle level")
        st = sha_level_template()
        cur = data
        for lvl in range(n):
            sib = cb.free(f"d_sib{lvl}", k)
            (cur,) = cb.place(st, np.stack([cur, sib, bits[lvl]], axis=1))
        root_d = cur
    else:
        plt = poseidon_label_template()
        for layer in range(1, L + 1):
            lbits = [ONE if (layer >> i) & 1 else zero_var for i in range(LAYER_BITS)]
            par = parents_of(layer)
            entries = (np.stack([par[:, j % par.shape[1]] for j in range(POSEIDON_LABEL_ENTRIES)], axis=1)
                       if par.shape[1] else np.full((k, POSEIDON_LABEL_ENTRIES), zero_var))
            inputs = np.concatenate([np.full((k, 1), replica_id), chal[:, None],
                                     np.tile(np.array(lbits, np.int64), (k, 1)), entries], axis=1)
            (lab,) = cb.place(plt, inputs)
            labels.append(lab)
        root_d = _poseidon_path(cb, data, bits, "d", (k,), n, tmpl)
    cb.place(eq, np.stack([root_d, np.full(k, comm_d)], axis=1))
    labels_arr = np.stack(labels, axis=1)  # (k, L)
    cb.name_region("labels", labels_arr)

    (replica,) = cb.place(encode_template(), np.stack([data, labels_arr[:, L - 1]], axis=1))
    cb.name_region("replica", replica)
    root_r = _poseidon_path(cb, replica, bits, "r", (k,), n, tmpl)
    cb.place(eq, np.stack([root_r, np.full(k, comm_r_last)], axis=1))
    (column,) = cb.place(col, labels_arr)
    root_c = _poseidon_path(cb, column, bits, "c", (k,), n, tmpl)
    cb.place(eq, np.stack([root_c, np.full(k, comm_c)], axis=1))
    cb.place(comm_r_template(), np.array([[comm_c, comm_r_last, comm_r]], np.int64))
    return cb


def _build(p: PorepParams, say: Callable[[str], None] = lambda _msg: None) -> CircuitShape:
    cb = _place(p, say)
    say(f"assembling the matrices (about {fmt_bytes(cb.matrix_bytes())})")
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


def count_porep(p: PorepParams | str) -> tuple[int, dict[str, int]]:
    """(constraints, constraints per template name) of the partition circuit, input
    constraints included, from the placements alone: no matrices are assembled, so this counts
    sealtop-32g (about 46 GB built) in seconds of tracing."""
    if isinstance(p, str):
        p = preset_params(p)
    p.validate()
    cb = _place(p)
    per: Counter[str] = Counter()
    for t, count in cb.instances():
        per[t.name] += count * t.n_rows
    per["public inputs (x·0 = 0)"] = 1 + cb.num_public
    return sum(per.values()), dict(per)


# ---------------------------------------------------------------------------- witnesses


def porep_witness(
    shape: CircuitShape, part: PorepPartition, z: np.ndarray | None = None,
    parallel: bool | None = None, known: np.ndarray | None = None,
) -> tuple[list[int], np.ndarray]:
    """(public inputs as ints, full witness z as uint64[num_vars, 4] Montgomery). ``z`` may be
    a preallocated buffer (shared memory) to write into; ``parallel`` and ``known`` as for
    :func:`engine.circuit.witness.witness_numba`."""
    if shape.name != "porep" or shape.num_public != part.params.num_public:
        raise ValueError("this partition does not belong to this circuit (different shape)")
    z = fill_inputs(shape, part.public, part.free, z)
    witness_numba(shape, z, parallel, known=known)
    return list(part.public), z
