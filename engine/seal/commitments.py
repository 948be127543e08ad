"""A sector's commitments: comm_d (the data), comm_c (the columns), comm_r_last (the replica)
and comm_r, the one the chain holds.

- comm_d is tree_d's root: the binary SHA-256 tree over the Fr32-padded data. For an all-zero
  sector every level is one repeated node, so its comm_d is the zero node hashed with itself once
  per level (filecoin-proofs' ``zero_padding``), which :func:`zero_comm_d` computes in
  log2(nodes) hashes, for any size up to 64 GiB.
- comm_c is tree_c's root (a Poseidon tree of the sector's shape over the column hashes);
  comm_r_last is tree_r_last's root (same shape, over the replica).
- comm_r = Poseidon(comm_c, comm_r_last), arity 2 (``hash2`` in StackedDrg's replicate).
"""

from __future__ import annotations

import hashlib

import numpy as np

from engine.seal.hashing import NODE_BYTES, mont_to_nodes, poseidon_bytes
from engine.seal.labels import column_hashes_mont
from engine.seal.trees import Progress, poseidon_tree, tree_d


def comm_d(nodes: np.ndarray, progress: Progress | None = None) -> bytes:
    """comm_d of a sector's Fr32-padded nodes uint8[nodes, 32]."""
    return tree_d(nodes, progress).root


def zero_comm_d(sector_size: int) -> bytes:
    """comm_d of an all-zero sector of ``sector_size`` padded bytes (a power of two >= 64)."""
    nodes = sector_size // NODE_BYTES
    if sector_size % NODE_BYTES or nodes < 2 or nodes & (nodes - 1):
        raise ValueError(f"a sector is a power-of-two number of 32-byte nodes, not {sector_size} bytes")
    node = bytes(NODE_BYTES)
    for _ in range(nodes.bit_length() - 1):
        d = bytearray(hashlib.sha256(node + node).digest())
        d[31] &= 0x3F
        node = bytes(d)
    return node


def comm_c(labels: np.ndarray, shape: tuple[int, int, int], progress: Progress | None = None) -> bytes:
    """comm_c: tree_c's root over the column hashes of labels uint8[layers, nodes, 32]."""
    mont = column_hashes_mont(labels)
    return poseidon_tree(mont_to_nodes(mont), shape, progress, leaves_mont=mont).root


def comm_r_last(replica: np.ndarray, shape: tuple[int, int, int], progress: Progress | None = None) -> bytes:
    """comm_r_last: tree_r_last's root over the replica uint8[nodes, 32]."""
    return poseidon_tree(replica, shape, progress).root


def comm_r(comm_c_root: bytes, comm_r_last_root: bytes) -> bytes:
    """comm_r = Poseidon(comm_c, comm_r_last)."""
    return poseidon_bytes([comm_c_root, comm_r_last_root])
