"""BLS12-381 constants shared by every backend: moduli, Montgomery parameters, generators,
roots of unity. One source of truth, so CPU and GPU results agree bit for bit."""

from __future__ import annotations

# Scalar field Fr (255 bits) and base field Fp (381 bits).
R_MOD = 0x73EDA753299D7D483339D80809A1D80553BDA402FFFE5BFEFFFFFFFF00000001
P_MOD = 0x1A0111EA397FE69A4B1BA7B6434BACD764774B84F38512BF6730D2A0F6B0F6241EABFFFEB153FFFFB9FEFFFFFFFFAAAB

FR_LIMBS = 4
FP_LIMBS = 6
FR_R = pow(2, 256, R_MOD)  # Montgomery R for Fr
FP_R = pow(2, 384, P_MOD)  # Montgomery R for Fp

# Curve: y^2 = x^3 + 4 (G1 over Fp), y^2 = x^3 + 4(1 + u) (G2 over Fp2, u^2 = -1).
G1_B = 4
G1_GEN = (
    0x17F1D3A73197D7942695638C4FA9AC0FC3688C4F9774B905A14E3A3F171BAC586C55E83FF97A1AEFFB3AF00ADB22C6BB,
    0x08B3F481E3AAA0F1A09E30ED741D8AE4FCF5E095D5D00AF600DB18CB2C04B3EDD03CC744A2888AE40CAA232946C5E7E1,
)
# ((x.c0, x.c1), (y.c0, y.c1))
G2_GEN = (
    (
        0x024AA2B2F08F0A91260805272DC51051C6E47AD4FA403B02B4510B647AE3D1770BAC0326A805BBEFD48056C8C121BDB8,
        0x13E02B6052719F607DACD3A088274F65596BD0D09920B61AB5DA61BBDC7F5049334CF11213945D57E5AC7D055D042B7E,
    ),
    (
        0x0CE5D527727D6E118CC9CDC6DA2E351AADFD9BAA8CBDD3A76D429A695160D12C923AC9CC3BACA289E193548608B82801,
        0x0606C4A02EA734CC32ACD2B02BC28B99CB3E287E85A763AF267492AB572E99AB3F370D275CEC1DA1AAA9075FF05F79BE,
    ),
)

# Fr's multiplicative generator (bellman's GENERATOR) and 2-adic roots of unity.
FR_GENERATOR = 7
FR_TWO_ADICITY = 32
FR_ROOT_OF_UNITY = pow(FR_GENERATOR, (R_MOD - 1) >> FR_TWO_ADICITY, R_MOD)  # order 2^32
# The coset used for H = (A·B − C)/Z: evaluations on FR_GENERATOR · <omega>.
FR_COSET_SHIFT = FR_GENERATOR


# G1's endomorphism (x, y) -> (FP_BETA x, y) is multiplication by GLV_LAMBDA = z^2 - 1 (z the
# curve's parameter -0xd201000000010000; 128 bits), with r = GLV_LAMBDA^2 + GLV_LAMBDA + 1. So
# any s < r is s1 + GLV_LAMBDA s2 with s1 = s mod GLV_LAMBDA and s2 = s div GLV_LAMBDA, both
# below 2^128 (Gallant-Lambert-Vanstone): an MSM of n full scalars is one of 2n half-length ones.
# FP_BETA is the cube root of unity in Fp that pairs with GLV_LAMBDA (checked against arkworks in
# tests/test_cuda_host_glv.py).
GLV_LAMBDA = 0xAC45A4010001A40200000000FFFFFFFF
FP_BETA = 0x1A0111EA397FE699EC02408663D4DE85AA0D857D89759AD4897D29650FB85F9B409427EB4F49FFFD8BFD00000000AAAC


def root_of_unity(log_n: int) -> int:
    """A primitive 2^log_n-th root of unity in Fr (the one every backend uses)."""
    if not 0 <= log_n <= FR_TWO_ADICITY:
        raise ValueError(f"Fr has no 2^{log_n}-th root of unity (two-adicity {FR_TWO_ADICITY})")
    return pow(FR_ROOT_OF_UNITY, 1 << (FR_TWO_ADICITY - log_n), R_MOD)
