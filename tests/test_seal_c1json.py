"""The C1 JSON (filecoin-ffi's SealCommitPhase1Output): serde's form exactly, a round trip of
random outputs of every proof shape, and a strict reader that refuses each kind of damage in
one line."""

from __future__ import annotations

import gc
import json
import random

import pytest

from engine.seal.c1json import C1FormatError, dumps, loads, proof_shape, read_c1, write_c1
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

RNG = random.Random()  # fresh each run; the seed is in the failure message


def _b(rng: random.Random) -> bytes:
    return rng.randbytes(32)


def _merkle(rng: random.Random, shape: str, arity: int = 8) -> MerkleProof:
    def levels(n: int, a: int) -> tuple[PathElement, ...]:
        return tuple(PathElement(tuple(_b(rng) for _ in range(a - 1)), rng.randrange(a)) for _ in range(n))

    base = levels(rng.randrange(1, 4), arity)
    sub = levels(1, 8) if shape in (SUB, TOP) else ()
    top = levels(1, 2) if shape == TOP else ()
    return MerkleProof(shape, _b(rng), _b(rng), base, sub, top)


def random_c1(rng: random.Random, shape: str = SINGLE) -> C1Output:
    name = rng.choice([n for n in SEAL_PROOFS if ("32GiB" in n) == (shape == SUB) and ("64GiB" in n) == (shape == TOP)])

    def colp() -> ColumnProof:
        return ColumnProof(Column(rng.randrange(1 << 32), tuple(_b(rng) for _ in range(2))), _merkle(rng, shape))

    def vp() -> VanillaProof:
        lp = tuple(LabelingProof(tuple(_b(rng) for _ in range(37)), layer, rng.randrange(1 << 64)) for layer in (1, 2))
        return VanillaProof(
            comm_d_proofs=_merkle(rng, SINGLE, 2),
            comm_r_last_proof=_merkle(rng, shape),
            replica_column_proofs=ReplicaColumnProof(colp(), tuple(colp() for _ in range(6)),
                                                     tuple(colp() for _ in range(8))),
            labeling_proofs=lp,
            encoding_proof=EncodingProof(lp[-1].parents, 2, lp[-1].node),
        )

    parts = tuple(tuple(vp() for _ in range(rng.randrange(1, 3))) for _ in range(rng.randrange(1, 3)))
    return C1Output(name, proof_shape(name), parts, _b(rng), _b(rng), _b(rng), _b(rng), _b(rng))


@pytest.mark.parametrize("shape", [SINGLE, SUB, TOP])
def test_round_trip(shape: str) -> None:
    seed = RNG.randrange(1 << 30)
    c1 = random_c1(random.Random(seed), shape)
    text = dumps(c1)
    assert loads(text) == c1, seed
    assert loads(text.encode()) == c1, seed
    assert dumps(loads(text)) == text  # byte for byte: the writer is canonical
    assert " " not in text  # serde_json::to_vec is compact


def test_serde_field_names_and_order() -> None:
    """The names and order of rust-filecoin-proofs-api's and storage-proofs' structs, the
    externally tagged enums, byte arrays as 32 numbers and Column's PhantomData as null."""
    c1 = random_c1(random.Random(RNG.randrange(1 << 30)))
    doc = json.loads(dumps(c1))
    assert list(doc) == ["registered_proof", "vanilla_proofs", "comm_r", "comm_d", "replica_id", "seed", "ticket"]
    assert doc["registered_proof"] == c1.registered_proof
    assert list(doc["vanilla_proofs"]) == [proof_shape(c1.registered_proof)]
    assert doc["comm_r"] == list(c1.comm_r) and all(isinstance(x, int) for x in doc["comm_r"])
    v = doc["vanilla_proofs"][c1.shape][0][0]
    assert list(v) == ["comm_d_proofs", "comm_r_last_proof", "replica_column_proofs", "labeling_proofs", "encoding_proof"]
    single = v["comm_d_proofs"]["data"]["Single"]
    assert list(single) == ["root", "leaf", "path"]
    assert list(single["path"]) == ["path"] and list(single["path"]["path"][0]) == ["hashes", "index"]
    rcp = v["replica_column_proofs"]
    assert list(rcp) == ["c_x", "drg_parents", "exp_parents"]
    assert list(rcp["c_x"]) == ["column", "inclusion_proof"]
    assert rcp["c_x"]["column"] == {"index": c1.vanilla_proofs[0][0].replica_column_proofs.c_x.column.index,
                                    "rows": [list(r) for r in c1.vanilla_proofs[0][0].replica_column_proofs.c_x.column.rows],
                                    "_h": None}
    assert '"_h":null' in dumps(c1)
    assert list(v["labeling_proofs"][0]) == ["parents", "layer_index", "node"]
    assert list(v["encoding_proof"]) == ["parents", "layer_index", "node"]
    sub = json.loads(dumps(random_c1(random.Random(RNG.randrange(1 << 30)), SUB)))
    sv = next(iter(sub["vanilla_proofs"].values()))[0][0]
    assert list(sv["comm_r_last_proof"]["data"]["Sub"]) == ["base_proof", "sub_proof", "root", "leaf"]
    top = json.loads(dumps(random_c1(random.Random(RNG.randrange(1 << 30)), TOP)))
    tv = next(iter(top["vanilla_proofs"].values()))[0][0]
    assert list(tv["comm_r_last_proof"]["data"]["Top"]) == ["base_proof", "sub_proof", "top_proof", "root", "leaf"]


