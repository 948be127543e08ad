"""filecoin-ffi's C1 output (``SealCommitPhase1Output``) as JSON, read and written strictly.

filecoin-ffi's ``seal_commit_phase1`` returns ``serde_json::to_vec`` of rust-filecoin-proofs-api's
``SealCommitPhase1Output``; lotus stores those bytes and hands them to commit phase 2. This module
writes that exact form (serde's field names and order, externally tagged enums, every 32-byte
domain value and commitment as an array of 32 numbers, PhantomData as ``null``, no spaces) and
reads it back, refusing anything else with one line that names the place: a missing, unknown or
repeated key, a wrong type, a byte out of range, a value of the wrong length, a proof shape that
is not the registered proof's, or a file cut short. The same reader takes a provider's file.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from typing import Any, TypeVar

from engine.atomic import atomic_write
from engine.seal.registry import SEAL_PROOFS
from engine.seal.vanilla import (
    SINGLE,
    SUB,
    TOP,
    C1Output,
    Column,
    ColumnProof,
    EncodingProof,
    LabelingProof,
    MerkleProof,
    PathElement,
    ReplicaColumnProof,
    VanillaProof,
)
from engine.strictjson import collector_paused, json_kind, read_strict, strict_loads

MAX_C1_BYTES = 1 << 30
"""The largest C1 file read (a 64 GiB sector's is well under 100 MB)."""

U32, U64 = (1 << 32) - 1, (1 << 64) - 1

T = TypeVar("T")


class C1FormatError(ValueError):
    """A C1 file that is not a well-formed SealCommitPhase1Output (one line, naming where)."""


def proof_shape(registered_proof: str) -> str:
    """The ``VanillaSealProof`` variant for a registered proof: ``StackedDrg2KiBV1_1`` proves
    with the 2 KiB shape, named ``StackedDrg2KiBV1`` for every API version."""
    m = re.fullmatch(r"(StackedDrg\d+[KMG]iB)V1(_\d+)?(_Feat_\w+)?", registered_proof)
    if m is None:
        raise C1FormatError(f"registered_proof: {registered_proof!r} is not a seal proof name")
    return f"{m.group(1)}V1"


# ---------------------------------------------------------------- write
def _b(v: bytes) -> list[int]:
    return list(v)


def _path_json(levels: tuple[PathElement, ...]) -> dict[str, Any]:
    return {"path": [{"hashes": [_b(h) for h in el.hashes], "index": el.index} for el in levels]}


def merkle_json(p: MerkleProof) -> dict[str, Any]:
    if p.shape == SINGLE:
        body: dict[str, Any] = {"root": _b(p.root), "leaf": _b(p.leaf), "path": _path_json(p.base)}
    elif p.shape == SUB:
        body = {"base_proof": _path_json(p.base), "sub_proof": _path_json(p.sub),
                "root": _b(p.root), "leaf": _b(p.leaf)}
    else:
        body = {"base_proof": _path_json(p.base), "sub_proof": _path_json(p.sub),
                "top_proof": _path_json(p.top), "root": _b(p.root), "leaf": _b(p.leaf)}
    return {"data": {p.shape: body}}


def _column_proof_json(c: ColumnProof) -> dict[str, Any]:
    return {"column": {"index": c.column.index, "rows": [_b(r) for r in c.column.rows], "_h": None},
            "inclusion_proof": merkle_json(c.inclusion_proof)}


def _labeling_json(p: LabelingProof | EncodingProof) -> dict[str, Any]:
    return {"parents": [_b(x) for x in p.parents], "layer_index": p.layer_index, "node": p.node}


def vanilla_json(v: VanillaProof) -> dict[str, Any]:
    rcp = v.replica_column_proofs
    return {
        "comm_d_proofs": merkle_json(v.comm_d_proofs),
        "comm_r_last_proof": merkle_json(v.comm_r_last_proof),
        "replica_column_proofs": {
            "c_x": _column_proof_json(rcp.c_x),
            "drg_parents": [_column_proof_json(c) for c in rcp.drg_parents],
            "exp_parents": [_column_proof_json(c) for c in rcp.exp_parents],
        },
        "labeling_proofs": [_labeling_json(p) for p in v.labeling_proofs],
        "encoding_proof": _labeling_json(v.encoding_proof),
    }


def c1_json(out: C1Output) -> dict[str, Any]:
    """The C1 output as serde_json's value tree (fields in the struct's order)."""
    return {
        "registered_proof": out.registered_proof,
        "vanilla_proofs": {out.shape: [[vanilla_json(v) for v in part] for part in out.vanilla_proofs]},
        "comm_r": _b(out.comm_r),
        "comm_d": _b(out.comm_d),
        "replica_id": _b(out.replica_id),
        "seed": _b(out.seed),
        "ticket": _b(out.ticket),
    }


def dumps(out: C1Output) -> str:
    """The C1 output as serde_json writes it (compact)."""
    return json.dumps(c1_json(out), separators=(",", ":"))


def write_c1(path: str | os.PathLike, out: C1Output) -> None:
    """Write the C1 JSON atomically: a failure leaves any old file as it was."""
    with atomic_write(path) as f:
        f.write(dumps(out))


# ---------------------------------------------------------------- read
def _fail(where: str, what: str) -> C1FormatError:
    return C1FormatError(f"{where}: {what}" if where else what)


def _obj(v: Any, where: str, keys: tuple[str, ...]) -> dict[str, Any]:
    if not isinstance(v, dict):
        raise _fail(where, f"expected an object with {', '.join(keys)}, got {json_kind(v)}")
    missing = [k for k in keys if k not in v]
    if missing:
        raise _fail(where, f"missing field {missing[0]!r}")
    extra = [k for k in v if k not in keys]
    if extra:
        raise _fail(where, f"unknown field {extra[0]!r}")
    return v


def _list(v: Any, where: str) -> list[Any]:
    if not isinstance(v, list):
        raise _fail(where, f"expected an array, got {json_kind(v)}")
    return v


def _int(v: Any, where: str, top: int) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise _fail(where, f"expected an unsigned integer, got {json_kind(v)}")
    if not 0 <= v <= top:
        raise _fail(where, f"{v} is out of range (0..{top})")
    return v


def _bytes32(v: Any, where: str) -> bytes:
    arr = _list(v, where)
    if len(arr) != 32:
        raise _fail(where, f"expected 32 bytes, got {len(arr)}")
    # a 32 GiB sector's file holds 320 K of these: bytes() checks the range in C, and JSON's
    # true and false (ints to bytes()) are the only other values it would take
    try:
        if bool not in set(map(type, arr)):
            return bytes(arr)
    except (TypeError, ValueError):
        pass
    for i, x in enumerate(arr):
        if isinstance(x, bool) or not isinstance(x, int) or not 0 <= x <= 255:
            raise _fail(f"{where}[{i}]", f"expected a byte (0..255), got {x!r}")
    return bytes(arr)


def _each(v: Any, where: str, read: Callable[[Any, str], T]) -> tuple[T, ...]:
    return tuple(read(x, f"{where}[{i}]") for i, x in enumerate(_list(v, where)))


def _path(v: Any, where: str) -> tuple[PathElement, ...]:
    d = _obj(v, where, ("path",))

    def element(e: Any, w: str) -> PathElement:
        o = _obj(e, w, ("hashes", "index"))
        return PathElement(_each(o["hashes"], f"{w}.hashes", _bytes32), _int(o["index"], f"{w}.index", U64))

    return _each(d["path"], f"{where}.path", element)


def read_merkle(v: Any, where: str) -> MerkleProof:
    outer = _obj(v, where, ("data",))
    data = outer["data"]
    w = f"{where}.data"
    if not isinstance(data, dict) or len(data) != 1:
        raise _fail(w, "expected one of Single, Sub, Top")
    (shape, body), = data.items()
    w = f"{w}.{shape}"
    if shape == SINGLE:
        o = _obj(body, w, ("root", "leaf", "path"))
        return MerkleProof(SINGLE, _bytes32(o["root"], f"{w}.root"), _bytes32(o["leaf"], f"{w}.leaf"),
                           _path(o["path"], f"{w}.path"))
    if shape == SUB:
        o = _obj(body, w, ("base_proof", "sub_proof", "root", "leaf"))
        return MerkleProof(SUB, _bytes32(o["root"], f"{w}.root"), _bytes32(o["leaf"], f"{w}.leaf"),
                           _path(o["base_proof"], f"{w}.base_proof"), _path(o["sub_proof"], f"{w}.sub_proof"))
    if shape == TOP:
        o = _obj(body, w, ("base_proof", "sub_proof", "top_proof", "root", "leaf"))
        return MerkleProof(TOP, _bytes32(o["root"], f"{w}.root"), _bytes32(o["leaf"], f"{w}.leaf"),
                           _path(o["base_proof"], f"{w}.base_proof"), _path(o["sub_proof"], f"{w}.sub_proof"),
                           _path(o["top_proof"], f"{w}.top_proof"))
    raise _fail(f"{where}.data", f"unknown proof shape {shape!r} (expected Single, Sub or Top)")


def _column_proof(v: Any, where: str) -> ColumnProof:
    o = _obj(v, where, ("column", "inclusion_proof"))
    w = f"{where}.column"
    c = _obj(o["column"], w, ("index", "rows", "_h"))
    if c["_h"] is not None:
        raise _fail(f"{w}._h", f"expected null, got {json_kind(c['_h'])}")
    column = Column(_int(c["index"], f"{w}.index", U32), _each(c["rows"], f"{w}.rows", _bytes32))
    return ColumnProof(column, read_merkle(o["inclusion_proof"], f"{where}.inclusion_proof"))


def _labeling_fields(v: Any, where: str) -> tuple[tuple[bytes, ...], int, int]:
    o = _obj(v, where, ("parents", "layer_index", "node"))
    return (_each(o["parents"], f"{where}.parents", _bytes32), _int(o["layer_index"], f"{where}.layer_index", U32),
            _int(o["node"], f"{where}.node", U64))


def read_vanilla(v: Any, where: str) -> VanillaProof:
    o = _obj(v, where, ("comm_d_proofs", "comm_r_last_proof", "replica_column_proofs",
                        "labeling_proofs", "encoding_proof"))
    w = f"{where}.replica_column_proofs"
    r = _obj(o["replica_column_proofs"], w, ("c_x", "drg_parents", "exp_parents"))
    rcp = ReplicaColumnProof(_column_proof(r["c_x"], f"{w}.c_x"),
                             _each(r["drg_parents"], f"{w}.drg_parents", _column_proof),
                             _each(r["exp_parents"], f"{w}.exp_parents", _column_proof))
    labeling = _each(o["labeling_proofs"], f"{where}.labeling_proofs",
                     lambda x, w2: LabelingProof(*_labeling_fields(x, w2)))
    return VanillaProof(
        comm_d_proofs=read_merkle(o["comm_d_proofs"], f"{where}.comm_d_proofs"),
        comm_r_last_proof=read_merkle(o["comm_r_last_proof"], f"{where}.comm_r_last_proof"),
        replica_column_proofs=rcp,
        labeling_proofs=labeling,
        encoding_proof=EncodingProof(*_labeling_fields(o["encoding_proof"], f"{where}.encoding_proof")),
    )


def from_json(doc: Any) -> C1Output:
    """A C1Output from serde_json's value tree, refusing any departure from the form."""
    o = _obj(doc, "", ("registered_proof", "vanilla_proofs", "comm_r", "comm_d", "replica_id",
                       "seed", "ticket"))
    name = o["registered_proof"]
    if not isinstance(name, str):
        raise _fail("registered_proof", f"expected a string, got {json_kind(name)}")
    if name not in SEAL_PROOFS:
        raise _fail("registered_proof", f"{name!r} is not a seal proof this engine knows "
                                        f"({', '.join(SEAL_PROOFS)})")
    shape = proof_shape(name)
    vp = o["vanilla_proofs"]
    if not isinstance(vp, dict) or len(vp) != 1:
        raise _fail("vanilla_proofs", f"expected an object with the one key {shape!r}")
    (tag, parts), = vp.items()
    if tag != shape:
        raise _fail("vanilla_proofs", f"variant {tag!r} does not match registered_proof {name} "
                                      f"(expected {shape!r})")
    where = f"vanilla_proofs.{tag}"
    proofs = _each(parts, where, lambda part, w: _each(part, w, read_vanilla))
    return C1Output(
        registered_proof=name, shape=shape, vanilla_proofs=proofs,
        comm_r=_bytes32(o["comm_r"], "comm_r"), comm_d=_bytes32(o["comm_d"], "comm_d"),
        replica_id=_bytes32(o["replica_id"], "replica_id"), seed=_bytes32(o["seed"], "seed"),
        ticket=_bytes32(o["ticket"], "ticket"),
    )


def loads(text: str | bytes) -> C1Output:
    """Parse C1 JSON text; C1FormatError (one line) for anything that is not the form."""
    with collector_paused():  # a 32 GiB sector's file: 1.60-1.74 -> 1.10-1.15 s of CPU on the 2-core
        return from_json(strict_loads(text, C1FormatError))


def read_c1(path: str | os.PathLike) -> C1Output:
    """Read a C1 file; C1FormatError naming the file and what is wrong with it."""
    return read_strict(path, "C1 file", "C1 output", MAX_C1_BYTES, loads, C1FormatError)
