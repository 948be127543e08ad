"""The compact form's coefficient table and indices kept in the circuit's cache entry
(engine/groth16/sidecar.py): made once, then memory-mapped by the next process, equal to the
form made in memory from the coefficients (and each index naming its coefficient, checked as
Python integers); a damaged or foreign file is made again, and a read-only entry still works."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from engine.circuit.porep import build_porep
from engine.groth16.compact import compact_r1cs
from kernels.cpu.convert import from_mont_fr

NAMES = ["compact_coefs", "A_cidx", "B_cidx", "C_cidx"]


def _entry(r) -> Path:
    return Path(r.A.data.filename).parent


def _same(a, b) -> bool:
    return np.array_equal(a.coefs, b.coefs) and all(
        np.array_equal(x.cidx, y.cidx) and np.array_equal(x.cols, y.cols) and np.array_equal(x.rowptr, y.rowptr)
        for x, y in ((a.A, b.A), (a.B, b.B), (a.C, b.C)))


def test_compact_form_is_kept_in_the_cache_entry(tmp_path: Path) -> None:
    r = build_porep("tiny", tmp_path).r1cs
    entry = _entry(r)
    made = compact_r1cs(r)
    assert sorted(p.name for p in entry.glob("*.npy") if p.stem in NAMES) == sorted(f"{n}.npy" for n in NAMES)
    again = compact_r1cs(build_porep("tiny", tmp_path).r1cs)  # another process's view: the files
    assert isinstance(again.coefs, np.memmap)  # and the indices are views of the mapped files
    assert all(not m.cidx.flags.owndata and not m.cidx.flags.writeable for m in (again.A, again.B, again.C))
    fresh = compact_r1cs(build_porep("tiny", None).r1cs)  # not mapped: made in memory
    assert not isinstance(fresh.coefs, np.memmap)
    assert _same(made, again) and _same(fresh, again)
    table = from_mont_fr(np.asarray(again.coefs))
    rnd = random.Random()
    for m, cm in zip((r.A, r.B, r.C), (again.A, again.B, again.C)):
        ks = rnd.sample(range(m.nnz), min(m.nnz, 300))
        assert [table[int(cm.cidx[k])] for k in ks] == from_mont_fr(np.asarray(m.data)[ks])


@pytest.mark.parametrize("damage", ["truncated", "short", "foreign"])
def test_a_damaged_kept_file_is_made_again(tmp_path: Path, damage: str) -> None:
    r = build_porep("tiny", tmp_path).r1cs
    entry = _entry(r)
    want = compact_r1cs(build_porep("tiny", None).r1cs)
    compact_r1cs(r)
    if damage == "truncated":  # not a whole .npy file
        with open(entry / "B_cidx.npy", "r+b") as f:
            f.truncate(40)
    elif damage == "short":  # a whole file of the wrong length
        np.save(entry / "C_cidx.npy", np.zeros(3, np.uint16))
    else:  # a table whose fixed entries are not +1 and -1
        np.save(entry / "compact_coefs.npy", np.zeros((5, 4), np.uint64))
    got = compact_r1cs(build_porep("tiny", tmp_path).r1cs)
    assert _same(got, want)
    assert _same(compact_r1cs(build_porep("tiny", tmp_path).r1cs), want)  # the files were remade


def test_an_unwritable_entry_still_gives_the_form(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from engine.groth16 import sidecar

    r = build_porep("tiny", tmp_path).r1cs
    entry = _entry(r)

    def refuse(*_a: object) -> None:
        raise PermissionError("read-only")

    monkeypatch.setattr(sidecar.os, "replace", refuse)
    got = compact_r1cs(r)
    assert not any(p.name.startswith(tuple(NAMES)) for p in entry.iterdir())  # nor a temporary left
    assert _same(got, compact_r1cs(build_porep("tiny", None).r1cs))
