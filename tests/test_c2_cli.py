"""Filecoin's commit phase 2 on the command line (engine/verbs/c2.py): bad input is one line and
exit 2; under SEALTOP_HEAVY=1 a sealed 2 KiB sector goes through setup, prove and verify, and
every changed public value, a foreign graph's C1 output and a damaged proof are rejected."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

from engine.verbs.cli import main

ROOT = Path(__file__).resolve().parents[1]
HEAVY = os.environ.get("SEALTOP_HEAVY") == "1"


def _cli(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "engine", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=900, env=env)


def _one_line(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err
    return err.splitlines()[-1]


def test_missing_and_bad_c2_arguments_are_one_line(tmp_path, capsys):
    (tmp_path / "c1.json").write_text("{}")
    assert main(["prove", "--c1", str(tmp_path / "c1.json")]) == 2
    assert "--c1 needs --params" in _one_line(capsys)
    assert main(["prove", "--c1", str(tmp_path / "c1.json"), "--params", "x.params"]) == 2
    assert "--prover-id and --sector-id" in _one_line(capsys)
    assert main(["verify", "--vk", "x.vk", "--sector-size", "2KiB", "--sector-id", "3"]) == 2
    assert "comm_d, comm_r, prover_id, seed, ticket" in _one_line(capsys)
    (tmp_path / "st.json").write_text("[1, 2")
    assert main(["verify", "--vk", "x.vk", "--statement", str(tmp_path / "st.json")]) == 2
    assert "--statement: statement file" in _one_line(capsys)
    assert main(["setup", "--sector-size", "3KiB"]) == 2
    assert "--sector-size" in _one_line(capsys)
    st = {"registered_proof": "StackedDrg2KiBV1_1", "sector_id": 1,
          **{k: secrets.token_hex(32) for k in ("prover_id", "ticket", "seed")},
          "comm_d": "01" + "00" * 31, "comm_r": "02" + "00" * 31}
    (tmp_path / "st.json").write_text(json.dumps(st))
    (tmp_path / "x.vk").write_bytes(b"\x00" * 100)
    assert main(["verify", "--vk", str(tmp_path / "x.vk"), "--statement", str(tmp_path / "st.json")]) == 2
    assert "cut short" in _one_line(capsys)


@pytest.mark.skipif(not HEAVY, reason="set SEALTOP_HEAVY=1 (a 2 KiB setup and proof: minutes)")
def test_a_sealed_2kib_sector_proves_and_verifies(tmp_path):
    pub = {"prover_id": secrets.token_hex(31) + "00", "sector_id": str(secrets.randbelow(1 << 63)),
           "ticket": secrets.token_hex(32), "seed": secrets.token_hex(32)}
    flags = [x for k, v in pub.items() for x in (f"--{k.replace('_', '-')}", v)]
    res = _cli(["seal", "--sector-size", "2KiB", "--zero", "--out", "c1.json", *flags], tmp_path)
    assert res.returncode == 0, res.stderr
    c1 = json.loads((tmp_path / "c1.json").read_text())
    res = _cli(["setup", "--sector-size", "2KiB", "--params", "k.params", "--vk", "k.vk",
                "--seed", secrets.token_hex(8)], tmp_path)
    assert res.returncode == 0, res.stderr
    ids = ["--prover-id", pub["prover_id"], "--sector-id", pub["sector_id"]]
    res = _cli(["prove", "--c1", "c1.json", "--params", "k.params", *ids, "--proof", "s.proof"], tmp_path)
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "s.proof").stat().st_size == 192
    statement = {"registered_proof": c1["registered_proof"], "prover_id": pub["prover_id"],
                 "sector_id": pub["sector_id"], "ticket": pub["ticket"], "seed": pub["seed"],
                 "comm_d": bytes(c1["comm_d"]).hex(), "comm_r": bytes(c1["comm_r"]).hex()}
    (tmp_path / "st.json").write_text(json.dumps(statement))
    ok = _cli(["verify", "--vk", "k.vk", "--proof", "s.proof", "--statement", "st.json"], tmp_path)
    assert ok.returncode == 0 and "valid" in ok.stdout, ok.stdout + ok.stderr
    for field in ("prover_id", "sector_id", "ticket", "seed", "comm_d", "comm_r"):
        other = "7" if field == "sector_id" else secrets.token_hex(31) + "00"
        res = _cli(["verify", "--vk", "k.vk", "--proof", "s.proof", "--statement", "st.json",
                    f"--{field.replace('_', '-')}", other], tmp_path)
        assert res.returncode == 1, (field, res.stdout, res.stderr)
    # a C1 output read against V1's graph (another porep id, other parents): refused before proving
    c1["registered_proof"] = "StackedDrg2KiBV1"
    (tmp_path / "v1.json").write_text(json.dumps(c1))
    res = _cli(["prove", "--c1", "v1.json", "--params", "k.params", *ids, "--proof", "v1.proof"], tmp_path)
    assert res.returncode == 1 and "not the one derived from the statement" in res.stderr
    assert not (tmp_path / "v1.proof").exists()
    # a damaged proof: exit 1 when it still decodes, 2 when it is no longer a point
    data = bytearray((tmp_path / "s.proof").read_bytes())
    data[5] ^= 0x10
    (tmp_path / "bad.proof").write_bytes(bytes(data))
    res = _cli(["verify", "--vk", "k.vk", "--proof", "bad.proof", "--statement", "st.json"], tmp_path)
    assert res.returncode in (1, 2) and "Traceback" not in res.stderr
