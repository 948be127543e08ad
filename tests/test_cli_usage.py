"""The command line as a new user meets it: every verb named in --help and in the unknown-verb
message, one `sealtop: ...` line for every usage error (console and headless alike), help texts
without argparse's %% escapes, `export --out-dir` making its folder, and the progress of the
long verbs (prove, setup): plain lines piped, a rich bar on a terminal."""

from __future__ import annotations

import io
import json
import os
import pty
import re
import secrets
import subprocess
import sys
import time
from pathlib import Path

import pytest

from app.main import main as sealtop
from engine.verbs.cli import all_verbs, headless_verbs
from engine.verbs.cli import main as engine_main
from engine.verbs.common import CONSOLE_VERBS
from engine.verbs.progress import Steps

ROOT = Path(__file__).resolve().parents[1]
PROGRESS = re.compile(r"^(prove|setup) (\d+)/(\d+): (.*) \[(\d+\.\d) s\]$")


def _exit_code(fn, argv: list[str]) -> int:
    try:
        return int(fn(argv) or 0)
    except SystemExit as exc:  # argparse's help and usage errors exit through SystemExit
        return int(exc.code or 0)


def test_every_verb_is_named_by_help_and_by_the_unknown_verb_message(capsys) -> None:
    verbs = all_verbs()
    assert {"compare", "attach", "serve", "replay", "setup", "prove", "verify", "export", "run",
            "bench", "cluster"} <= set(verbs)
    assert _exit_code(sealtop, ["--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())  # argparse wraps the epilog
    for v in verbs:
        assert re.search(rf"\b{v}\b", out.split("console verbs:", 1)[1]), (v, out)
    assert _exit_code(engine_main, ["--help"]) == 0
    out = capsys.readouterr().out
    assert all(v in out for v in CONSOLE_VERBS) and all(v in out for v in headless_verbs())
    word = "no-such-verb-" + secrets.token_hex(3)
    for fn in (sealtop, engine_main):
        assert _exit_code(fn, [word]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith(f"sealtop: unknown verb '{word}' (verbs: "), err
        listed = err.split("(verbs: ", 1)[1].rstrip(")\n").split(", ")
        assert listed == verbs, listed
    # a console verb given to `python -m engine`: told where it runs, in one line
    assert _exit_code(engine_main, ["compare", "a", "b"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("sealtop: 'compare' is a console verb"), err


@pytest.mark.parametrize("argv", [["bench", "pipeline", "--help"], ["bench", "--help"]])
def test_help_prints_percent_signs_once(argv: list[str], capsys) -> None:
    assert _exit_code(engine_main, argv) == 0
    out = capsys.readouterr().out
    assert "GPU busy %" in " ".join(out.split()) and "%%" not in out, out


CONSOLE_USAGE_ERRORS = [
    (["--refresh", "0"], "sealtop: argument --refresh: must be between"),
    (["--bogus"], "sealtop: unrecognized arguments: --bogus"),
    (["--theme", "nope"], "sealtop: argument --theme: invalid choice"),
    (["replay"], "sealtop: replay: the following arguments are required: FILE"),
    (["replay", "x.jsonl", "--speed", "3"], "sealtop: replay: argument --speed: invalid choice"),
    (["compare", "a.jsonl"], "sealtop: compare: the following arguments are required: FILE_B"),
    (["attach", "--bogus"], "sealtop: attach: unrecognized arguments: --bogus"),
]


@pytest.mark.parametrize(("argv", "start"), CONSOLE_USAGE_ERRORS)
def test_console_usage_errors_are_one_sealtop_line(argv: list[str], start: str, capsys) -> None:
    assert _exit_code(sealtop, argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(start), err
    assert "usage:" not in err and "error:" not in err, err


def test_every_headless_verb_reports_a_bad_argument_in_the_same_line(capsys) -> None:
    """Each verb (and each bench and cluster sub-verb) through the `sealtop` entry point: an
    unknown option (or, first, a required one left out) is one line `sealtop: VERB: ...`,
    exit 2; so is a missing option value."""
    verbs = [v for v in headless_verbs() if v not in ("bench", "cluster")]
    verbs += ["bench prove", "bench synth", "bench pipeline", "cluster scheduler", "cluster worker"]
    required = {"export": "--vk", "run": "--config", "seal": "--sector-size"}
    for verb in verbs:
        argv = [*verb.split(), "--no-such-option-" + secrets.token_hex(2)]
        if verb == "replay":
            argv[1:1] = ["x.jsonl", "--summary"]  # headless replay
        says = (f"the following arguments are required: {required[verb]}" if verb in required
                else f"unrecognized arguments: {argv[-1]}")
        assert _exit_code(sealtop, argv) == 2, argv
        err = capsys.readouterr().err
        assert err.count("\n") == 1, (argv, err)
        assert err.startswith(f"sealtop: {verb}: {says}") and err.rstrip().endswith(
            f"(see `sealtop {verb} --help`)"), (argv, err)
    assert _exit_code(sealtop, ["run", "--jobs"]) == 2
    err = capsys.readouterr().err
    assert err == "sealtop: run: argument --jobs: expected one argument (see `sealtop run --help`)\n", err


@pytest.fixture(scope="module")
def cubic_keys(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("usage")
    seed = secrets.token_hex(4)
    assert engine_main(["setup", "--circuit", "cubic", "--seed", seed, "--pk", str(d / "c.pk"),
                        "--vk", str(d / "c.vk.json"), "--backend", "cpu"]) == 0
    assert engine_main(["prove", "--circuit", "cubic", "--pk", str(d / "c.pk"), "--backend", "cpu",
                        "--proof", str(d / "p.bin"), "--public", str(d / "pub.json")]) == 0
    return d


def test_export_makes_a_missing_out_dir_inside_an_existing_folder(cubic_keys: Path, tmp_path: Path,
                                                                  capsys) -> None:
    d = cubic_keys
    out = tmp_path / ("snarkjs-" + secrets.token_hex(3))
    argv = ["export", "--vk", str(d / "c.vk.json"), "--proof", str(d / "p.bin"), "--public",
            str(d / "pub.json"), "--out-dir", str(out) + "/"]
    assert engine_main(argv) == 0
    assert sorted(p.name for p in out.iterdir()) == ["proof.json", "public.json", "verification_key.json"]
    vk = json.loads((out / "verification_key.json").read_text())
    assert vk["protocol"] == "groth16" and vk["curve"] == "bls12381"
    assert json.loads((out / "public.json").read_text()) == json.loads((d / "pub.json").read_text())
    assert engine_main(argv) == 0  # an existing folder is used as it is
    capsys.readouterr()
    # two missing levels: refused in one line, nothing made
    deep = tmp_path / "a" / "b"
    assert engine_main([*argv[:-1], str(deep)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("sealtop: export: --out-dir: folder ") and "does not exist" in err
    assert not (tmp_path / "a").exists()
    # a bad input: refused before the folder is made
    fresh = tmp_path / "fresh"
    assert engine_main(["export", "--vk", str(tmp_path / "missing.json"), "--out-dir", str(fresh)]) == 2
    assert not fresh.exists()
    # a file where the folder should be
    (tmp_path / "f").write_text("x")
    assert engine_main([*argv[:-1], str(tmp_path / "f")]) == 2
    assert "exists and is not a folder" in capsys.readouterr().err


def test_prove_and_setup_show_their_steps_when_piped(cubic_keys: Path, tmp_path: Path, capsys) -> None:
    capsys.readouterr()
    assert engine_main(["setup", "--circuit", "chain", "--n", str(secrets.randbelow(20) + 4),
                        "--pk", str(tmp_path / "k.pk"), "--vk", str(tmp_path / "k.vk.json"),
                        "--backend", "cpu"]) == 0
    assert engine_main(["prove", "--circuit", "cubic", "--pk", str(cubic_keys / "c.pk"), "--backend", "cpu",
                        "--proof", str(tmp_path / "p.bin"), "--public", str(tmp_path / "pub.json")]) == 0
    cap = capsys.readouterr()
    assert cap.out.count("\n") == 2  # stdout keeps only the two result lines
    for verb in ("setup", "prove"):
        steps = [PROGRESS.match(ln) for ln in cap.err.splitlines()]
        steps = [m for m in steps if m and m.group(1) == verb]
        numbers = [int(m.group(2)) for m in steps]
        total = int(steps[0].group(3))
        assert numbers[0] == 1 and numbers[-1] == total and numbers == sorted(numbers), cap.err
        assert set(range(1, total + 1)) <= set(numbers), cap.err
        elapsed = [float(m.group(5)) for m in steps]
        assert elapsed == sorted(elapsed), cap.err
    whats = " ".join(m.group(4) for m in map(PROGRESS.match, cap.err.splitlines()) if m)
    for said in ("building the circuit", "loading the proving key", "computing the witness", "proving on cpu",
                 "verifying the proof", "scalars and fixed-base MSMs", "writing"):
        assert said in whats, (said, cap.err)


def test_a_long_step_piped_says_it_is_still_running() -> None:
    """A beat each heartbeat_s of a long step, never more often. The step lasts until two beats
    are out (a fixed sleep gave a starved beat thread too few, or an overslept one too many),
    and the beats are bounded by how long it really lasted."""
    buf = io.StringIO()
    beat = "prove 2/2: slow (still running) ["
    with Steps("prove", 2, stream=buf, fancy=False, heartbeat_s=0.2) as steps:
        steps.step("quick")
        t0 = time.monotonic()
        steps.step("slow")
        deadline = t0 + 30
        while buf.getvalue().count(beat) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
    lasted = time.monotonic() - t0  # the beat thread has been joined
    lines = buf.getvalue().splitlines()
    assert lines[0].startswith("prove 1/2: quick [") and lines[1].startswith("prove 2/2: slow [")
    beats = [ln for ln in lines if ln.startswith(beat)]
    assert 2 <= len(beats) <= lasted / 0.2, (lasted, lines)
    assert all(PROGRESS.match(ln) for ln in lines), lines


def test_prove_on_a_terminal_draws_a_bar_with_steps_and_elapsed_time(cubic_keys: Path, tmp_path: Path) -> None:
    """A real pseudo-terminal on stderr: rich's bar (its bar glyphs, n/N, h:mm:ss) instead of lines."""
    master, slave = pty.openpty()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "120", "TERM": "xterm-256color"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "engine", "prove", "--circuit", "cubic", "--pk", str(cubic_keys / "c.pk"),
         "--backend", "cpu", "--proof", str(tmp_path / "p.bin"), "--public", str(tmp_path / "pub.json")],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=slave, env=env, cwd=tmp_path)
    os.close(slave)
    seen = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        seen += chunk
    out = proc.stdout.read().decode() if proc.stdout else ""
    assert proc.wait(timeout=120) == 0, seen
    os.close(master)
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", seen.decode(errors="replace"))
    assert "━" in text and "5/5" in text and re.search(r"\d:\d\d:\d\d", text), text
    assert not any(PROGRESS.match(ln.strip()) for ln in text.splitlines()), text
    assert out.startswith("proved cubic"), out
