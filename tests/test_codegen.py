"""The committed field modules are exactly what kernels/cpu/codegen.py generates today."""

from __future__ import annotations

import pytest

from kernels.cpu import codegen


@pytest.mark.parametrize("name", sorted(codegen.MODULES))
def test_committed_module_matches_generator(name: str) -> None:
    committed = (codegen.HERE / name).read_text()
    assert committed == codegen.generated()[name], (
        f"kernels/cpu/{name} is stale: run `python -m kernels.cpu.codegen` and commit the result"
    )


def test_generator_covers_both_fields() -> None:
    assert set(codegen.generated()) == {"fr.py", "fp.py"}


def test_comparison_is_sensitive_to_the_parameters() -> None:
    """Negative case: generating with a different modulus does not match the committed module."""
    prefix, title, modulus, limbs = codegen.MODULES["fr.py"]
    committed = (codegen.HERE / "fr.py").read_text()
    assert codegen.field_module(prefix, title, modulus + 2, limbs) != committed
    assert codegen.field_module(prefix, title, modulus, limbs) == committed


def test_generated_constants_are_the_fields_parameters() -> None:
    """The Montgomery constants written into the modules follow from the moduli alone."""
    from kernels.constants import P_MOD, R_MOD
    from kernels.cpu import fp, fr

    for mod, modulus, limbs in ((fr, R_MOD, 4), (fp, P_MOD, 6)):
        assert mod.MODULUS == modulus and mod.LIMBS == limbs
        assert (int(mod._INV) * modulus) % 2**64 == 2**64 - 1  # -1/modulus mod 2^64
        one_limbs = mod.FR_ONE if mod is fr else mod.FP_ONE
        one = sum(int(v) << (64 * k) for k, v in enumerate(one_limbs))
        assert one == pow(2, 64 * limbs, modulus)
