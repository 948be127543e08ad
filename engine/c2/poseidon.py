"""neptune 11's legacy Poseidon circuit (``neptune::circuit::poseidon_hash``), the one every
Poseidon hash of Filecoin's PoRep circuit is: tree_c and tree_r_last nodes, column hashes and
comm_r = H(comm_c, comm_r_last).

The state is a list of elements, each either an allocated number or a linear combination
(neptune's ``Elt``). The first full round adds its round key before the S-box and the next
round's (compressed) key after it; every later S-box allocates its input (one row, ``lc * 1 =
v``) and squares twice; the MDS product between rounds is a linear combination, with the
pre-sparse and sparse factored matrices around the partial rounds; the result is allocated once
more. The allocated values include the compressed round keys added after each S-box, so the
constants must be neptune's own (preprocessing.rs ``compress_round_constants``, mds.rs
``factor_to_sparse_matrices``), derived here from the plain constants
(engine/c2/neptune_params.py: the shipped ones, or neptune's generator for other arities) by
the same procedure.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from engine.c2.cs import Synth
from engine.c2.neptune_params import neptune_params
from engine.circuit.template import LC, ONE, OP_LIN, OP_MUL, Bit, Tracer, lc_sum, var
from engine.seal.poseidon_sparse import inverse_mod_r, matmul_mod_r
from kernels.constants import R_MOD

Matrix = list[list[int]]


# ---------------------------------------------------------------- neptune's constants
def _apply(m: Matrix, v: list[int]) -> list[int]:
    """neptune's ``apply_matrix``: out[j] = sum_i m[i][j] v[i]."""
    n = len(v)
    return [sum(m[i][j] * v[i] for i in range(n)) % R_MOD for j in range(n)]


@dataclass(frozen=True)
class NeptuneConstants:
    """What neptune's circuit reads of ``PoseidonConstants``."""

    t: int
    full_rounds: int
    partial_rounds: int
    domain_tag: int
    compressed: tuple[int, ...]
    m: tuple[tuple[int, ...], ...]
    pre_sparse: tuple[tuple[int, ...], ...]
    sparse: tuple[tuple[tuple[int, ...], tuple[int, ...]], ...]  # per partial round (w_hat, v_rest)


@cache
def neptune_constants(arity: int) -> NeptuneConstants:
    p = neptune_params(arity)
    t, rf, rp = p.t, p.full_rounds, p.partial_rounds
    half = rf // 2
    m = [[pow(i + t + j, -1, R_MOD) for j in range(t)] for i in range(t)]  # mds.rs generate_mds
    if tuple(tuple(r) for r in m) != tuple(tuple(r) for r in p.mds):
        raise ValueError(f"Poseidon_{arity}: the stored MDS matrix is not neptune's Cauchy matrix")
    m_inv = inverse_mod_r(m)

    def keys(r: int) -> list[int]:
        return list(p.round_constants[r * t : (r + 1) * t])

    # preprocessing.rs compress_round_constants, every partial round preprocessed
    res = keys(0)
    for i in range(half - 1):
        res += _apply(m_inv, keys(i + 1))
    partial_keys: list[int] = []
    final_round = half + rp
    acc = keys(final_round)
    for i in range(rp):
        inverted = _apply(m_inv, acc)
        partial_keys.append(inverted[0])
        inverted[0] = 0
        acc = [(x + y) % R_MOD for x, y in zip(keys(final_round - i - 1), inverted)]
    res += _apply(m_inv, acc)
    res += reversed(partial_keys)
    for i in range(1, half):
        res += _apply(m_inv, keys(i + final_round))
    if len(res) != rf * t + rp:
        raise AssertionError("compressed round constants have the wrong length")

    # mds.rs factor_to_sparse_matrices
    curr = m
    sparse = []
    for _ in range(rp):
        m_hat_inv = inverse_mod_r([row[1:] for row in curr[1:]])
        v = curr[0][1:]
        w = [curr[i][0] for i in range(1, t)]
        w_hat = _apply(m_hat_inv, w)
        sparse.append((tuple([curr[0][0], *w_hat]), tuple(v)))
        m_prime = [[int(j == 0) for j in range(t)]] + [[0, *curr[i][1:]] for i in range(1, t)]
        curr = matmul_mod_r(m, m_prime)
    sparse.reverse()
    return NeptuneConstants(t, rf, rp, p.domain_tag, tuple(res), tuple(tuple(r) for r in m),
                            tuple(tuple(r) for r in curr), tuple(sparse))


# ---------------------------------------------------------------- the circuit (circuit.rs)
@dataclass
class _Elt:
    """An allocated number (``slot``) or a linear combination (``lc``)."""

    lc: LC
    slot: int | None = None

    @staticmethod
    def alloc(slot: int) -> _Elt:
        return _Elt(var(slot), slot)

    def scale(self, k: int) -> _Elt:
        return _Elt(lc_sum((k, self.lc)))

    def add(self, other: _Elt) -> _Elt:
        return _Elt(lc_sum((1, self.lc), (1, other.lc)))