def test_proof_shape_names() -> None:
    assert proof_shape("StackedDrg2KiBV1_1") == "StackedDrg2KiBV1"
    assert proof_shape("StackedDrg32GiBV1") == "StackedDrg32GiBV1"
    assert proof_shape("StackedDrg512MiBV1_1_Feat_SyntheticPoRep") == "StackedDrg512MiBV1"
    with pytest.raises(C1FormatError):
        proof_shape("StackedDrgWindow2KiBV1")


def _damaged(doc: dict, how: str) -> str:
    v = doc["vanilla_proofs"][next(iter(doc["vanilla_proofs"]))][0][0]
    single = v["comm_d_proofs"]["data"]["Single"]
    if how == "byte out of range":
        doc["comm_d"][RNG.randrange(32)] = 256
    elif how == "negative byte":
        single["leaf"][RNG.randrange(32)] = -1
    elif how == "short value":
        doc["seed"] = doc["seed"][:31]
    elif how == "missing field":
        del v["encoding_proof"]
    elif how == "unknown field":
        v["replica_column_proofs"]["c_x"]["extra"] = 1
    elif how == "phantom not null":
        v["replica_column_proofs"]["c_x"]["column"]["_h"] = 0
    elif how == "bool as number":
        v["labeling_proofs"][0]["node"] = True
    elif how == "float index":
        single["path"]["path"][0]["index"] = 1.0
    elif how == "wrong variant":
        doc["vanilla_proofs"] = {"StackedDrg8MiBV1": next(iter(doc["vanilla_proofs"].values()))}
    elif how == "unknown shape":
        v["comm_d_proofs"]["data"] = {"Double": single}
    elif how == "unknown proof":
        doc["registered_proof"] = "StackedDrg1KiBV1"
    elif how == "string bytes":
        doc["ticket"] = "00" * 32
    return json.dumps(doc, separators=(",", ":"))


DAMAGE = ["byte out of range", "negative byte", "short value", "missing field", "unknown field", "phantom not null",
          "bool as number", "float index", "wrong variant", "unknown shape", "unknown proof", "string bytes"]


@pytest.mark.parametrize("how", DAMAGE)
def test_damage_is_refused(how: str) -> None:
    c1 = random_c1(random.Random(RNG.randrange(1 << 30)))
    c1 = C1Output(c1.registered_proof if "2KiB" in c1.registered_proof else "StackedDrg2KiBV1_1",
                  "StackedDrg2KiBV1", c1.vanilla_proofs, c1.comm_r, c1.comm_d, c1.replica_id, c1.seed, c1.ticket)
    with pytest.raises(C1FormatError) as exc:
        loads(_damaged(json.loads(dumps(c1)), how))
    assert "\n" not in str(exc.value) and str(exc.value)


def test_truncated_repeated_and_not_json(tmp_path) -> None:
    text = dumps(random_c1(random.Random(RNG.randrange(1 << 30))))
    for cut in (1, RNG.randrange(2, len(text) - 1), len(text) - 1):
        with pytest.raises(C1FormatError, match="not JSON"):
            loads(text[:cut])
    with pytest.raises(C1FormatError, match="repeated field 'seed'"):
        loads(text[:-1] + ',"seed":' + json.dumps(list(range(32))) + "}")
    with pytest.raises(C1FormatError, match="not JSON"):
        loads(text.replace('"comm_r":[', '"comm_r":[NaN,', 1))
    p = tmp_path / "c1.json"
    p.write_bytes(b"\xff\xfe" + text.encode())
    with pytest.raises(C1FormatError, match="not UTF-8"):
        read_c1(p)
    p.write_text("")
    with pytest.raises(C1FormatError, match="empty"):
        read_c1(p)
    with pytest.raises(C1FormatError, match="no such file"):
        read_c1(tmp_path / "nothing.json")
    # the collector, paused while a file is read, is back on after a refused one and a good one
    assert gc.isenabled()
    assert loads(text).comm_r and gc.isenabled()


def test_a_paused_collector_stays_off_where_it_was_off() -> None:
    gc.disable()
    try:
        loads(dumps(random_c1(random.Random(RNG.randrange(1 << 30)))))
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_write_is_atomic(tmp_path, monkeypatch) -> None:
    """A write that fails leaves the good file as it was."""
    p = tmp_path / "c1.json"
    good = random_c1(random.Random(RNG.randrange(1 << 30)))
    write_c1(p, good)
    assert read_c1(p) == good
    import engine.seal.c1json as mod

    monkeypatch.setattr(mod, "dumps", lambda out: (_ for _ in ()).throw(OSError("disk full")))
    with pytest.raises(OSError):
        write_c1(p, random_c1(random.Random(RNG.randrange(1 << 30))))
    assert read_c1(p) == good
    assert [f.name for f in tmp_path.iterdir()] == ["c1.json"]
