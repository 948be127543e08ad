"""The Poseidon gadget (neptune, arity 2, 8 or 11) traced into a :class:`Tracer`.

Each S-box costs three constraints (x·x = x2, x2·x2 = x4, x4·x = x5) whose x is the state
element as a linear combination: additions of round constants and the MDS layer are free. The
S-box wires are allocated contiguously in round order, then one wire for the output, so the
native witness (``OP_POSEIDON`` in witness.py) writes them in one pass.
"""

from __future__ import annotations

from engine.circuit.poseidon_params import poseidon_params
from engine.circuit.template import LC, ONE, OP_POSEIDON, Tracer, lc_sum, var


def poseidon_gadget(tr: Tracer, inputs: list[int]) -> int:
    """Hash the wires ``inputs`` (slots; arity = len) and return the slot of the output."""
    p = poseidon_params(len(inputs))
    t = p.t
    first = tr.alloc(3 * p.sboxes + 1)
    k = first
    state: list[LC] = [var(ONE, p.domain_tag)] + [var(s) for s in inputs]
    for rnd in range(p.rounds):
        rc = p.round_constants[rnd * t : (rnd + 1) * t]
        state = [lc_sum((1, state[i]), (rc[i], var(ONE))) for i in range(t)]
        for i in range(t if p.is_full(rnd) else 1):
            x = state[i]
            x2, x4, x5 = k, k + 1, k + 2
            k += 3
            tr.enforce(x, x, var(x2))
            tr.enforce(var(x2), var(x2), var(x4))
            tr.enforce(var(x4), x, var(x5))
            state[i] = var(x5)
        state = [lc_sum(*((p.mds[i][j], state[j]) for j in range(t))) for i in range(t)]
    out = k
    tr.enforce(state[1], var(ONE), var(out))
    tr.emit(OP_POSEIDON, first, [len(inputs), *inputs])
    return out
