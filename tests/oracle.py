"""The independent oracles, in the forms the kernels' tests compare against: py_arkworks_bls12381's
points as affine ints, in the tuple form kernels.cpu.convert turns into storage rows (None is the
point at infinity), and Python integers' results for the field kernels' op codes."""

from __future__ import annotations


def ark_g1(point) -> tuple[int, int] | None:
    b = point.to_xy_bytes_le()
    if not any(b):
        return None
    return int.from_bytes(b[:48], "little"), int.from_bytes(b[48:], "little")


def ark_g2(point) -> tuple[tuple[int, int], tuple[int, int]] | None:
    b = point.to_xy_bytes_le()
    if not any(b):
        return None
    v = [int.from_bytes(b[48 * j : 48 * j + 48], "little") for j in range(4)]
    return (v[0], v[1]), (v[2], v[3])


def curve_table(g1_fn, g2_fn) -> dict:
    """Per curve: (the kernel under test, the oracle's generator class, oracle point -> ints,
    ints -> storage rows, storage rows -> ints), for tests that run one check on G1 and G2."""
    import py_arkworks_bls12381 as ark

    from kernels.cpu.convert import g1_from_storage, g1_to_storage, g2_from_storage, g2_to_storage

    return {
        "g1": (g1_fn, ark.G1Point, ark_g1, g1_to_storage, g1_from_storage),
        "g2": (g2_fn, ark.G2Point, ark_g2, g2_to_storage, g2_from_storage),
    }


def binop_expected(a: list[int], b: list[int], mod: int) -> dict[int, list[int]]:
    """Per op code of the field kernels' ``fr_binop`` / ``fp_binop``, the results from Python
    integers: 0 a + b, 1 a - b, 2 a * b, 3 a², 4 a⁻¹ (Fermat; 0 stays 0), 5 -a, all mod ``mod``."""
    return {
        0: [(x + y) % mod for x, y in zip(a, b)],
        1: [(x - y) % mod for x, y in zip(a, b)],
        2: [x * y % mod for x, y in zip(a, b)],
        3: [x * x % mod for x in a],
        4: [pow(x, mod - 2, mod) for x in a],
        5: [-x % mod for x in a],
    }
