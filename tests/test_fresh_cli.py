"""setup's and prove's output files and key checked before the work: a directory or a missing
folder where a key, proof or public file goes failed only at the write, after the whole setup
or proof ("[Errno 21] Is a directory: '.adir.x.tmp' -> 'adir'"), and a key of another circuit
was found out after the witness. Each is one `sealtop: VERB: ...` line and exit 2, with no
step of the work begun."""

from __future__ import annotations

import secrets
from pathlib import Path

import pytest

from engine.verbs.cli import main

STEP_WORK = ("computing the witness", "proving on", "fixed-base MSMs", "writing")


def run(argv: list[str], capsys) -> tuple[int, list[str]]:
    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code
    return int(code or 0), capsys.readouterr().err.strip().splitlines()


def error_of(lines: list[str]) -> str:
    """The one line that is not a progress step."""
    errors = [ln for ln in lines if ln.startswith("sealtop: ")]
    assert len(errors) == 1, lines
    return errors[0]


@pytest.mark.parametrize("flag", ["--pk", "--vk"])
def test_setup_refuses_a_directory_or_missing_folder_first(tmp_path: Path, flag: str, capsys) -> None:
    there = tmp_path / f"d{secrets.token_hex(3)}"
    there.mkdir()
    other = "--vk" if flag == "--pk" else "--pk"
    for target, words in ((there, "is a directory"), (tmp_path / "missing" / "k", "does not exist")):
        code, lines = run(["setup", "--circuit", "cubic", flag, str(target), other,
                           str(tmp_path / "other"), "--backend", "cpu"], capsys)
        err = error_of(lines)
        assert code == 2 and err.startswith(f"sealtop: setup: {flag}: ") and words in err, lines
        assert not any(w in ln for ln in lines for w in STEP_WORK), lines
    assert list(there.iterdir()) == [] and not (tmp_path / "other").exists()


def test_prove_refuses_bad_outputs_and_another_circuits_key_first(tmp_path: Path, capsys) -> None:
    pk, vk = tmp_path / "c.pk", tmp_path / "c.vk.json"
    code, _ = run(["setup", "--circuit", "cubic", "--seed", secrets.token_hex(4), "--pk", str(pk),
                   "--vk", str(vk), "--backend", "cpu"], capsys)
    assert code == 0
    (tmp_path / "adir").mkdir()
    proof, public = str(tmp_path / "p.bin"), str(tmp_path / "p.json")
    for flag, target, words in (("--proof", tmp_path / "adir", "is a directory"),
                                ("--public", tmp_path / "adir", "is a directory"),
                                ("--proof", tmp_path / "missing" / "p.bin", "does not exist")):
        outs = {"--proof": proof, "--public": public, flag: str(target)}
        code, lines = run(["prove", "--circuit", "cubic", "--pk", str(pk), "--x", "3",
                           "--backend", "cpu", *[a for kv in outs.items() for a in kv]], capsys)
        err = error_of(lines)
        assert code == 2 and err.startswith(f"sealtop: prove: {flag}: ") and words in err, lines
        assert not any(w in ln for ln in lines for w in STEP_WORK), lines
    # cubic's key given for a chain: refused when the key is loaded, before the witness
    code, lines = run(["prove", "--circuit", "chain", "--n", "3", "--pk", str(pk), "--proof", proof,
                       "--public", public, "--backend", "cpu"], capsys)
    err = error_of(lines)
    assert code == 2 and err.startswith("sealtop: prove: --pk: ") and "different circuit" in err
    assert not any(w in ln for ln in lines for w in STEP_WORK), lines
    assert not Path(proof).exists() and not Path(public).exists()


def test_run_and_bench_refuse_a_bad_record_or_json_target_first(tmp_path: Path, capsys) -> None:
    """The verb's own line, before any engine starts (bench pipeline --json DIR ran the whole
    benchmark, then failed with Errno 21; a bad --record read 'sealtop: cannot record ...')."""
    there = tmp_path / f"d{secrets.token_hex(3)}"
    there.mkdir()
    config = str(Path(__file__).resolve().parents[1] / "sample-configs" / "cpu-only.toml")
    cases = [
        (["run", "--config", config, "--record", str(there)], "sealtop: run: cannot record to",
         "it is a directory"),
        (["run", "--config", config, "--record", str(tmp_path / "no" / "r.jsonl")],
         "sealtop: run: cannot record to", "does not exist"),
        (["bench", "pipeline", "--preset", "tiny", "--record", str(there)],
         "sealtop: bench pipeline: cannot record to", "it is a directory"),
        (["bench", "pipeline", "--preset", "tiny", "--json", str(there)],
         "sealtop: bench pipeline: --json: ", "is a directory"),
    ]
    for argv, start, words in cases:
        code, lines = run([*argv, "--no-attach"], capsys)
        assert code == 2 and len(lines) == 1, (argv, lines)
        assert lines[0].startswith(start) and words in lines[0], (argv, lines)
    assert list(there.iterdir()) == []


def test_every_console_argument_says_what_it_does() -> None:
    """`sealtop replay --help` listed FILE, --speed, --theme and --refresh with no words."""
    from app.main import _compare_parser, _parser, _replay_parser
    from app.serve import attach_parser, serve_parser

    for parser in (_parser(), _replay_parser(), _compare_parser(), attach_parser(), serve_parser()):
        bare = [a.dest for a in parser._actions if not a.help]
        assert bare == [], (parser.prog, bare)
