"""A partition's supplied values, read from its vanilla proofs in a C1 output.

The circuit names every value it allocates with a Source (engine/c2/cs.py lists the forms); this
reads each one out of ``C1Output.vanilla_proofs[k]`` as rust-fil-proofs' ``StackedCompound::
circuit`` fills ``StackedCircuit`` (replica_id, comm_d and comm_r from the C1 output; comm_r_last
and comm_c from the first challenge's tree_r_last and tree_c roots; the rest per challenge). The
same reader resolves the prover's copy of the public inputs (the packed path positions and the
challenge), which the engine compares with the verifier's before proving.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

from engine.c2.cs import Source
from engine.seal.vanilla import C1Output, MerkleProof, VanillaProof
from kernels.constants import R_MOD


class SourceError(ValueError):
    """A Source that names nothing in the vanilla proofs, or a value that is not in the field."""


def _fr(b: bytes, where: Source) -> int:
    v = int.from_bytes(b, "little")
    if v >= R_MOD:
        raise SourceError(f"{where}: value is not a field element (not below r)")
    return v


def _tree(v: VanillaProof, tree: Hashable) -> MerkleProof:
    rc = v.replica_column_proofs
    if tree == "comm_d":
        return v.comm_d_proofs
    if tree == "comm_r_last":
        return v.comm_r_last_proof
    if tree == "comm_c":
        return rc.c_x.inclusion_proof
    if isinstance(tree, tuple) and len(tree) == 2 and tree[0] in ("drg", "exp"):
        group = rc.drg_parents if tree[0] == "drg" else rc.exp_parents
        return group[int(tree[1])].inclusion_proof
    raise SourceError(f"no tree {tree!r}")


def _path_bits(p: MerkleProof) -> list[int]:
    """The position bits of every level, least significant first, leaf level first."""
    bits: list[int] = []
    for el in p.levels():
        arity = len(el.hashes) + 1
        bits += [(el.index >> b) & 1 for b in range(arity.bit_length() - 1)]
    return bits


def value_of(src: Source, c1: C1Output, k: int) -> int:
    """The value ``src`` names in partition ``k`` of ``c1``."""
    part = c1.vanilla_proofs[k]
    try:
        head = src[0]
        if head == "replica_id":
            return _fr(c1.replica_id, src)
        if head == "comm_d":
            return _fr(c1.comm_d, src)
        if head == "comm_r":
            return _fr(c1.comm_r, src)
        if head == "comm_r_last":
            return _fr(part[0].comm_r_last_proof.root, src)
        if head == "comm_c":
            return _fr(part[0].replica_column_proofs.c_x.inclusion_proof.root, src)
        v = part[int(src[1])]  # type: ignore[call-overload]
        if head == "data_leaf":
            return _fr(v.comm_d_proofs.leaf, src)
        if head == "challenge_bit":
            return (v.labeling_proofs[0].node >> int(src[2])) & 1  # type: ignore[call-overload]
        if head == "challenge_input":
            return v.labeling_proofs[0].node
        if head == "column":
            _, _, group, p, row = src
            rc = v.replica_column_proofs
            cols = rc.drg_parents if group == "drg" else rc.exp_parents
            return _fr(cols[int(p)].column.rows[int(row)], src)  # type: ignore[call-overload]
        if head == "path":
            _, _, tree, level, kind, j = src
            el = _tree(v, tree).levels()[int(level)]  # type: ignore[call-overload]
            if kind == "sibling":
                return _fr(el.hashes[int(j)], src)  # type: ignore[call-overload]
            if kind == "bit":
                return (el.index >> int(j)) & 1  # type: ignore[call-overload]
        if head == "path_input":
            _, _, tree, chunk = src
            bits = _path_bits(_tree(v, tree))[254 * int(chunk) : 254 * (int(chunk) + 1)]  # type: ignore[call-overload]
            return sum(b << i for i, b in enumerate(bits))
    except (IndexError, ValueError, TypeError) as exc:
        if isinstance(exc, SourceError):
            raise
        raise SourceError(f"{src}: not in partition {k}'s vanilla proofs ({exc})") from None
    raise SourceError(f"unknown source {src!r}")


def assign(sources: Sequence[Source], c1: C1Output, k: int) -> list[int]:
    """Every source's value, in order."""
    if not 0 <= k < len(c1.vanilla_proofs):
        raise SourceError(f"the C1 output has partitions 0..{len(c1.vanilla_proofs) - 1}, not {k}")
    return [value_of(s, c1, k) for s in sources]
