"""Filecoin's SDR graph bit for bit (storage-proofs-core drgraph.rs BucketGraph and
storage-proofs-porep stacked/vanilla/graph.rs StackedGraph): per node, 6 base parents from the
bucket-sampling DRG, then 8 expander parents from the Feistel permutation, in the order
Filecoin's parent cache stores them.

Rules kept exact:
- DRG: node 0 and 1 have all base parents 0. Node v >= 2 seeds ChaCha8 with the 28-byte graph
  seed then v (u32 LE); for each of 5 parents it draws a bucket ``next_u64 % ceil(log2(5v)) + 1``
  and a distance in it, and maps the metagraph parent back by ``// 5`` (a parent equal to v
  becomes v - 1). The immediate predecessor v - 1 is the first parent in V1_1 and the last in
  V1 (where the 5 drawn ones come first).
- Expander: parent i of v is ``permute(8 * nodes, 8 v + i) // 8`` under the Feistel keys; V1
  truncates the permuted value to u32 before the division, as Filecoin's legacy rule does.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numba import njit, prange

from engine.seal.chacha import chacha_block
from engine.seal.feistel import permute_nb, precompute
from engine.seal.registry import SealProof

_M32 = np.uint64(0xFFFFFFFF)


@njit(cache=True, inline="always")
def _ceil_log2(x: np.uint64) -> np.uint64:
    # ceil(log2(x)) for x >= 2: the bit length of x - 1 (what f64 log2().ceil() gives below 2^53).
    y = x - np.uint64(1)
    n = np.uint64(0)
    while y > np.uint64(0):
        y >>= np.uint64(1)
        n += np.uint64(1)
    return n


@njit(cache=True)
def _fill_parents(node: int, nodes: int, seed7: np.ndarray, fkeys: np.ndarray,
                  left_mask: np.uint64, right_mask: np.uint64, half_bits: np.uint64,
                  v1_1: bool, out: np.ndarray, key: np.ndarray, words: np.ndarray) -> None:
    """Write node's 14 parents into ``out`` (uint32[14]); ``key`` uint64[8] and ``words``
    uint64[32] are scratch."""
    five = np.uint64(5)
    two = np.uint64(2)
    if node < 2:
        for j in range(6):
            out[j] = 0
    else:
        v = np.uint64(node)
        for j in range(7):
            key[j] = seed7[j]
        key[7] = v
        chacha_block(key, 0, 8, words[:16])
        chacha_block(key, 1, 8, words[16:])
        metagraph_node = v * five
        n_buckets = _ceil_log2(metagraph_node)
        first = 1 if v1_1 else 0
        w = 0
        for j in range(5):
            r = words[w] | (words[w + 1] << np.uint64(32))
            bucket_index = (r % n_buckets) + np.uint64(1)
            largest = min(metagraph_node, np.uint64(1) << bucket_index)
            smallest = max(two, largest >> np.uint64(1))
            n_distances = largest - smallest + np.uint64(1)
            r = words[w + 2] | (words[w + 3] << np.uint64(32))
            w += 4
            distance = smallest + (r % n_distances)
            mapped = (metagraph_node - distance) // five
            out[first + j] = v - np.uint64(1) if mapped == v else mapped
        out[0 if v1_1 else 5] = v - np.uint64(1)
    n_exp = np.uint64(nodes) * np.uint64(8)
    base = np.uint64(node) * np.uint64(8)
    for i in range(8):
        t = permute_nb(n_exp, base + np.uint64(i), fkeys, left_mask, right_mask, half_bits)
        if v1_1:
            out[6 + i] = t // np.uint64(8)
        else:
            out[6 + i] = (t & _M32) // np.uint64(8)


@njit(cache=True, parallel=True)
def _range_parents(start: int, stop: int, nodes: int, seed7: np.ndarray, fkeys: np.ndarray,
                   left_mask: np.uint64, right_mask: np.uint64, half_bits: np.uint64,
                   v1_1: bool, out: np.ndarray) -> None:
    chunk = 4096
    n_chunks = (stop - start + chunk - 1) // chunk
    for c in prange(n_chunks):
        key = np.empty(8, dtype=np.uint64)
        words = np.empty(32, dtype=np.uint64)
        row = np.empty(14, dtype=np.uint32)
        end = min(stop, start + (c + 1) * chunk)
        for node in range(start + c * chunk, end):
            _fill_parents(node, nodes, seed7, fkeys, left_mask, right_mask, half_bits, v1_1,
                          row, key, words)
            for j in range(14):
                out[node, j] = row[j]


def _graph_args(proof: SealProof) -> tuple[np.ndarray, np.ndarray, np.uint64, np.uint64,
                                           np.uint64]:
    if proof.base_degree != 6 or proof.exp_degree != 8:
        raise ValueError(f"SDR graph degrees must be 6 and 8, not {proof.base_degree} and "
                         f"{proof.exp_degree}")
    if proof.nodes < 2 or proof.nodes > 0xFFFFFFFF:
        raise ValueError(f"SDR graph size must be 2..2^32-1 nodes, not {proof.nodes}")
    seed7 = np.frombuffer(proof.graph_seed, dtype="<u4").astype(np.uint64)
    fkeys = np.array(proof.feistel_keys, dtype=np.uint64)
    lm, rm, hb = precompute(proof.nodes * proof.exp_degree)
    return seed7, fkeys, np.uint64(lm), np.uint64(rm), np.uint64(hb)


PROGRESS_STEP = 1 << 18
"""Nodes per progress report of ``sdr_parents`` (a fraction of a second to a few seconds)."""


def sdr_parents(proof: SealProof,
                progress: Callable[[int, int], None] | None = None) -> np.ndarray:
    """Every node's parents, uint32[nodes, 14]: 6 base (DRG) parents then 8 expander parents,
    the rows of Filecoin's parent cache. ``progress(done, nodes)`` is called after each step of
    ``PROGRESS_STEP`` nodes; between steps an interrupt (KeyboardInterrupt) stops it cleanly."""
    seed7, fkeys, lm, rm, hb = _graph_args(proof)
    out = np.empty((proof.nodes, proof.degree), dtype=np.uint32)
    for start in range(0, proof.nodes, PROGRESS_STEP):
        stop = min(proof.nodes, start + PROGRESS_STEP)
        _range_parents(start, stop, proof.nodes, seed7, fkeys, lm, rm, hb, proof.v1_1, out)
        if progress is not None:
            progress(stop, proof.nodes)
    return out


def node_parents(proof: SealProof, node: int) -> list[int]:
    """One node's 14 parents computed alone (the verifier's path): 6 base then 8 expander."""
    if not 0 <= node < proof.nodes:
        raise ValueError(f"node {node} is outside the graph (0..{proof.nodes - 1})")
    seed7, fkeys, lm, rm, hb = _graph_args(proof)
    row = np.empty(proof.degree, dtype=np.uint32)
    _fill_parents(node, proof.nodes, seed7, fkeys, lm, rm, hb, proof.v1_1, row,
                  np.empty(8, dtype=np.uint64), np.empty(32, dtype=np.uint64))
    return [int(p) for p in row]
