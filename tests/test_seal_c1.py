"""`sealtop seal` then `sealtop verify --c1`: a 2 KiB sector sealed and its C1 output accepted;
each tampering (a label, a path element, a column, the ticket, the seed, comm_r) rejected with
exit 1 and a reason naming it; a damaged or truncated file refused with exit 2 in one line.
comm_d is checked against independent oracles (Filecoin's published zero commitment, and a
hashlib tree over a Python Fr32 padding of random data)."""

from __future__ import annotations

import hashlib
import json
import os
import random
import secrets
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from engine.seal.c1json import dumps, loads, read_c1
from engine.seal.challenges import interactive_challenges
from engine.seal.registry import seal_proof
from engine.seal.sealer import seal_sector
from engine.seal.vanilla_verify import derive_replica_id, verify_c1
from engine.verbs.cli import main

ROOT = Path(__file__).resolve().parents[1]
RNG = random.Random()

# Filecoin's comm_d of an all-zero 2 KiB sector (filecoin-proofs' zero piece commitments; lotus's
# zerocomm table, level 6): an oracle that does not come from this code
ZERO_COMM_D_2KIB = bytes.fromhex("fc7e928296e516faade986b28f92d44a4f24b935485223376a799027bc18f833")


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def run_cli(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "engine", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=600, env=_env())


@pytest.fixture(scope="module")
def sealed(tmp_path_factory) -> dict:
    """A random 2 KiB sector sealed through the CLI, in its own process."""
    d = tmp_path_factory.mktemp("seal")
    data = secrets.token_bytes(RNG.randrange(1, 2032))
    (d / "piece.bin").write_bytes(data)
    pub = {"prover_id": secrets.token_hex(32), "sector_id": str(RNG.randrange(1 << 64)),
           "ticket": secrets.token_hex(32), "seed": secrets.token_hex(32)}
    res = run_cli(["seal", "--sector-size", "2KiB", "--data", "piece.bin", "--out", "c1.json",
                   *(x for k, v in pub.items() for x in (f"--{k.replace('_', '-')}", v))], d)
    assert res.returncode == 0, res.stderr
    assert "Traceback" not in res.stderr
    assert f"verify --c1 c1.json --prover-id {pub['prover_id']} --sector-id {pub['sector_id']}" in res.stdout
    return {"dir": d, "data": data, "stdout": res.stdout, **pub}


def _verify(path: Path, s: dict, capsys, *extra: str) -> tuple[int, str, str]:
    code = main(["verify", "--c1", str(path), "--prover-id", s["prover_id"], "--sector-id", s["sector_id"], *extra])
    out = capsys.readouterr()
    return code, out.out, out.err


def _fr32_nodes(raw: bytes) -> list[bytes]:
    """Fr32 padding by Python ints: each 127 bytes, read as a little-endian bit string, is four
    254-bit nodes."""
    nodes = []
    for off in range(0, len(raw), 127):
        x = int.from_bytes(raw[off:off + 127], "little")
        nodes += [((x >> (254 * i)) & ((1 << 254) - 1)).to_bytes(32, "little") for i in range(4)]
    return nodes


def _sha_root(level: list[bytes]) -> bytes:
    while len(level) > 1:
        nxt = []
        for i in range(0, len(level), 2):
            h = bytearray(hashlib.sha256(level[i] + level[i + 1]).digest())
            h[31] &= 0x3F
            nxt.append(bytes(h))
        level = nxt
    return level[0]


def test_seal_then_verify_accepts(sealed: dict, capsys) -> None:
    d = sealed["dir"]
    code, out, err = _verify(d / "c1.json", sealed, capsys)
    assert code == 0, err
    assert out.splitlines()[0] == "partition 0: ok (2 challenges)"
    assert "valid: StackedDrg2KiBV1_1" in out and err == ""
    # the published values, given as the chain would, must match the file's
    c1 = read_c1(d / "c1.json")
    code, _, err = _verify(d / "c1.json", sealed, capsys, "--ticket", sealed["ticket"], "--seed", sealed["seed"],
                           "--comm-r", c1.comm_r.hex(), "--comm-d", c1.comm_d.hex())
    assert code == 0, err
    code, _, err = _verify(d / "c1.json", sealed, capsys, "--seed", secrets.token_hex(32))
    assert code == 1 and err.startswith("sealtop: verify: rejected: the file's seed") and err.count("\n") == 1


