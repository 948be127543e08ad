"""Filecoin's Poseidon (neptune, Strength::Standard) over BLS12-381 Fr: parameters and a
native reference in Python ints.

The constants (round constants from the Grain LFSR, the Cauchy MDS matrix) ship beside this
module in ``poseidon_neptune_bls12_381.json``, copied from the shared test vectors. The reference
is the plain (unoptimised) permutation: R_F/2 full rounds, R_P partial rounds, R_F/2 full
rounds; every round adds t constants, applies x^5 (to every element in a full round, to element
0 in a partial round) and multiplies by the MDS matrix. The Merkle-tree hash puts the domain tag
2^arity - 1 in state[0], the inputs in state[1..] and returns state[1].
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from kernels.constants import R_MOD

ARITIES = (2, 8, 11)
_PARAMS_FILE = Path(__file__).with_name("poseidon_neptune_bls12_381.json")


@dataclass(frozen=True)
class PoseidonParams:
    """Constants of one arity, canonical ints mod r."""

    arity: int
    t: int
    full_rounds: int
    partial_rounds: int
    domain_tag: int
    round_constants: tuple[int, ...]  # t per round, rounds in order
    mds: tuple[tuple[int, ...], ...]  # t x t; new_state[i] = sum_j mds[i][j] * state[j]

    @property
    def rounds(self) -> int:
        return self.full_rounds + self.partial_rounds

    def is_full(self, rnd: int) -> bool:
        half = self.full_rounds // 2
        return rnd < half or rnd >= half + self.partial_rounds

    @property
    def sboxes(self) -> int:
        """Number of x^5 applications in one permutation."""
        return self.full_rounds * self.t + self.partial_rounds


@cache
def poseidon_params(arity: int) -> PoseidonParams:
    """The neptune parameters for ``arity`` (2, 8 or 11)."""
    if arity not in ARITIES:
        raise ValueError(f"Poseidon arity {arity} is not supported (choose one of {ARITIES})")
    raw = json.loads(_PARAMS_FILE.read_text())
    if int(raw["field_modulus"], 16) != R_MOD:
        raise ValueError("Poseidon constants file is for a different field")
    inst = raw["instances"][str(arity)]
    t = int(inst["t"])
    rc = tuple(int(x, 16) for x in inst["round_constants"])
    mds = tuple(tuple(int(x, 16) for x in row) for row in inst["mds"])
    p = PoseidonParams(
        arity=arity,
        t=t,
        full_rounds=int(raw["full_rounds"]),
        partial_rounds=int(inst["partial_rounds"]),
        domain_tag=int(inst["domain_tag"], 16),
        round_constants=rc,
        mds=mds,
    )
    if len(rc) != t * p.rounds or len(mds) != t or any(len(r) != t for r in mds):
        raise ValueError(f"Poseidon constants for arity {arity} have the wrong shape")
    return p


def poseidon_permutation(p: PoseidonParams, state: list[int], trace: list[int] | None = None) -> list[int]:
    """The permutation on a state of t ints. If ``trace`` is given, appends (x^2, x^4, x^5) of
    every S-box in order (the wires a circuit allocates)."""
    r = R_MOD
    s = [x % r for x in state]
    t = p.t
    for rnd in range(p.rounds):
        rc = p.round_constants[rnd * t : (rnd + 1) * t]
        s = [(s[i] + rc[i]) % r for i in range(t)]
        for i in range(t if p.is_full(rnd) else 1):
            x2 = s[i] * s[i] % r
            x4 = x2 * x2 % r
            x5 = x4 * s[i] % r
            if trace is not None:
                trace.extend((x2, x4, x5))
            s[i] = x5
        s = [sum(p.mds[i][j] * s[j] for j in range(t)) % r for i in range(t)]
    return s


def poseidon_hash(inputs: list[int], trace: list[int] | None = None) -> int:
    """Neptune's Merkle-tree hash of ``arity`` field elements (arity = len(inputs))."""
    p = poseidon_params(len(inputs))
    for x in inputs:
        if not 0 <= int(x) < R_MOD:
            raise ValueError("Poseidon input is not a canonical field element")
    return poseidon_permutation(p, [p.domain_tag, *inputs], trace)[1]
