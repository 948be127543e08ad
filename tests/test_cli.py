"""The headless verbs from the shell: the whole path, --help everywhere, and bad input as one
line on stderr with a non-zero exit and no traceback."""

from __future__ import annotations

import json
import re
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

from engine.verbs.cli import main
from kernels.constants import R_MOD

ROOT = Path(__file__).resolve().parents[1]


def run(args: list[str], cwd: Path, timeout: int = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "engine", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env=_env())


def _env() -> dict:
    import os

    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


# prove's and setup's progress lines on a pipe (engine/verbs/progress.py): "prove 2/5: ... [0.3 s]"
PROGRESS = re.compile(r"^(prove|setup) \d+/\d+: .* \[\d+\.\d s\]$")


def error_lines(err: str) -> list[str]:
    """stderr without the progress lines (each of which must be one): what is left is errors."""
    return [ln for ln in err.strip().splitlines() if not PROGRESS.match(ln)]


def assert_one_line_error(res: subprocess.CompletedProcess, fragment: str, code: int = 2) -> None:
    assert res.returncode == code, (res.returncode, res.stdout, res.stderr)
    err = res.stderr.strip()
    assert "Traceback" not in res.stderr
    assert len(error_lines(err)) == 1, err
    assert fragment in error_lines(err)[0] and error_lines(err)[0].startswith("sealtop: "), err


@pytest.fixture(scope="module")
def cubic(tmp_path_factory) -> Path:
    """setup + prove + verify through the CLI, each in its own process."""
    d = tmp_path_factory.mktemp("cli")
    seed = secrets.token_hex(6)
    res = run(["setup", "--circuit", "cubic", "--seed", seed, "--pk", "c.pk", "--vk", "c.vk.json", "--backend", "cpu"], d)
    assert res.returncode == 0, res.stderr
    assert "INSECURE TEST PARAMETERS" in res.stdout and "INSECURE TEST PARAMETERS" in res.stderr
    x = secrets.randbelow(R_MOD)
    res = run(["prove", "--circuit", "cubic", "--pk", "c.pk", "--x", str(x), "--backend", "cpu"], d)
    assert res.returncode == 0, res.stderr
    assert json.loads((d / "public.json").read_text()) == [str((x**3 + x + 5) % R_MOD)]
    assert len((d / "proof.bin").read_bytes()) == 192
    return d


def test_setup_prove_verify(cubic: Path) -> None:
    res = run(["verify", "--vk", "c.vk.json"], cubic)
    assert res.returncode == 0 and res.stdout.startswith("valid"), (res.stdout, res.stderr)


def test_verify_rejects_wrong_public_input(cubic: Path, tmp_path: Path) -> None:
    pub = json.loads((cubic / "public.json").read_text())
    (tmp_path / "pub.json").write_text(json.dumps([str((int(pub[0]) + 1) % R_MOD)]))
    res = run(["verify", "--vk", str(cubic / "c.vk.json"), "--proof", str(cubic / "proof.bin"),
               "--public", str(tmp_path / "pub.json")], cubic)
    assert res.returncode == 1 and res.stdout.startswith("INVALID")


def test_malformed_proof_bytes(cubic: Path, tmp_path: Path) -> None:
    (tmp_path / "short.bin").write_bytes((cubic / "proof.bin").read_bytes()[:100])
    res = run(["verify", "--vk", "c.vk.json", "--proof", str(tmp_path / "short.bin")], cubic)
    assert_one_line_error(res, "192 bytes")
    (tmp_path / "junk.bin").write_bytes(b"\x80" + bytes(secrets.token_bytes(191)))
    res = run(["verify", "--vk", "c.vk.json", "--proof", str(tmp_path / "junk.bin")], cubic)
    assert res.returncode in (1, 2) and "Traceback" not in res.stderr
    if res.returncode == 2:
        assert_one_line_error(res, "malformed proof")
    res = run(["export", "--vk", "c.vk.json", "--proof", str(tmp_path / "short.bin"), "--out-dir", str(tmp_path)], cubic)
    assert_one_line_error(res, "192 bytes")


