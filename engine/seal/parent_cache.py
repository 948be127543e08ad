"""The SDR parent cache as Filecoin writes it (storage-proofs-porep stacked/vanilla/cache.rs):
one row per node of 14 u32 LE parents (6 base then 8 expander), nothing else in the file; its
name ``v28-sdr-parent-<hex>.cache`` and its SHA-256, which Filecoin checks against the digests
it publishes in parent_cache.json (held here as ``PUBLISHED``).
"""

from __future__ import annotations

import hashlib
import os
import struct
from pathlib import Path

import numpy as np

from engine.atomic import atomic_write
from engine.seal.graph import sdr_parents
from engine.seal.registry import SealProof

CACHE_VERSION = 28
"""storage-proofs-core's parameter cache VERSION, part of every cache file's name."""

TREE_HASHER = "poseidon_hasher"
"""The name of the hasher the sealing graph is typed over (tree_c / tree_r_last's Poseidon)."""

PUBLISHED: dict[str, tuple[int, str]] = {
    "v28-sdr-parent-21981246c370f9d76c7a77ab273d94bde0ceb4e938292334960bce05585dc117":
        (34359738368, "93deeac5e3052b6927467d4b2641bb782f05491de18d510147c93eeedd8672da"),
    "v28-sdr-parent-2aa9c77c3e58259481351cc4be2079cc71e1c9af39700866545c043bfa30fb42":
        (536870912, "3adcc092423aa76d6a7184016893406da44dd974b219a89cd3ece25e4e3018f5"),
    "v28-sdr-parent-3f0eef38bb48af1f48ad65e14eb85b4ebfc167cec18cd81764f6d998836c9899":
        (2048, "3da49221e2ed55371b86d0bf3d6526fcf128af61bed904f966428db1b531750d"),
    "v28-sdr-parent-4905486b7af19558ac3649bc6261411858b6add534438878c4ee3b29d8b9de0b":
        (68719476736, "2698b74eb2606b55b98d8b095e18b6320b47f46e00075956d48640ccd1641b03"),
    "v28-sdr-parent-494d91dc80f2df5272c4b9e129bc7ade9405225993af9fe34e6542a39a47554b":
        (2048, "840057702eea7652cf97e04306c30fe57174714d90de156a25eddd6075c25b97"),
    "v28-sdr-parent-5eed212119fd91aa6220a27f31a8966444a9381842bceb3a1ea61525bd47a5b5":
        (8388608, "03cd13565ded97c240a5f52e54295ad127bd0461b57904cb3a4d79b097bbecab"),
    "v28-sdr-parent-7ba215a1d2345774ab90b8cb1158d296e409d6068819d7b8c7baf0b25d63dc34":
        (536870912, "b5877d1963793efebc261fd8fde4dd6bc59e6b5c7abf52617a4ee023b8dc173a"),
    "v28-sdr-parent-8a99e8d6b6be7ab87a56b632e6739ff201c23ea14e99737c74690f0e265574d6":
        (68719476736, "2778a732ad46a7dc18e0564dfdf59fd321dcde74ab476fd6d3c4e6735d7cd89c"),
    "v28-sdr-parent-dcdabb0fbe4364bf0ac28b6a18c66de246409fa1a9020a00f33fb3e3053da6dc":
        (8388608, "a76604f2f59f2744c7151653bbb1d8596b6b57d295e6fa6c1f0c41d725b502ce"),
    "v28-sdr-parent-e1fa5d5b811ddbd118be3412c4a8c329156b8b8acc72632bca459455b5a05a13":
        (34359738368, "3c4f9841fcc75aed8c695800e58d08480629f25af3a2aefd81904181d75cc0b6"),
}
"""Filecoin's parent_cache.json: cache id -> (sector size, SHA-256 of the file, hex)."""


def graph_identifier(proof: SealProof) -> str:
    """The StackedGraph's parameter identifier string, as Filecoin formats it."""
    base = (f"drgraph::BucketGraph{{size: {proof.nodes}; degree: {proof.base_degree}; "
            f"hasher: {TREE_HASHER}}}")
    return f"stacked_graph::StackedGraph{{expansion_degree: {proof.exp_degree} base_graph: {base} }}"


def parent_cache_id(proof: SealProof) -> str:
    """The cache's file stem, ``v28-sdr-parent-`` and SHA-256 of (hasher name, graph
    identifier, Feistel keys u64 LE, entries u32 LE); the key of parent_cache.json."""
    h = hashlib.sha256()
    h.update(TREE_HASHER.encode())
    h.update(graph_identifier(proof).encode())
    h.update(struct.pack("<4Q", *proof.feistel_keys))
    h.update(struct.pack("<I", proof.nodes))
    return f"v{CACHE_VERSION}-sdr-parent-{h.hexdigest()}"


def parent_cache_name(proof: SealProof) -> str:
    """The cache's file name in Filecoin's parent cache folder."""
    return parent_cache_id(proof) + ".cache"


def published_digest(proof: SealProof) -> str | None:
    """The digest Filecoin publishes for this proof's cache, or None if it publishes none."""
    entry = PUBLISHED.get(parent_cache_id(proof))
    return None if entry is None else entry[1]


def cache_bytes(parents: np.ndarray) -> bytes:
    """The file's bytes: the parents rows as u32 little-endian, row after row."""
    if parents.ndim != 2 or parents.shape[1] != 14:
        raise ValueError(f"parents must be [nodes, 14], not {list(parents.shape)}")
    return np.ascontiguousarray(parents, dtype="<u4").tobytes()


def cache_digest(parents: np.ndarray) -> str:
    """SHA-256 (hex) of the cache file these parents make, as Filecoin computes it."""
    h = hashlib.sha256()
    h.update(np.ascontiguousarray(parents, dtype="<u4").data.cast("B"))
    return h.hexdigest()


def write_parent_cache(proof: SealProof, folder: str | os.PathLike[str],
                       parents: np.ndarray | None = None) -> tuple[Path, str]:
    """Write the proof's parent cache into ``folder`` under Filecoin's name (atomically) and
    return (path, digest). Where Filecoin publishes a digest, a cache that does not match it
    is refused (ValueError) and nothing is written."""
    if parents is None:
        parents = sdr_parents(proof)
    if parents.shape != (proof.nodes, proof.degree):
        raise ValueError(f"parents are {list(parents.shape)}, the {proof.name} graph is "
                         f"[{proof.nodes}, {proof.degree}]")
    digest = cache_digest(parents)
    expected = published_digest(proof)
    if expected is not None and digest != expected:
        raise ValueError(f"{proof.name} parent cache digest {digest} is not Filecoin's {expected}")
    path = Path(folder) / parent_cache_name(proof)
    with atomic_write(path, "wb") as f:
        f.write(np.ascontiguousarray(parents, dtype="<u4").data.cast("B"))
    return path, digest


def read_parent_cache(proof: SealProof, path: str | os.PathLike[str],
                      verify: bool = True) -> np.ndarray:
    """Memory-map a parent cache file as uint32[nodes, 14]; its size must be the graph's and,
    with ``verify``, its digest Filecoin's (where one is published). ValueError otherwise."""
    size = Path(path).stat().st_size
    want = proof.nodes * proof.degree * 4
    if size != want:
        raise ValueError(f"{path}: {size} bytes, a {proof.name} parent cache has {want}")
    parents = np.memmap(path, dtype="<u4", mode="r", shape=(proof.nodes, proof.degree))
    if verify:
        expected = published_digest(proof)
        if expected is not None and cache_digest(parents) != expected:
            raise ValueError(f"{path}: digest is not Filecoin's {proof.name} digest {expected}")
    return parents
