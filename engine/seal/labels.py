"""SDR labelling: the replica id, the labels of every layer, the encoding of the last layer
with the data, and the column hashes that tree_c commits to.

The rules (storage-proofs-porep's ``create_label`` and ``generate_replica_id``):
- replica_id = SHA-256(prover_id || sector_id as u64 big-endian || ticket || comm_d ||
  porep_seed), truncated to a field element.
- The label of node v in layer L (layers count from 1) is SHA-256 of replica_id (32 bytes),
  then 32 bytes holding L as u32 big-endian, v as u64 big-endian and 20 zero bytes, then, for
  v > 0, 37 parent labels, truncated. Layer 1 hashes its 6 base (DRG) parents, read from layer 1
  itself, as p0..p5 six times then p0. Later layers hash the 6 base parents from the same layer
  and the 8 expander parents from the layer below, as the 14 twice then the first 9. Node 0
  hashes no parents. Since every base parent of v is below v, a layer is sequential.
- The replica is the last layer's labels added to the data, node by node, in Fr.
- Column v is the labels of node v in every layer; its hash is Poseidon with arity = layers.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Callable, Sequence

import numpy as np
from numba import njit, prange, uint32

from engine.seal.hashing import (
    NODE_BYTES,
    R_LIMBS,
    SHA256_IV,
    canonical_limbs,
    compress,
    mont_to_nodes,
    nodes_to_mont,
    poseidon_bytes,
    poseidon_mont_groups,
    store_digest,
)
from engine.seal.registry import BASE_DEGREE, EXP_DEGREE, SealProof

LABEL_PARENTS = 37
"""Parent labels hashed into every label of a node other than 0."""

_LABEL_BITS = (64 + LABEL_PARENTS * NODE_BYTES) * 8  # the label message's length in bits
_CHUNK_NODES = 1 << 18  # nodes labelled per numba call: progress and Ctrl-C between calls

LayerProgress = Callable[[int, int, int], None]
"""Called with (layer, nodes done in it, nodes) while labels are computed."""

def _bytes32(name: str, value: bytes) -> bytes:
    if not isinstance(value, (bytes, bytearray)) or len(value) != 32:
        raise ValueError(f"{name} must be 32 bytes")
    return bytes(value)


def _trunc(digest: bytes) -> bytes:
    return digest[:31] + bytes([digest[31] & 0x3F])


def replica_id(prover_id: bytes, sector_id: int, ticket: bytes, comm_d: bytes, porep_seed: bytes) -> bytes:
    """The replica id of a sector: the seed of all its labels (32 bytes, a field element)."""
    if not 0 <= sector_id < 1 << 64:
        raise ValueError("sector_id must fit in a u64")
    msg = (
        _bytes32("prover_id", prover_id)
        + struct.pack(">Q", sector_id)
        + _bytes32("ticket", ticket)
        + _bytes32("comm_d", comm_d)
        + _bytes32("porep_seed", porep_seed)
    )
    return _trunc(hashlib.sha256(msg).digest())


def label_input(replica: bytes, layer: int, node: int, parent_labels: Sequence[bytes]) -> bytes:
    """The exact bytes hashed into the label of ``node`` in ``layer``: parent_labels are the
    node's distinct parents' labels in the parent cache's order (6 base for layer 1; 6 base then
    8 expander for later layers); node 0 hashes none, so its parent_labels are ignored."""
    _bytes32("replica_id", replica)
    if layer < 1 or layer >= 1 << 32 or not 0 <= node < 1 << 64:
        raise ValueError(f"no label at layer {layer}, node {node}")
    head = replica + struct.pack(">IQ", layer, node) + bytes(20)
    if node == 0:
        return head
    want = BASE_DEGREE if layer == 1 else BASE_DEGREE + EXP_DEGREE
    if len(parent_labels) != want or any(len(p) != NODE_BYTES for p in parent_labels):
        raise ValueError(f"a layer-{layer} label takes {want} parent labels of 32 bytes")
    return head + b"".join(parent_labels[i % want] for i in range(LABEL_PARENTS))


def label_node(replica: bytes, layer: int, node: int, parent_labels: Sequence[bytes]) -> bytes:
    """The label of one node (the verifier's single label)."""
    return _trunc(hashlib.sha256(label_input(replica, layer, node, parent_labels)).digest())


@njit(cache=True, inline="always")
def _load_node(w, at, arr, row):
    for k in range(8):
        j = 4 * k
        w[at + k] = uint32(
            (uint32(arr[row, j]) << uint32(24))
            | (uint32(arr[row, j + 1]) << uint32(16))
            | (uint32(arr[row, j + 2]) << uint32(8))
            | uint32(arr[row, j + 3])
        )


@njit(cache=True)
def _label_range(rid, layer, parents, cur, prev, start, stop):
    """Labels of nodes [start, stop) of ``layer`` into ``cur`` (uint8[nodes, 32]); ``prev`` is
    the layer below (unused in layer 1); ``rid`` the replica id as 8 big-endian words."""
    w = np.empty(64, np.uint32)
    st = np.empty(8, np.uint32)
    deg = 6 if layer == 1 else 14
    for v in range(start, stop):
        st[:] = SHA256_IV
        w[0:8] = rid
        w[8] = uint32(layer)
        w[9] = uint32(np.uint64(v) >> np.uint64(32))
        w[10] = uint32(np.uint64(v) & np.uint64(0xFFFFFFFF))
        w[11:16] = 0
        compress(st, w)
        if v == 0:
            w[0] = uint32(0x80000000)
            w[1:15] = 0
            w[15] = uint32(512)
            compress(st, w)
        else:
            for i in range(0, LABEL_PARENTS - 1, 2):
                for h in range(2):
                    q = (i + h) % deg
                    if q < 6:
                        _load_node(w, 8 * h, cur, parents[v, q])
                    else:
                        _load_node(w, 8 * h, prev, parents[v, q])
                compress(st, w)
            q = (LABEL_PARENTS - 1) % deg
            if q < 6:
                _load_node(w, 0, cur, parents[v, q])
            else:
                _load_node(w, 0, prev, parents[v, q])
            w[8] = uint32(0x80000000)
            w[9:15] = 0
            w[15] = uint32(_LABEL_BITS)
            compress(st, w)
        store_digest(st, cur[v], 0, True)


def _check_parents(proof: SealProof, parents: np.ndarray) -> np.ndarray:
    p = np.ascontiguousarray(parents, np.uint32)
    want = (proof.nodes, proof.base_degree + proof.exp_degree)
    if p.shape != want:
        raise ValueError(f"parents for {proof.name} must be uint32{list(want)}, got shape {p.shape}")
    if proof.base_degree != BASE_DEGREE or proof.exp_degree != EXP_DEGREE:
        raise ValueError(f"labels are defined for degrees {BASE_DEGREE} + {EXP_DEGREE}")
    if p.size and int(p.max()) >= proof.nodes:
        raise ValueError("a parent index is outside the sector")
    below = p[1:, :BASE_DEGREE] < np.arange(1, proof.nodes, dtype=np.uint32)[:, None]
    if not below.all():
        raise ValueError("a base parent is not below its node (a layer is computed in order)")
    return p


def label_layers(
    proof: SealProof, replica: bytes, parents: np.ndarray, progress: LayerProgress | None = None
) -> np.ndarray:
    """Every layer's labels, uint8[layers, nodes, 32] (layer L at index L - 1), from the replica
    id and the SDR parents uint32[nodes, base + expander degree] in the parent cache's order."""
    p = _check_parents(proof, parents)
    rid = np.frombuffer(_bytes32("replica_id", replica), ">u4").astype(np.uint32)
    out = np.empty((proof.layers, proof.nodes, NODE_BYTES), np.uint8)
    for layer in range(1, proof.layers + 1):
        cur = out[layer - 1]
        prev = out[layer - 2] if layer > 1 else cur
        for s in range(0, proof.nodes, _CHUNK_NODES):
            e = min(s + _CHUNK_NODES, proof.nodes)
            _label_range(rid, layer, p, cur, prev, s, e)
            if progress is not None:
                progress(layer, e, proof.nodes)
    return out


@njit(cache=True, parallel=True)
def _field_add(a, b, out, sub):
    """out = a + b (or a - b with ``sub``) mod r, rows of canonical LE u64[4]."""
    for i in prange(a.shape[0]):
        x0, x1, x2, x3 = a[i, 0], a[i, 1], a[i, 2], a[i, 3]
        y0, y1, y2, y3 = b[i, 0], b[i, 1], b[i, 2], b[i, 3]
        if sub:  # a - b = a + (r - b), with r - 0 taken as 0
            if y0 | y1 | y2 | y3:
                c = np.uint64(0)
                t0 = R_LIMBS[0] - y0
                c = np.uint64(1) if R_LIMBS[0] < y0 else np.uint64(0)
                t1 = R_LIMBS[1] - y1 - c
                c = np.uint64(1) if (R_LIMBS[1] < y1) or (R_LIMBS[1] == y1 and c) else np.uint64(0)
                t2 = R_LIMBS[2] - y2 - c
                c = np.uint64(1) if (R_LIMBS[2] < y2) or (R_LIMBS[2] == y2 and c) else np.uint64(0)
                t3 = R_LIMBS[3] - y3 - c
                y0, y1, y2, y3 = t0, t1, t2, t3
        # s = x + y (both < r < 2^255, so no carry out of limb 3)
        s0 = x0 + y0
        c = np.uint64(1) if s0 < x0 else np.uint64(0)
        s1 = x1 + y1 + c
        c = np.uint64(1) if (s1 < x1) or (s1 == x1 and c) else np.uint64(0)
        s2 = x2 + y2 + c
        c = np.uint64(1) if (s2 < x2) or (s2 == x2 and c) else np.uint64(0)
        s3 = x3 + y3 + c
        ge = s3 > R_LIMBS[3] or (
            s3 == R_LIMBS[3] and (s2 > R_LIMBS[2] or (s2 == R_LIMBS[2] and (s1 > R_LIMBS[1] or (s1 == R_LIMBS[1] and s0 >= R_LIMBS[0]))))
        )
        if ge:
            b0 = np.uint64(1) if s0 < R_LIMBS[0] else np.uint64(0)
            s0 = s0 - R_LIMBS[0]
            t = s1 - R_LIMBS[1] - b0
            b1 = np.uint64(1) if (s1 < R_LIMBS[1]) or (s1 == R_LIMBS[1] and b0) else np.uint64(0)
            s1 = t
            t = s2 - R_LIMBS[2] - b1
            b2 = np.uint64(1) if (s2 < R_LIMBS[2]) or (s2 == R_LIMBS[2] and b1) else np.uint64(0)
            s2 = t
            s3 = s3 - R_LIMBS[3] - b2
        out[i, 0], out[i, 1], out[i, 2], out[i, 3] = s0, s1, s2, s3


def _limbs(name: str, nodes: np.ndarray) -> np.ndarray:
    try:
        return canonical_limbs(nodes)
    except ValueError as e:
        raise ValueError(f"{name}: {e}") from None


def _combine(key: np.ndarray, value: np.ndarray, sub: bool) -> np.ndarray:
    k = _limbs("key", key)
    v = _limbs("data", value)
    if k.shape != v.shape:
        raise ValueError(f"key and data differ in shape: {k.shape} vs {v.shape}")
    out = np.empty_like(k)
    _field_add(v, k, out, sub)
    return out.astype("<u8").view(np.uint8).reshape(-1, NODE_BYTES)


def encode(key: np.ndarray, data: np.ndarray) -> np.ndarray:
    """The replica: each data node plus its key (the last layer's label) in Fr."""
    return _combine(key, data, sub=False)


def decode(key: np.ndarray, replica: np.ndarray) -> np.ndarray:
    """The data back from the replica: each replica node minus its key in Fr."""
    return _combine(key, replica, sub=True)


def column_hashes_mont(labels: np.ndarray) -> np.ndarray:
    """Every column's hash in Fr storage form uint64[nodes, 4], from uint8[layers, nodes, 32]."""
    lab = np.ascontiguousarray(labels, np.uint8)
    if lab.ndim != 3 or lab.shape[2] != NODE_BYTES:
        raise ValueError(f"labels must be uint8[layers, nodes, 32], got shape {lab.shape}")
    layers, nodes = lab.shape[0], lab.shape[1]
    out = np.empty((nodes, 4), np.uint64)
    step = 1 << 16
    for s in range(0, nodes, step):
        e = min(s + step, nodes)
        cols = np.ascontiguousarray(lab[:, s:e].transpose(1, 0, 2)).reshape(-1, NODE_BYTES)
        out[s:e] = poseidon_mont_groups(nodes_to_mont(cols), layers)
    return out


def column_hashes(labels: np.ndarray) -> np.ndarray:
    """Every column's hash, uint8[nodes, 32]: the leaves of tree_c."""
    return mont_to_nodes(column_hashes_mont(labels))


def column_hash(column: Sequence[bytes]) -> bytes:
    """The hash of one column (its labels, layer 1 first): Poseidon of arity = layers."""
    return poseidon_bytes(list(column))
