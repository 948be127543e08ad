"""The synthetic porep presets are built with Filecoin's rules where their shape allows: a shape
of Filecoin's degrees over a registered proof's node count has that proof's SDR graph (checked
against Filecoin's published parent-cache digest at 2 KiB), and every preset's challenges follow
the interactive PoRep rule (recomputed here with hashlib)."""

from __future__ import annotations

import hashlib
import os
import struct

import numpy as np
import pytest

from engine.circuit.graph import ParentGraph
from engine.circuit.params import default_graph_seed, preset_params
from engine.circuit.statement import derive_challenges
from engine.seal import parent_cache as pc
from engine.seal.graph import node_parents
from engine.seal.registry import seal_proof


def test_medium_graph_is_filecoins_2kib_graph() -> None:
    p = preset_params("medium")
    proof = seal_proof("StackedDrg2KiBV1_1")
    assert default_graph_seed(p) == proof.porep_id
    g = ParentGraph(default_graph_seed(p), p.num_nodes, p.base_parents, p.exp_parents)
    rows = np.array([g.parents(v) for v in range(p.num_nodes)], dtype=np.uint32)
    # the digest Filecoin publishes for its 2 KiB V1_1 parent cache (parent_cache.json)
    assert pc.cache_digest(rows) == pc.PUBLISHED[pc.parent_cache_id(proof)][1]
    v = int.from_bytes(os.urandom(2), "little") % p.num_nodes
    assert g.base_parents(v) + g.exp_parents(v) == g.parents(v)


def test_porep_32g_graph_is_filecoins_32gib_graph() -> None:
    p = preset_params("sealtop-32g")
    proof = seal_proof("StackedDrg32GiBV1_1")
    assert default_graph_seed(p) == proof.porep_id
    g = ParentGraph(default_graph_seed(p), p.num_nodes, p.base_parents, p.exp_parents)
    for _ in range(5):
        v = 2 + int.from_bytes(os.urandom(4), "little") % (p.num_nodes - 2)
        got = g.parents(v)
        assert got == node_parents(proof, v)
        assert got[0] == v - 1 and all(u < v for u in got[:6])


def test_other_shapes_keep_a_graph_of_their_own() -> None:
    p = preset_params("large")  # 512 nodes: no registered proof has that many
    assert default_graph_seed(p) not in {seal_proof(n).porep_id for n in
                                         ("StackedDrg2KiBV1_1", "StackedDrg32GiBV1_1")}
    assert ParentGraph(default_graph_seed(p), p.num_nodes, 6, 8).sdr_shape is not None
    assert ParentGraph(default_graph_seed(p), p.num_nodes, 2, 3).sdr_shape is None


@pytest.mark.parametrize("preset", ["tiny", "medium", "large", "sealtop-32g"])
def test_challenges_follow_the_interactive_rule(preset: str) -> None:
    p = preset_params(preset)
    replica_id = int.from_bytes(os.urandom(32), "little") % (1 << 254)
    seed = os.urandom(32)
    k = int.from_bytes(os.urandom(1), "little") % 10
    want = []
    for i in range(p.challenges):
        h = hashlib.sha256(replica_id.to_bytes(32, "little") + seed
                           + struct.pack("<I", p.challenges * k + i)).digest()
        want.append(int.from_bytes(h, "little") % (p.num_nodes - 1) + 1)
    assert derive_challenges(p, replica_id, seed, k) == want
    assert derive_challenges(p, replica_id, os.urandom(32), k) != want or p.num_nodes <= 64
