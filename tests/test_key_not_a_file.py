"""A key path that holds no file (a directory, a named pipe) is said to be what it is, not
called a damaged key: running setup over it (damaged_key = "regenerate") cannot help."""

from __future__ import annotations

import os
import random
import threading

import pytest

from engine.groth16.keyfile import KeyFileError, NotAKeyFile, load_proving_key
from engine.pipeline import proving
from engine.pipeline.circuits import resolve


@pytest.mark.parametrize("damaged", ["refuse", "regenerate"])
def test_a_directory_where_the_key_goes_is_named_a_directory(tmp_path, damaged):
    circuit = resolve("chain-256")
    path = proving.key_path(tmp_path, circuit.name, circuit.r1cs)
    path.mkdir()
    inside = path / f"f{random.randint(0, 999)}"
    inside.write_text("kept")
    lines: list[str] = []
    with pytest.raises(NotAKeyFile) as info:
        proving.ensure_key(circuit, tmp_path, progress=lines.append, damaged=damaged)
    msg = str(info.value)
    assert msg.startswith(f"{path} is a directory, not a proving key file"), msg
    assert "damaged" not in msg and "regenerate" not in msg and "\n" not in msg
    assert not any("running setup" in ln for ln in lines)
    assert path.is_dir() and inside.read_text() == "kept"


def test_a_named_pipe_is_refused_at_once_not_waited_on(tmp_path):
    pipe = tmp_path / "k.pk"
    os.mkfifo(pipe)
    got: list[BaseException] = []

    def load() -> None:
        try:
            load_proving_key(pipe)
        except BaseException as exc:  # noqa: BLE001 - handed to the test's thread
            got.append(exc)

    t = threading.Thread(target=load, daemon=True)
    t.start()
    t.join(20)
    if t.is_alive():  # let the open return, so no thread is left behind
        with open(pipe, "wb"):
            pass
        t.join(5)
        pytest.fail("loading a named pipe waited for a writer")
    assert len(got) == 1 and isinstance(got[0], KeyFileError)
    assert str(got[0]) == (f"{pipe} is a named pipe, not a proving key file: move it away or "
                           "name the proving key file itself")


def test_a_regular_file_that_is_no_key_is_still_a_bad_key(tmp_path):
    p = tmp_path / "k.pk"
    p.write_bytes(os.urandom(random.randint(1, 5000)))
    with pytest.raises(KeyFileError) as info:
        load_proving_key(p)
    assert not isinstance(info.value, NotAKeyFile) and "not a sealtop proving key" in str(info.value)


@pytest.mark.parametrize("kind", ["directory", "named pipe"])
def test_prove_with_a_pk_that_is_no_file_says_so_in_one_line(tmp_path, capsys, kind):
    from engine.verbs.cli import main

    pk = tmp_path / "k.pk"
    pk.mkdir() if kind == "directory" else os.mkfifo(pk)
    code = main(["prove", "--log-constraints", "3", "--pk", str(pk), "--proof",
                 str(tmp_path / "p.bin"), "--public", str(tmp_path / "p.json")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1, err
    assert err.startswith(f"sealtop: prove: {pk} is a {kind}, not a proving key file")
    assert "damaged" not in err and not (tmp_path / "p.bin").exists()