def test_comm_d_and_replica_id_against_oracles(sealed: dict) -> None:
    c1 = read_c1(sealed["dir"] / "c1.json")
    raw = sealed["data"] + bytes(2032 - len(sealed["data"]))
    assert c1.comm_d == _sha_root(_fr32_nodes(raw))
    assert f"comm_d {c1.comm_d.hex()}" in sealed["stdout"] and f"comm_r {c1.comm_r.hex()}" in sealed["stdout"]
    proof = seal_proof("StackedDrg2KiBV1_1")
    digest = bytearray(hashlib.sha256(bytes.fromhex(sealed["prover_id"]) + int(sealed["sector_id"]).to_bytes(8, "big")
                                      + bytes.fromhex(sealed["ticket"]) + c1.comm_d + proof.porep_id).digest())
    digest[31] &= 0x3F
    assert c1.replica_id == bytes(digest)
    assert c1.ticket.hex() == sealed["ticket"] and c1.seed.hex() == sealed["seed"]


def test_zero_sector_has_filecoins_zero_comm_d() -> None:
    proof = seal_proof("StackedDrg2KiBV1_1")
    r = seal_sector(proof, None, secrets.token_bytes(32), RNG.randrange(1 << 64), secrets.token_bytes(32),
                    secrets.token_bytes(32))
    assert r.comm_d == ZERO_COMM_D_2KIB
    assert r.timings.keys() == {"precommit1", "precommit2", "commit1", "commit1_check"}


def test_v1_proof_seals_and_verifies() -> None:
    """API V1 (the older graph rules) through the same pipeline, and a V1_1 verifier's view of
    it rejected: the registered proof decides the rules."""
    proof = seal_proof("StackedDrg2KiBV1")
    prover, sector = secrets.token_bytes(32), RNG.randrange(1 << 64)
    r = seal_sector(proof, secrets.token_bytes(2032), prover, sector, secrets.token_bytes(32), secrets.token_bytes(32))
    assert verify_c1(r.c1, prover, sector).ok
    assert loads(dumps(r.c1)) == r.c1
    relabelled = loads(dumps(r.c1).replace('"StackedDrg2KiBV1"', '"StackedDrg2KiBV1_1"', 1))
    assert relabelled.registered_proof == "StackedDrg2KiBV1_1"
    assert not verify_c1(relabelled, prover, sector).ok  # another porep id: another replica_id


def test_file_round_trips_byte_for_byte(sealed: dict) -> None:
    text = (sealed["dir"] / "c1.json").read_text()
    c1 = loads(text)
    assert dumps(c1) == text
    assert len(c1.vanilla_proofs) == 1 and len(c1.vanilla_proofs[0]) == 2
    v = c1.vanilla_proofs[0][0]
    assert len(v.replica_column_proofs.drg_parents) == 6 and len(v.replica_column_proofs.exp_parents) == 8
    assert [lp.layer_index for lp in v.labeling_proofs] == [1, 2] and len(v.labeling_proofs[0].parents) == 37


def _proof(doc: dict, i: int | None = None) -> dict:
    parts = doc["vanilla_proofs"]["StackedDrg2KiBV1"][0]
    return parts[RNG.randrange(len(parts)) if i is None else i]


def _flip(arr: list[int]) -> None:
    """Change one byte of a 32-byte value, keeping it a field element (the last byte's two top
    bits stay clear), so the reason is the check that catches it, not a range error."""
    j = RNG.randrange(31)
    arr[j] ^= 1 << RNG.randrange(8)