def test_truncated_key_file(cubic: Path, tmp_path: Path) -> None:
    raw = (cubic / "c.pk").read_bytes()
    (tmp_path / "t.pk").write_bytes(raw[: len(raw) - 1000])
    res = run(["prove", "--circuit", "cubic", "--pk", str(tmp_path / "t.pk"), "--proof", str(tmp_path / "p"),
               "--public", str(tmp_path / "q"), "--backend", "cpu"], cubic)
    assert_one_line_error(res, "truncated")
    assert not (tmp_path / "p").exists()


def test_checksum_mismatch(cubic: Path, tmp_path: Path) -> None:
    raw = bytearray((cubic / "c.pk").read_bytes())
    raw[-200] ^= 0x10
    (tmp_path / "x.pk").write_bytes(bytes(raw))
    res = run(["prove", "--circuit", "cubic", "--pk", str(tmp_path / "x.pk"), "--proof", str(tmp_path / "p"),
               "--public", str(tmp_path / "q"), "--backend", "cpu"], cubic)
    assert_one_line_error(res, "checksum")


def test_key_for_another_circuit(cubic: Path, tmp_path: Path) -> None:
    res = run(["prove", "--circuit", "chain", "--n", "3", "--pk", str(cubic / "c.pk"), "--proof", str(tmp_path / "p"),
               "--public", str(tmp_path / "q"), "--backend", "cpu"], cubic)
    assert_one_line_error(res, "different circuit")


def test_bad_verification_key_and_public_file(cubic: Path, tmp_path: Path) -> None:
    (tmp_path / "vk.json").write_text("{not json")
    assert_one_line_error(run(["verify", "--vk", str(tmp_path / "vk.json")], cubic), "not valid JSON")
    (tmp_path / "pub.json").write_text('["12", "abc"]')
    res = run(["verify", "--vk", "c.vk.json", "--public", str(tmp_path / "pub.json")], cubic)
    assert_one_line_error(res, "not an integer")
    res = run(["verify", "--vk", "c.vk.json", "--public", str(tmp_path / "missing.json")], cubic)
    assert_one_line_error(res, "cannot read")


@pytest.mark.parametrize(
    "argv, fragment",
    [
        (["nonsense"], "unknown verb 'nonsense' (verbs: replay, compare, attach, serve, setup,"),
        (["setup", "--circuit", "chain"], "--n"),
        (["setup", "--circuit", "chain", "--n", "0"], "--n"),
        (["setup", "--circuit", "square"], "invalid choice"),
        (["prove", "--circuit", "cubic"], "--pk"),
        (["prove", "--circuit", "cubic", "--pk", "/nonexistent/k.pk"], "cannot read"),
        (["verify", "--vk", "x", "--bogus"], "unrecognized"),
        (["bench", "prove", "--sizes", "abc"], "--sizes"),
        (["bench", "kernels", "--what", "nope"], "nope"),
        (["export", "--vk", "x", "--out-dir", "/nonexistent/dir"], "does not exist"),
        (["bench", "pipeline", "--json", "/nonexistent/r.json"], "does not exist"),
        (["bench", "pipeline", "--metrics", "host:port"], "--metrics"),
        (["run", "--config", "c.toml", "--metrics", "70000"], "0..65535"),
    ],
)
def test_bad_arguments_in_process(argv: list[str], fragment: str, capsys) -> None:
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse errors exit through SystemExit
        code = exc.code
    err = capsys.readouterr().err.strip()
    assert code == 2, err
    assert len(err.splitlines()) == 1 and fragment in err, err
    assert err.startswith("sealtop: ") and "error:" not in err, err


def test_every_verb_has_help(capsys) -> None:
    for argv in (["--help"], ["setup", "--help"], ["prove", "--help"], ["verify", "--help"], ["export", "--help"],
                 ["bench", "--help"], ["bench", "prove", "--help"], ["bench", "kernels", "--help"]):
        with pytest.raises(SystemExit) as info:
            main(argv)
        assert info.value.code == 0, argv
        assert "usage" in capsys.readouterr().out, argv


