"""Error lines an operator reads: every console verb names itself (`sealtop: VERB: ...`, as the
headless verbs do), and the key and disk errors say what is wrong with which file."""

from __future__ import annotations

import random
import string

import pytest

pytest.importorskip("textual")

from app.main import main  # noqa: E402


def _name(tmp_path, suffix: str) -> str:
    stem = "".join(random.choices(string.ascii_lowercase, k=random.randint(4, 12)))
    return str(tmp_path / f"{stem}{suffix}")


def _one_line(capsys) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err.rstrip("\n")


@pytest.mark.parametrize("verb", ["replay", "compare", "attach", "serve", "console-config",
                                  "console-record"])
def test_each_console_verb_names_itself_in_its_error_line(tmp_path, capsys, verb):
    missing = _name(tmp_path, ".jsonl")
    argv = {
        "replay": ["replay", missing],
        "compare": ["compare", missing, _name(tmp_path, ".jsonl")],
        "attach": ["attach", "--engine", _name(tmp_path, ".sock")],
        "serve": ["serve", "--engine", _name(tmp_path, ".sock")],
        "console-config": ["--config", _name(tmp_path, ".toml"), "--no-attach"],
        "console-record": ["--record", str(tmp_path), "--no-attach"],
    }[verb]
    assert main(argv) == 2
    line = _one_line(capsys)
    named = verb.split("-")[0]
    assert line.startswith(f"sealtop: {named}: "), line
    assert not line.startswith(f"sealtop: {named}: {named}:"), line  # named once
    if verb in ("replay", "compare"):
        assert missing in line and "cannot read session" in line
    elif verb == "console-config":
        assert argv[1] in line and "cannot read config" in line
    elif verb == "console-record":
        assert "cannot record to" in line and "directory" in line
    else:
        assert argv[2] in line or "textual-serve" in line


def test_help_says_the_config_read_without_one(capsys):
    """A plain `sealtop` reads ./sealtop.toml when it is there: --help says so."""
    with pytest.raises(SystemExit):
        main(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "./sealtop.toml when there is one" in text and "default: built-in defaults" not in text