def _tamper(doc: dict, what: str, s: dict) -> None:
    v = _proof(doc)
    rcp = v["replica_column_proofs"]
    if what == "label":
        lp = v["labeling_proofs"][RNG.randrange(2)]
        _flip(lp["parents"][RNG.randrange(37)])
    elif what == "path":
        el = RNG.choice(v["comm_r_last_proof"]["data"]["Single"]["path"]["path"])
        _flip(el["hashes"][RNG.randrange(len(el["hashes"]))])
    elif what == "column":
        col = RNG.choice([rcp["c_x"], *rcp["drg_parents"], *rcp["exp_parents"]])["column"]
        _flip(col["rows"][RNG.randrange(2)])
    elif what == "ticket":
        _flip(doc["ticket"])
    elif what == "seed":
        proof = seal_proof("StackedDrg2KiBV1_1")
        rid = bytes(doc["replica_id"])
        before = interactive_challenges(proof, rid, bytes(doc["seed"]), 0)
        while True:  # a seed that challenges other nodes (one giving the same ones proves the same)
            seed = secrets.token_bytes(32)
            if interactive_challenges(proof, rid, seed, 0) != before:
                break
        doc["seed"] = list(seed)
    elif what == "comm_r":
        _flip(doc["comm_r"])
    elif what == "ticket and replica_id":
        doc["ticket"] = list(secrets.token_bytes(32))
        doc["replica_id"] = list(derive_replica_id(bytes.fromhex(s["prover_id"]), int(s["sector_id"]),
                                                   bytes(doc["ticket"]), bytes(doc["comm_d"]),
                                                   seal_proof("StackedDrg2KiBV1_1").porep_id))
    elif what == "data leaf":
        _flip(v["comm_d_proofs"]["data"]["Single"]["leaf"])
    elif what == "parent index":
        col = RNG.choice(rcp["exp_parents"])["column"]
        col["index"] = (col["index"] + 1) % 64


TAMPERS: dict[str, str | tuple[str, ...]] = {
    "label": "label of layer",
    "path": "comm_r_last path",
    "column": "column's hash is not its tree_c leaf",
    "ticket": "ticket",
    "seed": "the challenge the seed",
    "comm_r": "comm_r is not Poseidon",
    # a new replica_id moves the challenges; one that lands on the same node (1 in 63) meets the
    # label check instead
    "ticket and replica_id": ("the challenge the seed and replica_id give", "label of layer 1: does not match"),
    "data leaf": "comm_d path",
    "parent index": "expander parent",
}


@pytest.mark.parametrize("what", list(TAMPERS))
def test_each_tamper_is_rejected_with_its_reason(sealed: dict, what: str, tmp_path: Path, capsys) -> None:
    doc = json.loads((sealed["dir"] / "c1.json").read_text())
    _tamper(doc, what, sealed)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc, separators=(",", ":")))
    code, out, err = _verify(bad, sealed, capsys)
    assert code == 1, (what, out, err)
    assert err.count("\n") == 1 and err.startswith("sealtop: verify: rejected: "), err
    want = TAMPERS[what]
    assert any(w in err for w in ((want,) if isinstance(want, str) else want)), (what, err)
    assert "Traceback" not in err


def test_damaged_or_truncated_file_is_one_line_exit_2(sealed: dict, tmp_path: Path) -> None:
    text = (sealed["dir"] / "c1.json").read_text()
    cases = {
        "cut.json": text[:RNG.randrange(1, len(text) - 1)],
        "byte.json": text.replace('"comm_d":[', '"comm_d":[300,', 1),
        "garbage.json": "\x00" * 10 + text,
        "field.json": text.replace('"encoding_proof"', '"encoding_prof"', 1),
    }
    for name, body in cases.items():
        (tmp_path / name).write_text(body)
    (tmp_path / "bin.json").write_bytes(secrets.token_bytes(64))
    for name in [*cases, "bin.json", "missing.json"]:
        res = run_cli(["verify", "--c1", name, "--prover-id", sealed["prover_id"], "--sector-id",
                       sealed["sector_id"]], tmp_path)
        assert res.returncode == 2, (name, res.stdout, res.stderr)
        lines = res.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"sealtop: verify: C1 file {name}: "), (name, res.stderr)
        assert res.stdout == ""