def test_bench_prove_small(tmp_path: Path, capsys) -> None:
    code = main(["bench", "prove", "--sizes", "4", "--repeat", "1", "--backend", "cpu", "--cache-dir", str(tmp_path),
                 "--json"])
    out = capsys.readouterr().out
    assert code == 0
    (row,) = json.loads(out)
    assert row["constraints"] == 16 and row["verified"] is True and row["prove_s"] > 0
    assert {"ntt", "msm_h", "msm_a", "msm_b1", "msm_l", "b2", "load"} <= set(row["ms"])
    assert len(list(tmp_path.glob("*.pk"))) == 2  # the warm-up circuit's key and the 2^4 key, cached


def _flip_h_section(src: Path, dst: Path) -> None:
    """A copy of the key with one byte of every H-query point's x flipped (points that are then
    off the curve): the data a proof is computed from, not padding, not the verifying key."""
    from engine.groth16.keyfile import read_header

    raw = bytearray(src.read_bytes())
    _name, off, rows, cols = next(e for e in read_header(src)["sections"] if e[0] == "h")
    for r in range(rows):
        raw[off + r * cols * 8 + 3] ^= 0x04
    dst.write_bytes(bytes(raw))


def test_prove_verifies_the_proof_before_writing_it(cubic: Path, tmp_path: Path, capsys) -> None:
    """With the checksum skipped, a damaged key makes a bad proof: prove says so (exit 1) and
    writes nothing, unless told --no-verify; then `verify` refuses what it wrote."""
    _flip_h_section(cubic / "c.pk", tmp_path / "d.pk")
    args = ["prove", "--circuit", "cubic", "--pk", str(tmp_path / "d.pk"), "--no-checksum",
            "--proof", str(tmp_path / "p.bin"), "--public", str(tmp_path / "pub.json"),
            "--backend", "cpu"]
    assert main(args) == 1
    err = error_lines(capsys.readouterr().err)
    assert len(err) == 1 and err[0].startswith("sealtop: prove: the proof was not written"), err
    assert not (tmp_path / "p.bin").exists()
    assert main(args + ["--no-verify"]) == 0
    capsys.readouterr()
    assert (tmp_path / "p.bin").exists()
    code = main(["verify", "--vk", str(cubic / "c.vk.json"), "--proof", str(tmp_path / "p.bin"),
                 "--public", str(tmp_path / "pub.json")])
    assert code in (1, 2)
    # an intact key: the proof is verified and written
    assert main(args[:4] + [str(cubic / "c.pk")] + args[5:]) == 0
    assert "verified" in capsys.readouterr().out


@pytest.mark.parametrize("part, lo, hi", [("A", 0, 48), ("B", 48, 144), ("C", 144, 192)])
def test_non_canonical_infinity_is_malformed(cubic: Path, tmp_path: Path, capsys, part, lo, hi):
    """Encodings of the point at infinity with stray bits that the oracle's decoder accepts are
    still not canonical: `verify` calls them malformed (exit 2), not INVALID (exit 1)."""
    import py_arkworks_bls12381 as ark

    good = (cubic / "proof.bin").read_bytes()
    size = hi - lo
    cls = ark.G1Point if size == 48 else ark.G2Point
    stray = [bytes([0xE0]) + bytes(size - 1), bytes([0xC1]) + bytes(size - 1),
             bytes([0xC0]) + bytes(size - 2) + bytes([secrets.randbelow(255) + 1])]
    for enc in stray:
        cls.from_compressed_bytes(enc)  # the oracle alone would take it
        bad = good[:lo] + enc + good[hi:]
        (tmp_path / "inf.bin").write_bytes(bad)
        code = main(["verify", "--vk", str(cubic / "c.vk.json"), "--proof",
                     str(tmp_path / "inf.bin"), "--public", str(cubic / "public.json")])
        err = capsys.readouterr().err.strip()
        assert code == 2 and len(err.splitlines()) == 1 and "malformed proof" in err, (enc, err)
    # the canonical infinity is well formed (and, as A, C or B here, not a valid proof)
    canon = bytes([0xC0]) + bytes(size - 1)
    (tmp_path / "inf.bin").write_bytes(good[:lo] + canon + good[hi:])
    assert main(["verify", "--vk", str(cubic / "c.vk.json"), "--proof", str(tmp_path / "inf.bin"),
                 "--public", str(cubic / "public.json")]) == 1
