"""kernels/textfmt.py: the one table and the one byte formatter every report prints with."""

from __future__ import annotations

import random
import re

import pytest

from kernels.textfmt import exc_line, fmt_bytes, table

_UNIT = {"B": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40}


def test_fmt_bytes_reads_back_within_its_rounding():
    """Fresh random sizes over every unit: the text parses back to the size within the rounding
    of three significant figures, in the largest unit below the size."""
    rng = random.Random()
    for _ in range(2000):
        n = rng.randrange(0, 2 ** rng.randrange(1, 50))
        text = fmt_bytes(n)
        m = re.fullmatch(r"(\d+(?:\.\d+)?) (B|KiB|MiB|GiB|TiB)", text)
        assert m, text
        value, unit = float(m.group(1)), m.group(2)
        if unit == "B":
            assert value == n
            continue
        assert _UNIT[unit] <= n < 1024 * _UNIT[unit] or unit == "TiB", (n, text)
        assert abs(value * _UNIT[unit] - n) <= 0.005 * n + _UNIT[unit] * 0.005, (n, text)


@pytest.mark.parametrize(
    ("n", "text"),
    [(None, "N/A"), (0, "0 B"), (1023, "1023 B"), (1024, "1.00 KiB"), (3 * 2**30, "3.00 GiB"),
     (300 * 2**20, "300 MiB"), (1536 * 2**20, "1.50 GiB"), (1023 * 2**20 + 2**19, "1024 MiB"), (5 * 2**50, "5120 TiB")],
)
def test_fmt_bytes_examples(n, text):
    assert fmt_bytes(n) == text


def test_table_columns_fit_their_widest_cell_and_align():
    rng = random.Random()
    ncol = rng.randrange(2, 7)
    head = [f"h{i}" * rng.randrange(1, 4) for i in range(ncol)]
    body = [[str(rng.randrange(10 ** rng.randrange(1, 9))) for _ in range(ncol)] for _ in range(rng.randrange(1, 20))]
    lines = table(head, body, left=1, rule=True)
    assert len(lines) == len(body) + 2
    widths = [max(len(h), *(len(r[i]) for r in body)) for i, h in enumerate(head)]
    assert all(len(line) == sum(widths) + 2 * (ncol - 1) for line in lines)
    assert lines[1] == "  ".join("-" * w for w in widths)
    for row, line in zip(body, lines[2:], strict=True):
        # split at the known widths: the first column left-aligned, the others right-aligned
        pos, cells = 0, []
        for w in widths:
            cells.append(line[pos:pos + w])
            pos += w + 2
        assert cells[0] == row[0].ljust(widths[0])
        assert all(c == v.rjust(w) for c, v, w in zip(cells[1:], row[1:], widths[1:], strict=True))


def test_table_minimum_widths_separator_and_empty_body():
    assert table(["a", "bb"], [], widths=[4]) == ["   a  bb"]
    assert table(["a", "b"], [["1", "22"]], sep=" ") == ["a  b", "1 22"]


def test_table_refuses_a_row_of_the_wrong_length():
    with pytest.raises(ValueError, match="a row has 1 cells for 2 columns"):
        table(["a", "b"], [["1"]])


def test_exc_line_is_the_messages_first_line_else_the_type() -> None:
    words = [random.choice(("disk", "full", "key", "gone", "…", "ü")) for _ in range(5)]
    first = " ".join(words)
    assert exc_line(ValueError(f"{first}\nsecond line\nthird")) == first
    assert exc_line(OSError(f"\n  {first}  \n")) == first  # blank lines before it do not count
    assert exc_line(RuntimeError()) == "RuntimeError" and exc_line(ValueError("  ")) == "ValueError"