def test_bad_seal_and_verify_arguments(sealed: dict, tmp_path: Path, capsys) -> None:
    cases = [
        (["seal", "--sector-size", "32GiB", "--zero", "--out", str(tmp_path / "x.json")], "not sealed here"),
        (["seal", "--sector-size", "3KiB", "--zero", "--out", str(tmp_path / "x.json")], "no registered seal proof"),
        (["seal", "--sector-size", "2KiB", "--zero", "--out", str(tmp_path / "x.json"), "--ticket", "abc"], "--ticket: expected 32 bytes"),
        (["seal", "--sector-size", "2KiB", "--zero", "--out", str(tmp_path / "no" / "x.json")], "does not exist"),
        (["seal", "--sector-size", "2KiB", "--data", str(tmp_path / "none.bin"), "--out", str(tmp_path / "x.json")], "is not a file"),
        (["verify", "--c1", str(sealed["dir"] / "c1.json")], "needs --prover-id and --sector-id"),
        (["verify", "--c1", str(sealed["dir"] / "c1.json"), "--prover-id", "00", "--sector-id", "1"], "--prover-id"),
        (["verify", "--c1", str(sealed["dir"] / "c1.json"), "--prover-id", "00" * 32, "--sector-id", "-1"], "--sector-id"),
    ]
    big = tmp_path / "big.bin"
    big.write_bytes(bytes(2033))
    cases.append((["seal", "--sector-size", "2KiB", "--data", str(big), "--out", str(tmp_path / "x.json")], "more than the sector's 2032"))
    for argv, fragment in cases:
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and fragment in err and err.startswith("sealtop: "), (argv, err)
    assert not (tmp_path / "x.json").exists()


def test_label_and_encoding_checks_bite_alone() -> None:
    """The two checks no file edit reaches alone (a new replica_id moves the challenges; a new
    data leaf moves comm_d and so replica_id): a label recomputed under another replica_id, and
    an encoding whose data leaf sits in a rebuilt tree_d, each fail the one check."""
    from dataclasses import replace

    from engine.seal import trees
    from engine.seal.fr32 import fr32_pad_array
    from engine.seal.graph import node_parents
    from engine.seal.vanilla import merkle_proof
    from engine.seal.vanilla_verify import Rejected, _Context, tree_shape, verify_challenge

    proof = seal_proof("StackedDrg2KiBV1_1")
    raw = secrets.token_bytes(2032)
    prover, sector = secrets.token_bytes(32), RNG.randrange(1 << 64)
    r = seal_sector(proof, raw, prover, sector, secrets.token_bytes(32), secrets.token_bytes(32))
    v = r.c1.vanilla_proofs[0][0]
    node = v.replica_column_proofs.c_x.column.index
    shape, arities = tree_shape(proof)
    ctx = _Context(proof=proof, replica_id=r.replica_id, comm_d=r.comm_d, comm_c=r.comm_c,
                   comm_r_last=r.comm_r_last, shape=shape, arities=arities, d_arities=[2] * 6)
    parents = node_parents(proof, node)
    verify_challenge(v, node, parents, ctx)  # as sealed: passes
    with pytest.raises(Rejected, match="label of layer 1: does not match"):
        verify_challenge(v, node, parents, replace(ctx, replica_id=derive_replica_id(
            prover, sector ^ 1, r.c1.ticket, r.comm_d, proof.porep_id)))
    nodes = fr32_pad_array(np.frombuffer(raw, np.uint8)).copy()
    nodes[node, 0] ^= 1
    tree = trees.tree_d(nodes)
    forged = replace(v, comm_d_proofs=merkle_proof(tree.path(node), tree.root, bytes(nodes[node]), (2, 0, 0)))
    with pytest.raises(Rejected, match="^encoding: "):
        verify_challenge(forged, node, parents, replace(ctx, comm_d=tree.root))


