"""`bench prove --preset`: one full partition prove per preset with the time broken down, the
first proof verified, and bad input as one line with a non-zero exit."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from engine.pipeline import proving
from engine.verbs import bench_prove
from engine.verbs.cli import main

ROOT = Path(__file__).resolve().parents[1]


def run(args: list[str], timeout: int = 300) -> subprocess.CompletedProcess:
    """``python -m engine ARGS`` in its own process, as in tests/test_cli.py."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, "-m", "engine", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout, env=env)


def assert_one_line_error(res: subprocess.CompletedProcess, fragment: str, code: int = 2) -> None:
    assert res.returncode == code, (res.returncode, res.stdout, res.stderr)
    assert "Traceback" not in res.stderr
    err = res.stderr.strip()
    assert len(err.splitlines()) == 1 and fragment in err, err

GROUPS = ("ntt", "msm_h", "msm_a", "msm_b1", "msm_l", "b2")


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    """One key cache for the module: tiny's setup runs once."""
    return tmp_path_factory.mktemp("params")


def test_preset_tiny_table_from_the_shell(cache: Path) -> None:
    res = run(["bench", "prove", "--preset", "tiny", "--repeat", "1", "--backend", "cpu", "--cache-dir", str(cache)])
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    head = lines[0].split()
    for col in ("preset", "constraints", "domain", "witness", "eval", *GROUPS, "start", "finish", "prove", "verified"):
        assert col in head, lines[0]
    row = lines[1].split()
    assert row[0] == "tiny" and row[2] == "2^12" and row[-1] == "yes", lines[1]
    assert any(ln.startswith("tiny: ") and "key load + upload" in ln and "ensure_key" in ln for ln in lines)
    assert "backend: cpu" in res.stdout
    assert "first timed proof verifies" in res.stderr
    assert list(cache.glob("tiny-*.pk")) and list(cache.glob("tiny-*.pk.verified"))


def test_preset_tiny_json(cache: Path, capsys) -> None:
    code = main(["bench", "prove", "--preset", "tiny", "--repeat", "2", "--backend", "cpu", "--cache-dir", str(cache),
                 "--json"])
    assert code == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert row["preset"] == "tiny" and row["verified"] is True and row["log_n"] == 12
    assert set(GROUPS) <= set(row["groups_ms"]) and len(row["runs"]) == 2
    assert row["prove_s"] > 0 and row["key_load_s"] >= 0 and row["setup_s"] >= 0
    assert row["total_ms"] >= row["start_wall_ms"] + row["finish_wall_ms"] - 1


def test_a_proof_that_does_not_verify_exits_non_zero(cache: Path, capsys, monkeypatch) -> None:
    monkeypatch.setattr(proving, "verify", lambda vk, public, proof: False)
    code = main(["bench", "prove", "--preset", "tiny", "--repeat", "1", "--backend", "cpu", "--cache-dir", str(cache)])
    assert code == 1
    row = capsys.readouterr().out.splitlines()[1].split()
    assert row[0] == "tiny" and row[-1] == "NO"


def test_a_failing_preset_is_reported_and_the_others_still_run(cache: Path, capsys, monkeypatch) -> None:
    real = proving.load_key

    def load_key(path, backend):
        if "chain-" in str(path):
            raise MemoryError("out of device memory")
        return real(path, backend)

    monkeypatch.setattr(proving, "load_key", load_key)
    code = main(["bench", "prove", "--preset", "tiny,chain-64", "--repeat", "1", "--backend", "cpu",
                 "--cache-dir", str(cache)])
    out = capsys.readouterr().out
    assert code == 1
    assert out.splitlines()[1].split()[0] == "tiny"
    assert "chain-64: FAILED: MemoryError: out of device memory" in out


def test_unknown_preset_is_one_line(cache: Path) -> None:
    res = run(["bench", "prove", "--preset", "tiny,nosuch", "--backend", "cpu", "--cache-dir", str(cache)])
    assert_one_line_error(res, "unknown preset 'nosuch'")


@pytest.mark.parametrize(
    "argv, fragment",
    [
        (["--preset", "nosuch"], "unknown preset"),
        (["--preset", ","], "no preset"),
        (["--preset", "chain-0"], "unknown preset"),
        (["--preset", "tiny", "--sizes", "12"], "not allowed with"),
        (["--preset", "tiny", "--repeat", "0"], "--repeat"),
    ],
)
def test_bad_preset_arguments(argv: list[str], fragment: str, capsys) -> None:
    try:
        code = main(["bench", "prove", *argv])
    except SystemExit as exc:
        code = exc.code
    err = capsys.readouterr().err.strip()
    assert code == 2, err
    assert len(err.splitlines()) == 1 and fragment in err, err


def test_group_order_is_stable() -> None:
    assert bench_prove.order_groups(["zeta", "b2", "msm_a", "upload", "alpha", "ntt"]) == [
        "upload", "ntt", "msm_a", "b2", "alpha", "zeta"]
