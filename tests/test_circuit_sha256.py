"""SHA-256 gadget against hashlib on fresh random messages of one and of several blocks, the
254-bit truncation, and negative cases."""

from __future__ import annotations

import hashlib
import os
import random

import pytest

from engine.circuit.check import place_on_free, run, unsatisfied_rows_py
from engine.circuit.sha256 import (
    digest_to_field,
    pad_length,
    sha256_stream,
    stream_to_le_bits,
    truncate_digest,
)
from engine.circuit.template import Bit, Tracer
from engine.synthesis import is_satisfied
from kernels.cpu.convert import from_mont_fr


def _stream(msg: bytes) -> list[int]:
    return [(msg[i // 8] >> (7 - i % 8)) & 1 for i in range(8 * len(msg))]


def _sha_template(nbytes: int, truncate: bool):
    tr = Tracer(f"sha{nbytes}", 8 * nbytes)
    digest = sha256_stream(tr, [Bit(tr.input(i)) for i in range(8 * nbytes)])
    if truncate:
        tr.output(digest_to_field(tr, digest))
    else:
        for b in digest:
            assert not b.is_const and not b.neg
            tr.output(b.slot)
    return tr.finish()


@pytest.mark.parametrize(
    "nbytes",  # from 1: the empty message has no input bits, so its digest folds to constants
    [random.randrange(1, 56), random.randrange(120, 184)],
    ids=["one-block", "three-blocks"],  # fixed ids: the lengths are fresh every run
)
def test_gadget_equals_hashlib(nbytes: int) -> None:
    blocks = pad_length(nbytes) // 64
    tmpl = _sha_template(nbytes, truncate=False)
    msgs = [os.urandom(nbytes) for _ in range(3)]
    shape, outs = place_on_free(tmpl, len(msgs))
    z = run(shape, [_stream(m) for m in msgs])
    zi = from_mont_fr(z)
    for k, m in enumerate(msgs):
        bits = [zi[outs[j][k]] for j in range(256)]
        got = bytes(sum(bits[8 * i + j] << (7 - j) for j in range(8)) for i in range(32))
        assert got == hashlib.sha256(m).digest(), f"{nbytes}-byte message ({blocks} blocks)"
    assert is_satisfied(shape.r1cs, z)
    # flipping one digest bit, or one message bit, breaks it
    j = random.randrange(256)
    bad = z.copy()
    bad[outs[j][0]] = z[0] if zi[outs[j][0]] == 0 else 0
    assert not is_satisfied(shape.r1cs, bad)
    bad = z.copy()
    v = shape.regions["in"][1, random.randrange(8 * nbytes)]
    bad[v] = z[0] if zi[v] == 0 else 0
    assert not is_satisfied(shape.r1cs, bad)


def test_the_empty_message_folds_to_its_digest_as_constants() -> None:
    """No input bits: every digest bit is a constant, and together they are SHA-256("")."""
    digest = sha256_stream(Tracer("sha0", 0), [])
    assert all(b.is_const for b in digest)
    got = bytes(sum(digest[8 * i + j].value << (7 - j) for j in range(8)) for i in range(32))
    assert got == hashlib.sha256(b"").digest()


def test_truncated_digest_and_python_oracle() -> None:
    nbytes = 64
    tmpl = _sha_template(nbytes, truncate=True)
    msgs = [os.urandom(nbytes) for _ in range(2)]
    shape, (out,) = place_on_free(tmpl, len(msgs))
    z = run(shape, [_stream(m) for m in msgs])
    zi = from_mont_fr(z)
    for k, m in enumerate(msgs):
        d = hashlib.sha256(m).digest()
        assert zi[out[k]] == truncate_digest(d)
        assert zi[out[k]] < 2**254
        assert zi[out[k]] == int.from_bytes(d[:31] + bytes([d[31] & 0x3F]), "little")
    assert unsatisfied_rows_py(shape.r1cs, zi) == []


def test_bit_order_helpers_and_errors() -> None:
    x = random.getrandbits(256)
    stream = [Bit.const((x.to_bytes(32, "little")[i // 8] >> (7 - i % 8)) & 1) for i in range(256)]
    le = stream_to_le_bits(stream)
    assert sum(b.value << i for i, b in enumerate(le)) == x
    with pytest.raises(ValueError):
        truncate_digest(b"short")
    with pytest.raises(ValueError):
        sha256_stream(Tracer("x", 0), [Bit.const(0)] * 7)