@pytest.mark.slow
def test_seal_8mib_then_verify(tmp_path: Path) -> None:
    data = secrets.token_bytes(RNG.randrange(1, 8 * 1024 * 1024 // 128 * 127))
    (tmp_path / "piece.bin").write_bytes(data)
    res = run_cli(["seal", "--sector-size", "8MiB", "--data", "piece.bin", "--out", "c1.json",
                   "--prover-id", "11" * 32, "--sector-id", "8"], tmp_path)
    assert res.returncode == 0, res.stderr
    res = run_cli(["verify", "--c1", "c1.json", "--prover-id", "11" * 32, "--sector-id", "8"], tmp_path)
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("partition 0: ok (2 challenges)")
    res = run_cli(["verify", "--c1", "c1.json", "--prover-id", "11" * 32, "--sector-id", "9"], tmp_path)
    assert res.returncode == 1 and "replica_id" in res.stderr


@pytest.mark.parametrize(("shape", "leaves"), [((8, 0, 0), 64), ((8, 8, 0), 512), ((8, 8, 2), 1024)])
def test_compound_paths_check_as_filecoin_splits_them(shape: tuple[int, int, int], leaves: int) -> None:
    """Single, Sub and Top proofs (the 32 GiB and 64 GiB shapes, in small): a true path passes
    with its node; a wrong node, a changed sibling or a Single-shaped copy of a Sub path fail."""
    from dataclasses import replace

    from engine.seal import trees
    from engine.seal.vanilla import SINGLE, SUB, TOP, PathElement, merkle_proof
    from engine.seal.vanilla_verify import Rejected, check_path

    rows = np.frombuffer(b"".join(secrets.token_bytes(31) + b"\x00" for _ in range(leaves)), np.uint8)
    tree = trees.poseidon_tree(rows.reshape(leaves, 32), shape)
    node = RNG.randrange(leaves)
    p = merkle_proof(tree.path(node), tree.root, bytes(rows[32 * node:32 * node + 32]), shape)
    want = TOP if shape[2] else SUB if shape[1] else SINGLE
    assert p.shape == want and p.path_index(shape) == node
    arities = list(tree.arities)
    check_path(p, want, arities, node, tree.root, p.leaf, False, "path")
    with pytest.raises(Rejected, match="not node"):
        check_path(p, want, arities, (node + 1) % leaves, tree.root, p.leaf, False, "path")
    levels = list(p.base)
    el = levels[0]
    levels[0] = PathElement((bytes(32),) + el.hashes[1:], el.index)
    with pytest.raises(Rejected, match="does not hash to the root"):
        check_path(replace(p, base=tuple(levels)), want, arities, node, tree.root, p.leaf, False, "path")
    if want != SINGLE:
        flat = replace(p, shape=SINGLE, base=p.levels(), sub=(), top=())
        with pytest.raises(Rejected, match="needs"):
            check_path(flat, want, arities, node, tree.root, p.leaf, False, "path")


def test_tree_shapes_of_every_registered_size() -> None:
    from engine.seal.vanilla_verify import tree_shape

    assert tree_shape(seal_proof("StackedDrg2KiBV1_1")) == ("Single", [8, 8])
    assert tree_shape(seal_proof("StackedDrg512MiBV1_1")) == ("Single", [8] * 8)
    assert tree_shape(seal_proof("StackedDrg32GiBV1_1")) == ("Sub", [8] * 9 + [8])
    assert tree_shape(seal_proof("StackedDrg64GiBV1")) == ("Top", [8] * 9 + [8, 2])


def test_zero_comm_d_of_512mib_is_filecoins_zero_piece_cid() -> None:
    """The 512 MiB all-zero sector's comm_d (what `sealtop seal --sector-size 512MiB --zero`
    printed, docs/BENCHMARKS.md) is the digest inside Filecoin's published zero piece CID."""
    import base64

    from engine.seal.commitments import zero_comm_d

    cid = "baga6ea4seaqdsvqopmj2soyhujb72jza76t4wpq5fzifvm3ctz47iyytkewnubq"
    body = cid[1:].upper()
    raw = base64.b32decode(body + "=" * (-len(body) % 8))
    # CIDv1, fil-commitment-unsealed (0xf101), sha2-256-trunc254-padded (0x1012), 32 bytes
    assert raw[:6] == bytes([0x01, 0x81, 0xE2, 0x03, 0x92, 0x20]) and raw[6] == 32
    assert zero_comm_d(512 << 20) == raw[7:]
    assert zero_comm_d(2048) == ZERO_COMM_D_2KIB
