"""Conversions from py_arkworks_bls12381's points (the independent oracle) to affine ints, in
the tuple form kernels.cpu.convert turns into storage rows (None is the point at infinity)."""

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
