"""scripts/ones_pairs.py's count against a plain loop over random kinds (0, 1, general)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

_spec = importlib.util.spec_from_file_location(
    "ones_pairs", Path(__file__).resolve().parents[1] / "scripts" / "ones_pairs.py")
assert _spec is not None and _spec.loader is not None
ones_pairs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ones_pairs)


def _plain(k: list[int]) -> tuple[int, int, int]:
    adds = 0
    for i in range(0, len(k), 2):
        pair = k[i:i + 2]
        if all(x < 2 for x in pair):
            adds += 1 if 1 in pair else 0  # P_k, P_k+1 or their sum: one addition
        else:
            adds += pair.count(1)  # the general value goes to the buckets; a 1 beside it alone
    return k.count(1), k.count(2), adds


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 2), max_size=41))
def test_the_pair_count_matches_a_plain_loop(k: list[int]) -> None:
    assert ones_pairs.additions(np.array(k, np.int8)) == _plain(k)


def test_kinds_tells_zero_one_and_general_apart() -> None:
    one = np.array([1, 2, 3, 4], np.uint64)  # z[0], whatever form the one takes
    z = np.array([one, [0, 0, 0, 0], one, [5, 0, 0, 0], [0, 0, 0, 1]], np.uint64)
    assert list(ones_pairs.kinds(z)) == [1, 0, 1, 2, 2]
