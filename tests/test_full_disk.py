"""A disk that cannot take a write, seen the way an operator sees it: one line naming the file,
and the file at the target either the good one or absent, never empty or half-written.

The full disk is real, not a stub: the child process runs under a file-size limit
(RLIMIT_FSIZE, with SIGXFSZ ignored), so the kernel refuses the write past it with EFBIG through
the same write(2) that a full disk refuses with ENOSPC. No root, no tmpfs mount.
"""

from __future__ import annotations

import json
import os
import random
import resource
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = Path(__file__).parent / "data" / "session_fixture.jsonl"
TOO_LARGE = os.strerror(27)  # EFBIG: "File too large"


def _limited(limit: int):
    def pre() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
    return pre


def _python(code_or_args: list[str], limit: int, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, *code_or_args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120, preexec_fn=_limited(limit))


RECORD = """
import sys
from engine.stream.recorder import RecordingError, SessionRecorder
from engine.stream.reader import read_recording
import json
events = [json.loads(x) for x in open(sys.argv[2]).read().splitlines()[1:]]
try:
    rec = SessionRecorder(sys.argv[1])
except RecordingError as exc:
    print("START", exc)
    raise SystemExit(0)
n = 0
try:
    for ev in events:
        rec.write(ev)
        n += 1
    rec.close()
except RecordingError as exc:
    print("MIDWAY", n, exc)
"""


@pytest.mark.parametrize("suffix", [".jsonl", ".jsonl.gz"])
@pytest.mark.parametrize("there", ["absent", "a good session"])
def test_a_full_disk_at_the_start_leaves_the_record_target_as_it_was(tmp_path, suffix, there):
    target = tmp_path / f"run{suffix}"
    if there != "absent":
        old = os.urandom(random.randint(1, 3000))  # stands for the good file an earlier run left
        target.write_bytes(old)
    limit = random.randint(1, 40)  # the header alone is longer
    done = _python(["-c", RECORD, str(target), str(FIXTURE)], limit, tmp_path)
    assert done.returncode == 0, done.stderr
    if there == "absent":
        assert not target.exists()
    else:
        assert target.read_bytes() == old
    assert done.stdout.strip() == f"START cannot record to {target}: {TOO_LARGE}", done.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ([target.name] if there != "absent" else [])


def test_a_disk_that_fills_mid_run_leaves_a_readable_prefix(tmp_path):
    from engine.stream.reader import read_recording

    target = tmp_path / "run.jsonl"
    size = len(FIXTURE.read_bytes())
    limit = random.randint(size // 4, size // 2)
    done = _python(["-c", RECORD, str(target), str(FIXTURE)], limit, tmp_path)
    word, n, why = done.stdout.split(" ", 2)
    assert word == "MIDWAY" and why.strip() == f"recording to {target} failed: {TOO_LARGE}"
    assert target.stat().st_size == limit
    events = read_recording(target).events  # a cut last line is a warning, not an error
    expected = [json.loads(ln) for ln in FIXTURE.read_text().splitlines()[1:]]
    assert 0 < len(events) <= int(n) + 1 and events == expected[: len(events)]


def _setup_args(d: Path) -> list[str]:
    return ["-m", "engine", "setup", "--log-constraints", "3", "--backend", "cpu",
            "--pk", str(d / "k.pk"), "--vk", str(d / "k.vk.json")]


def test_setup_on_a_full_disk_names_the_key_file_and_keeps_the_old_one(tmp_path):
    warm = tmp_path / "warm"  # a first run unlimited: numba's cache is written, if it must be,
    warm.mkdir()  # before the limit, which would refuse its files too
    assert _python(_setup_args(warm), resource.RLIM_INFINITY, warm).returncode == 0
    tmp_path = tmp_path / "limited"
    tmp_path.mkdir()
    old = os.urandom(random.randint(10, 500))
    (tmp_path / "k.pk").write_bytes(old)
    done = _python(_setup_args(tmp_path), random.randint(2000, 8000), tmp_path)
    err = [ln for ln in done.stderr.splitlines() if ln.startswith("sealtop: ")]
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert err == [f"sealtop: setup: cannot write the proving key {tmp_path / 'k.pk'}: "
                   f"{TOO_LARGE} (the file there, if any, is unchanged)"], done.stderr
    assert "Errno" not in done.stderr
    assert (tmp_path / "k.pk").read_bytes() == old and not (tmp_path / "k.vk.json").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["k.pk"]  # no temp file left


def test_prove_on_a_full_disk_names_the_proof_file(tmp_path):
    made = _python(_setup_args(tmp_path), resource.RLIM_INFINITY, tmp_path)
    assert made.returncode == 0, made.stderr
    def prove(proof: Path, limit: int) -> subprocess.CompletedProcess:
        return _python(["-m", "engine", "prove", "--log-constraints", "3", "--backend", "cpu",
                        "--pk", str(tmp_path / "k.pk"), "--proof", str(proof),
                        "--public", str(proof.with_suffix(".json"))], limit, tmp_path)

    warm = prove(tmp_path / "warm.bin", resource.RLIM_INFINITY)  # numba's cache, unlimited
    assert warm.returncode == 0, warm.stderr
    proof = tmp_path / "p.bin"
    done = prove(proof, random.randint(1, 150))
    err = [ln for ln in done.stderr.splitlines() if ln.startswith("sealtop: ")]
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert err == [f"sealtop: prove: cannot write the proof {proof}: {TOO_LARGE} (the file there, "
                   "if any, is unchanged)"], done.stderr
    assert not proof.exists() and not (tmp_path / "p.json").exists()


def test_setup_whose_verification_key_cannot_be_written_says_the_proving_key_was(
        tmp_path, monkeypatch, capsys):
    """The disk fills between setup's two files (here the verification key's write is refused
    with ENOSPC): the line names the file that failed and the proving key it did write."""
    import errno

    import engine.groth16.vkey as vkey
    from engine.verbs.cli import main

    def full(vk, path) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(vkey, "save_vk", full)
    old_vk = os.urandom(random.randint(1, 300))
    (tmp_path / "k.vk.json").write_bytes(old_vk)
    assert main(_setup_args(tmp_path)[2:]) == 2
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("sealtop: ")]
    assert err == [f"sealtop: setup: cannot write the verification key {tmp_path / 'k.vk.json'}: "
                   f"{os.strerror(errno.ENOSPC)} (the file there, if any, is unchanged; the "
                   f"proving key {tmp_path / 'k.pk'} was written: run it again once there is "
                   "room)"]
    assert (tmp_path / "k.vk.json").read_bytes() == old_vk and (tmp_path / "k.pk").is_file()
