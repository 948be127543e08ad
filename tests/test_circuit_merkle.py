"""Merkle inclusion gadgets (Poseidon arity 8 and 2, SHA-256 binary): roots computed in the
circuit equal roots computed outside it, with path bits taken from a public challenge index."""

from __future__ import annotations

import hashlib
import random

import numpy as np

from engine.circuit.builder import CircuitBuilder
from engine.circuit.merkle import (
    eq_template,
    poseidon_level_template,
    poseidon_paths,
    poseidon_tree_arities,
    sha_level_template,
    sha_paths,
)
from engine.circuit.porep import challenge_template
from engine.circuit.poseidon_params import poseidon_hash
from engine.circuit.witness import fill_inputs, witness_numba
from engine.synthesis import is_satisfied
from kernels.cpu.convert import from_mont_fr


def _root_poseidon(leaves: list[int], arities: list[int]) -> int:
    level = leaves
    for a in arities:
        level = [poseidon_hash(level[i : i + a]) for i in range(0, len(level), a)]
    return level[0]


def _root_sha(leaves: list[int]) -> int:
    level = leaves
    while len(level) > 1:
        nxt = []
        for i in range(0, len(level), 2):
            d = bytearray(hashlib.sha256(level[i].to_bytes(32, "little") + level[i + 1].to_bytes(32, "little")).digest())
            d[31] &= 0x3F
            nxt.append(int.from_bytes(d, "little"))
        level = nxt
    return level[0]


def _circuit(log2n: int, k: int, sha: bool):
    """k challenges, one path each; public inputs: root, then challenges."""
    cb = CircuitBuilder("merkle", 1 + k)
    chal = np.array([cb.public(1 + i) for i in range(k)])
    bits = cb.place(challenge_template(log2n), chal[:, None])
    cur = leaf = cb.free("leaf", k)
    if sha:
        t = sha_level_template()
        for lvl in range(log2n):
            sib = cb.free(f"sib{lvl}", k)
            (cur,) = cb.place(t, np.stack([cur, sib, bits[lvl]], axis=1))
    else:
        tmpl = {a: poseidon_level_template(a) for a in (2, 8)}
        pos = 0
        for lvl, a in enumerate(poseidon_tree_arities(log2n)):
            m = a.bit_length() - 1
            sib = cb.free(f"sib{lvl}", (k, a - 1))
            ins = np.concatenate([cur[:, None], sib, np.stack(bits[pos : pos + m], axis=1)], axis=1)
            (cur,) = cb.place(tmpl[a], ins)
            pos += m
    cb.place(eq_template(), np.stack([cur, np.full(k, cb.public(0))], axis=1))
    return cb.compile(), cur, leaf


def _prove(shape, root, chals, leaves, paths, sha):
    free = {"leaf": [leaves[c] for c in chals]}
    for lvl in range(len(paths.siblings[0])):
        if sha:
            free[f"sib{lvl}"] = [paths.siblings[j][lvl][0] for j in range(len(chals))]
        else:
            free[f"sib{lvl}"] = [paths.siblings[j][lvl] for j in range(len(chals))]
    z = fill_inputs(shape, [root, *chals], free)
    return witness_numba(shape, z)


def _check(log2n: int, sha: bool) -> None:
    rnd = random.Random()
    n = 1 << log2n
    leaves = [rnd.getrandbits(254) for _ in range(n)]
    root = _root_sha(leaves) if sha else _root_poseidon(leaves, poseidon_tree_arities(log2n))
    k = 3
    chals = [rnd.randrange(n) for _ in range(k)]
    f = sha_paths if sha else poseidon_paths
    paths = f(dict(enumerate(leaves)), n, chals, np.random.default_rng())
    assert paths.root == root
    shape, cur, _ = _circuit(log2n, k, sha)
    z = _prove(shape, root, chals, leaves, paths, sha)
    zi = from_mont_fr(z)
    assert [zi[v] for v in cur] == [root] * k
    assert is_satisfied(shape.r1cs, z)
    # a different public challenge index (same siblings) cannot satisfy
    wrong = [(chals[0] + 1) % n, *chals[1:]]
    assert not is_satisfied(shape.r1cs, _prove(shape, root, wrong, leaves, paths, sha))
    # a wrong public root cannot satisfy
    assert not is_satisfied(shape.r1cs, _prove(shape, root + 1, chals, leaves, paths, sha))
    # nor a wrong leaf
    bad_leaves = list(leaves)
    bad_leaves[chals[1]] ^= 1
    assert not is_satisfied(shape.r1cs, _prove(shape, root, chals, bad_leaves, paths, sha))


def test_poseidon_arity8_tree() -> None:
    _check(6, sha=False)


def test_poseidon_arity8_and_2_tree() -> None:
    _check(5, sha=False)  # one arity-8 level, then two arity-2 levels


def test_sha_tree() -> None:
    _check(2, sha=True)


def test_sparse_paths_are_consistent() -> None:
    """In a sparse tree every challenged path leads to the same root."""
    rnd = random.Random()
    n = 1 << 20
    chals = [rnd.randrange(n) for _ in range(4)]
    leaves = {c: rnd.getrandbits(254) for c in chals}
    paths = poseidon_paths(leaves, n, chals, np.random.default_rng())
    arities = poseidon_tree_arities(20)
    for j, c in enumerate(chals):
        cur, idx = leaves[c], c
        for lvl, a in enumerate(arities):
            sib = paths.siblings[j][lvl]
            p = idx % a
            assert p == paths.positions[j][lvl]
            cur = poseidon_hash(sib[:p] + [cur] + sib[p:])
            idx //= a
        assert cur == paths.root