def _ensure_allocated(tr: Tracer, e: _Elt) -> int:
    if e.slot is not None:
        return e.slot
    v = tr.alloc()
    tr.emit(OP_LIN, v, tr.lc_args(e.lc))
    tr.enforce(e.lc, var(ONE), var(v))
    return v


def _mul(tr: Tracer, x: LC, y: LC, add: LC, c: LC) -> int:
    """One allocation v = x * y + add with the row x * y = c(v)."""
    v = tr.alloc()
    args = tr.lc_args(x) + tr.lc_args(y) + tr.lc_args(add)
    tr.emit(OP_MUL, v, [len(x), len(y), len(add), *args])
    tr.enforce(x, y, lc_sum((1, var(v)), (1, c)))
    return v


def _mul_sum(tr: Tracer, a: int, b: int, pre: int | None, post: int | None) -> int:
    """circuit.rs ``mul_sum``: (b + pre) * a + post, the row (b + pre) * a = res - post."""
    x = lc_sum((1, var(b)), (pre or 0, var(ONE)))
    post_lc = {ONE: post % R_MOD} if post else {}
    return _mul(tr, x, var(a), post_lc, {ONE: (-post) % R_MOD} if post else {})


def _square(tr: Tracer, x: LC) -> int:
    return _mul(tr, x, x, {}, {})


def _quintic(tr: Tracer, e: _Elt, post: int | None) -> _Elt:
    """``quintic_s_box``: allocate the input, square twice, multiply and add ``post``."""
    lv = _ensure_allocated(tr, e)
    l2 = _square(tr, var(lv))
    l4 = _square(tr, var(l2))
    return _Elt.alloc(_mul_sum(tr, l4, lv, None, post))


def _quintic_pre_add(tr: Tracer, e: _Elt, pre: int, post: int) -> _Elt:
    """``quintic_s_box_pre_add``: (l + pre)^2, squared, times (l + pre), plus post."""
    lv = _ensure_allocated(tr, e)
    l2 = _square(tr, lc_sum((1, var(lv)), (pre, var(ONE))))
    l4 = _square(tr, var(l2))
    return _Elt.alloc(_mul_sum(tr, l4, lv, pre, post))


def _poseidon_body(tr: Tracer, ins: list[Bit]) -> list[Bit]:
    c = neptune_constants(len(ins))
    t, half = c.t, c.full_rounds // 2
    crc = c.compressed
    off = 0
    rnd = 0
    els = [_Elt({ONE: c.domain_tag % R_MOD})] + [_Elt.alloc(b.slot) for b in ins]

    def mds() -> None:
        nonlocal els, rnd
        if rnd == half - 1 or rnd < half - 1 or rnd >= half + c.partial_rounds:
            mat = c.pre_sparse if rnd == half - 1 else c.m
            els = [_sum([els[i].scale(mat[i][j]) for i in range(t)]) for j in range(t)]
        else:
            w_hat, v_rest = c.sparse[rnd - half]
            first = _sum([els[i].scale(w_hat[i]) for i in range(t)])
            els = [first] + [els[j].add(els[0].scale(v_rest[j - 1])) for j in range(1, t)]
        rnd += 1

    # the first full round: the tag's S-box is a constant, the inputs' add a key before and after
    pre, post = crc[off : off + t], crc[off + t : off + 2 * t]
    off += 2 * t
    tag = (c.domain_tag + pre[0]) % R_MOD
    els[0] = _Elt({ONE: (pow(tag, 5, R_MOD) + post[0]) % R_MOD})
    for i in range(1, t):
        els[i] = _quintic_pre_add(tr, els[i], pre[i], post[i])
    mds()
    for _ in range(1, half):
        keys = crc[off : off + t]
        off += t
        els = [_quintic(tr, e, k) for e, k in zip(els, keys)]
        mds()
    for _ in range(c.partial_rounds):
        els[0] = _quintic(tr, els[0], crc[off])
        off += 1
        mds()
    for r in range(half):
        last = r == half - 1
        post_keys: list[int | None] = [None] * t if last else list(crc[off : off + t])
        off += 0 if last else t
        els = [_quintic(tr, e, k) for e, k in zip(els, post_keys)]
        mds()
    if off != len(crc):
        raise AssertionError("the round keys were not consumed exactly")
    return [Bit(_ensure_allocated(tr, els[1]))]


def _sum(elts: list[_Elt]) -> _Elt:
    return _Elt(lc_sum(*((1, e.lc) for e in elts)))


def poseidon_hash(s: Synth, nums: list[int]) -> int:
    """``neptune::circuit::poseidon_hash`` of the allocated numbers ``nums`` (arity = their
    count) with Filecoin's constants for that arity (Strength::Standard, the merkle-tree
    domain tag)."""
    (out,) = s.call("poseidon", [Bit(n) for n in nums], _poseidon_body)
    return out.slot
