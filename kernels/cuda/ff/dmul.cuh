// BLS12-381 Fp Montgomery multiplication on the FP64 pipe: a measured prototype, a drop-in for
// `a * b` on Fp (Mont<FpParams>, 12 x 32-bit limbs), bit-identical to it (same R = 2^384, fully
// reduced, canonical). Nothing in the engine uses it yet.
//
// Why. Mont<Fp>::operator* (mont.cuh) keeps the IMAD pipe ~97% busy (about 600 IMAD pipe slots a
// product: 288 wide 32x32 multiply-adds) while the SM's 64 FP64 FMA lanes a clock sit idle. An
// FP64 FMA multiplies two integers below 2^52 exactly before its one rounding, so the classic
// split (Emmart, Zheng and Weems, ARITH 2018) gives the exact 96-bit product of two 48-bit limbs
// as two doubles whose bit patterns are the product's high and low parts as integers.
//
// Radix. 8 limbs of 48 bits: 8 x 48 = 384, so the Montgomery radix is R = 2^384 exactly as in
// mont.cuh and the results agree bit for bit. p < 2^381, so every limb of an operand, of p and of
// each Montgomery quotient digit m is below 2^48.
//
// One limb product a * b (a, b < 2^48, a b <= (2^48 - 1)^2 < 2^96), three FP64 operations:
//   h = fma(a, b, C1)      C1 = 2^100: a b + C1 lies in [2^100, 2^101), whose ulp is 2^48, so
//                          h = C1 + hi 2^48 with hi = round(a b / 2^48) in [0, 2^48 - 2]; the
//                          bit pattern of h is bits(C1) + hi (the mantissa counts ulps).
//   s = C2 - h             C2 = C1 + 3 2^51: s = (24 - hi) 2^48, exactly representable, so exact.
//   l = fma(a, b, s)       = (a b - hi 2^48) + 3 2^51 = lo + 3 2^51 with |lo| <= 2^47 (h was
//                          rounded to nearest), so l lies in [2^52, 2^53), whose ulp is 1: exact,
//                          and bits(l) = bits(2^52) + 2^51 + lo.
// So a b = hi 2^48 + lo with hi = bits(h) - HB, lo = bits(l) - LB (HB = 0x4630..., LB =
// 0x4338...). The bit patterns are summed as 64-bit integers into column accumulators (hi into
// column k + 1, lo into column k) and each column's biases, a compile-time constant (the count of
// terms it took, times HB or LB; the `bias` array below, folded away by the compiler), are
// subtracted once. A column takes at most 8 + 8 products of a b and m p, 32 terms of magnitude
// <= 2^48, plus a carry: far inside int64 (the wrap-around of the biased sums is harmless modulo
// 2^64).
//
// Montgomery reduction, interleaved by columns (operand scanning for m p): after the 64 products
// a_i b_j, for k = 0..7 the column k is complete (S_k, all terms of products with index sum k,
// the hi parts of those with index sum k - 1 and the carry), m_k = S_k (-p^-1) mod 2^48 makes
// S_k + m_k p_0 divisible by 2^48, and the products m_k p_i (i >= 1) are added into columns
// k + i, k + i + 1. BLS12-381's p_0 = 2^48 - 0x5555, so m_k p_0 needs no FP64 product at all:
// (S_k + m_k p_0) / 2^48 = m_k + (S_k - 0x5555 m_k) / 2^48, an exact arithmetic shift (0x5555 m_k
// < 2^63), added to column k + 1. Columns 8..15 are then T = (a b + M p) / 2^384 < 2p < 2^382 in
// signed column form: one carry pass gives its 48-bit digits (the final carry is 0), which are
// repacked into 12 words and reduced once by mont.cuh's reduce_once, as operator* does.
//
// Inputs are unpacked into 48-bit limbs and made doubles without a conversion instruction: the
// bit pattern 0x4330000000000000 | x is the double 2^52 + x, and one FP64 subtraction leaves x.
//
// Variants (all bit-identical to operator*): mul_school (64 + 56 limb products), mul_karatsuba
// (one Karatsuba level on a b: 48 + 56; dmul48::mul), mul_hybrid (a b by Karatsuba on the FP64
// pipe, the reduction by mont.cuh's redc_wide on the IMAD pipe), sqr (36 + 56) and sqr_hybrid
// (36 on the FP64 pipe, the reduction on the IMAD pipe).
//
// Cost model. Per SM sub-partition: one warp instruction issued a clock; the FP64, IMAD and ALU
// (IADD3, LOP3, SHF, SEL, ...) pipes have 16 lanes each, so a warp instruction holds its pipe 2
// clocks, a wide IMAD (IMAD.WIDE, 64-bit result) 4. A kernel needs at least max(issue, 2 FP64,
// 2 IMAD + 4 IMAD.WIDE, 2 ALU) clocks per warp product, and the H200 (132 SMs x 4 sub-partitions x
// 32 lanes at ~1.98 GHz) then makes 132 x 4 x 32 x 1.98e9 / clocks products a second. Counted in
// the SASS loop bodies of field_kernels.cu's chains (nvcc 13.0, sm_90; loop overhead included):
//
//   chain (one product an iteration)  instrs  FP64  IMAD+wide   ALU   clocks (bound)   G mul/s bound
//   fp_mul_chain   operator*            387      0    24+276     82   1152 (IMAD)      29.0 (measured 26.9)
//   fp_dmul_school_chain                846    384    45+16     397    846 (issue)     39.5
//   fp_dmul_chain  Karatsuba            797    344    45+16     381    797 (issue)     42.0
//   fp_dmul_hybrid_chain                633    168    43+139    279    642 (IMAD)      52.1
//   fp_sqr_chain   Mont::sqr            373      0    30+208    132    892 (IMAD)      37.5
//   fp_dsqr_chain  sqr                  678    299    42+12     321    678 (issue)     49.3
//   fp_dsqr_hybrid_chain sqr_hybrid     524    123    43+135    219    626 (IMAD)      53.4
//   fp_mix_chain (operator* and mul, two chains, per iteration)  1208 instrs, 1398 clocks (IMAD,
//                  some spill moves): 47.8 G products/s bound
//
// operator* reaches 93% of its bound; a mixed FP64/integer stream with 4 warps a sub-partition
// (<= 128 registers, field_kernels.cu's launch bounds) may reach less, so about 36 G mul/s for
// mul_karatsuba, 45 for mul_hybrid. The pure FP64 products are issue-bound: each limb product
// costs 3 FP64 operations and 2 integer accumulations (5 issue slots), and the quotient digits,
// carry pass, repacking and final subtraction (~200 instructions) come on top. The hybrid halves
// the FP64 work and puts the other half of the multiplications on the IMAD pipe, which the pure
// FP64 products leave idle; that balances the pipes (issue 633, IMAD 642, ALU 558 clocks).
#pragma once
#include "bls12_381.cuh"

#ifndef __CUDACC__
#include <cmath>
#include <cstring>
#endif

// The split constant C1 = 2^SEALTOP_DMUL_C1_LOG2. Only 100 is right (the ulp of [2^C1, 2^(C1+1))
// must be 2^48); a build with another value exists so the host test can show a broken split is
// caught.
#ifndef SEALTOP_DMUL_C1_LOG2
#define SEALTOP_DMUL_C1_LOG2 100
#endif

namespace dmul48 {

HD double fma_rn(double a, double b, double c) {
#ifdef __CUDACC__
    return __fma_rn(a, b, c);
#else
    return std::fma(a, b, c);
#endif
}
HD uint64_t bits(double x) {
#ifdef __CUDACC__
    return (uint64_t)__double_as_longlong(x);
#else
    uint64_t r;
    std::memcpy(&r, &x, sizeof r);
    return r;
#endif
}
HD double from_bits(uint64_t x) {
#ifdef __CUDACC__
    return __longlong_as_double((long long)x);
#else
    double r;
    std::memcpy(&r, &x, sizeof r);
    return r;
#endif
}

static const uint64_t MASK48 = 0xffffffffffffull;
static const uint64_t EXP52 = 0x4330000000000000ull;  // bits(2^52)
static const uint64_t HB = (uint64_t)(1023 + SEALTOP_DMUL_C1_LOG2) << 52;  // bits(C1)
static const uint64_t LB = EXP52 + (1ull << 51);                            // bits(3 2^51), l's bias
// p in 48-bit limbs (kernels.constants.P_MOD; tests/test_cuda_host_dmul.py checks them), as doubles
// in constant memory: a DFMA reads a constant-bank operand directly, where a 64-bit immediate
// would first be moved into two registers (DFMA's immediate holds only a double's top 32 bits).
CONSTANT double DMUL_P48[8] = {
    (double)0xffffffffaaabull, (double)0xb153ffffb9feull, (double)0xf6241eabfffeull,
    (double)0x6730d2a0f6b0ull, (double)0x4b84f38512bfull, (double)0x434bacd76477ull,
    (double)0xe69a4b1ba7b6ull, (double)0x1a0111ea397full,
};
static const uint64_t P0_C = 0x5555ull;                // 2^48 - p_0
static const uint64_t NINV48 = 0xfffcfffcfffdull;      // -p^-1 mod 2^48

// x < 2^52 as the double x: the bit pattern of 2^52 + x, less 2^52 (exact).
HD double limb_to_double(uint64_t x) { return from_bits(x | EXP52) - 4503599627370496.0; }

// The 12 words of an Fp element as 8 limbs of 48 bits, doubles.
HD void unpack(double d[8], const uint32_t w[12]) {
    UNROLL for (int j = 0; j < 4; j++) {
        const uint64_t x0 = (uint64_t)w[3 * j] | ((uint64_t)(w[3 * j + 1] & 0xffffu) << 32);
        const uint64_t x1 = (uint64_t)(w[3 * j + 1] >> 16) | ((uint64_t)w[3 * j + 2] << 16);
        d[2 * j] = limb_to_double(x0);
        d[2 * j + 1] = limb_to_double(x1);
    }
}

// 8 digits of 48 bits (each below 2^48) as 12 words.
HD void pack(uint32_t w[12], const uint64_t r[8]) {
    UNROLL for (int j = 0; j < 4; j++) {
        w[3 * j] = (uint32_t)r[2 * j];
        w[3 * j + 1] = (uint32_t)(r[2 * j] >> 32) | ((uint32_t)r[2 * j + 1] << 16);
        w[3 * j + 2] = (uint32_t)(r[2 * j + 1] >> 16);
    }
}

// a b into the column accumulators: the low part into column k, the high part into column
// k + 1, their biases into the matching `bias` entries (constants, folded by the compiler). The
// split needs a b + C1 < 2^101: a b < 2^98 is enough (limbs below 2^48, or one of them a sum or
// double of two such limbs, as Karatsuba and the squaring use).
HD void prod(double a, double b, uint64_t* acc, uint64_t* bias, int k) {
    const double C1 = (double)(1ull << (SEALTOP_DMUL_C1_LOG2 - 64)) * 18446744073709551616.0;
    const double C2 = C1 + 6755399441055744.0;  // C1 + 3 2^51
    const double h = fma_rn(a, b, C1);
    const double s = C2 - h;
    const double l = fma_rn(a, b, s);
    acc[k] += bits(l);
    acc[k + 1] += bits(h);
    bias[k] += LB;
    bias[k + 1] += HB;
}

// The Montgomery reduction of a 16-column product (acc - bias: column k's exact value, as int64,
// below 2^56 in magnitude, the product below p^2), interleaved by columns (see the top): the
// fully reduced a b R^-1 mod p.
HD Fp redc(uint64_t acc[16], uint64_t bias[16]) {
    UNROLL for (int k = 0; k < 8; k++) {
        const int64_t s = (int64_t)(acc[k] - bias[k]);  // column k, complete
        const uint64_t m = ((uint64_t)s * NINV48) & MASK48;
        // (s + m p_0) / 2^48 with p_0 = 2^48 - P0_C: exact, s - P0_C m being a multiple of 2^48
        acc[k + 1] += m + (uint64_t)((s - (int64_t)(m * P0_C)) >> 48);
        const double md = limb_to_double(m);
        UNROLL for (int i = 1; i < 8; i++) prod(md, DMUL_P48[i], acc, bias, k + i);
    }
    // T = sum over k of column (8 + k) 2^(48 k) < 2p < 2^382: its digits by one signed carry pass
    uint64_t r[8];
    int64_t carry = 0;
    UNROLL for (int k = 0; k < 8; k++) {
        const int64_t s = (int64_t)(acc[8 + k] - bias[8 + k]) + carry;
        r[k] = (uint64_t)s & MASK48;
        carry = s >> 48;
    }
    uint32_t w[12];
    pack(w, r);
    Fp out;
    Fp::reduce_once(out.v, w, 0);
    return out;
}

// a b R^-1 mod p (R = 2^384), fully reduced; equal to Mont<Fp>::operator*. Schoolbook: 64
// products a_i b_j.
HD Fp mul_school(const Fp& a, const Fp& b) {
    double ad[8], bd[8];
    unpack(ad, a.v);
    unpack(bd, b.v);
    uint64_t acc[16], bias[16];
    UNROLL for (int k = 0; k < 16; k++) acc[k] = bias[k] = 0;
    UNROLL for (int i = 0; i < 8; i++) {
        UNROLL for (int j = 0; j < 8; j++) prod(ad[i], bd[j], acc, bias, i + j);
    }
    return redc(acc, bias);
}

// The same product with one level of Karatsuba on a b: with a = A0 + X^4 A1, b = B0 + X^4 B1
// (X = 2^48, halves of 4 limbs), a b = P0 + X^4 (Pm - P0 - P2) + X^8 P2 for P0 = A0 B0, P2 =
// A1 B1, Pm = (A0 + A1)(B0 + B1): 48 products instead of 64 (144 FP64 operations fewer, 8 more
// for the sums A0 + A1, B0 + B1, exact below 2^49), each P in 8 columns of its own; the three
// are combined column by column (64-bit integer adds of the biased sums; the biases combine the
// same way, as constants). Equal to mul_school bit for bit.
HD void columns_karatsuba(uint64_t acc[16], uint64_t bias[16], const Fp& a, const Fp& b) {
    double ad[8], bd[8], as[4], bs[4];
    unpack(ad, a.v);
    unpack(bd, b.v);
    UNROLL for (int i = 0; i < 4; i++) {
        as[i] = ad[i] + ad[i + 4];
        bs[i] = bd[i] + bd[i + 4];
    }
    uint64_t p0[8], p2[8], pm[8], b0[8], b2[8], bm[8];
    UNROLL for (int k = 0; k < 8; k++) p0[k] = p2[k] = pm[k] = b0[k] = b2[k] = bm[k] = 0;
    UNROLL for (int i = 0; i < 4; i++) {
        UNROLL for (int j = 0; j < 4; j++) {
            prod(ad[i], bd[j], p0, b0, i + j);
            prod(ad[i + 4], bd[j + 4], p2, b2, i + j);
            prod(as[i], bs[j], pm, bm, i + j);
        }
    }
    UNROLL for (int k = 0; k < 16; k++) {
        acc[k] = k < 8 ? p0[k] : p2[k - 8];
        bias[k] = k < 8 ? b0[k] : b2[k - 8];
        if (k >= 4 && k < 12) {
            acc[k] += pm[k - 4] - p0[k - 4] - p2[k - 4];
            bias[k] += bm[k - 4] - b0[k - 4] - b2[k - 4];
        }
    }
}
HD Fp mul_karatsuba(const Fp& a, const Fp& b) {
    uint64_t acc[16], bias[16];
    columns_karatsuba(acc, bias, a, b);
    return redc(acc, bias);
}

// The hybrid: the product a b on the FP64 pipe (columns_karatsuba), its Montgomery reduction on
// the IMAD pipe (Mont<Fp>::redc_wide: 12 rows of 32-bit m p, as mont.cuh's squaring reduces).
// The 16 columns become the 16 digits (48 bits) of a b < p^2 by one signed carry pass (the final
// carry is 0), repacked as 24 words. Each pipe then carries about half of a product (see the top).
HD Fp redc_imad(uint64_t acc[16], uint64_t bias[16]) {
    uint64_t d[16];
    int64_t carry = 0;
    UNROLL for (int k = 0; k < 16; k++) {
        const int64_t s = (int64_t)(acc[k] - bias[k]) + carry;
        d[k] = (uint64_t)s & MASK48;
        carry = s >> 48;
    }
    uint32_t t[24];
    pack(t, d);
    pack(t + 12, d + 8);
    Fp out;
    Fp::redc_wide(out.v, t);
    return out;
}
HD Fp mul_hybrid(const Fp& a, const Fp& b) {
    uint64_t acc[16], bias[16];
    columns_karatsuba(acc, bias, a, b);
    return redc_imad(acc, bias);
}

// a^2 R^-1 mod p, equal to a * a: the 28 cross products once, with one factor doubled (below
// 2^49), and the 8 squares: 36 products instead of 64. sqr_hybrid reduces the same columns on
// the IMAD pipe, as mul_hybrid does.
HD void columns_square(uint64_t acc[16], uint64_t bias[16], const Fp& a) {
    double ad[8], a2[8];
    unpack(ad, a.v);
    UNROLL for (int i = 0; i < 8; i++) a2[i] = ad[i] + ad[i];
    UNROLL for (int k = 0; k < 16; k++) acc[k] = bias[k] = 0;
    UNROLL for (int i = 0; i < 8; i++) {
        prod(ad[i], ad[i], acc, bias, 2 * i);
        UNROLL for (int j = i + 1; j < 8; j++) prod(a2[i], ad[j], acc, bias, i + j);
    }
}
HD Fp sqr(const Fp& a) {
    uint64_t acc[16], bias[16];
    columns_square(acc, bias, a);
    return redc(acc, bias);
}
HD Fp sqr_hybrid(const Fp& a) {
    uint64_t acc[16], bias[16];
    columns_square(acc, bias, a);
    return redc_imad(acc, bias);
}

#ifndef SEALTOP_DMUL_KARATSUBA
#define SEALTOP_DMUL_KARATSUBA 1
#endif
// The product the probe and the tests call dmul48::mul.
HD Fp mul(const Fp& a, const Fp& b) {
#if SEALTOP_DMUL_KARATSUBA
    return mul_karatsuba(a, b);
#else
    return mul_school(a, b);
#endif
}

}  // namespace dmul48

#if SEALTOP_FP_DMUL
// The hooks of mont.cuh's SEALTOP_FP_DMUL build: Fp's operator* and sqr() come here.
template <class M> HD M fp_dmul(const M& a, const M& b) {
#if SEALTOP_FP_DMUL == 2
    return dmul48::mul_karatsuba(a, b);
#else
    return dmul48::mul_hybrid(a, b);
#endif
}
template <class M> HD M fp_dsqr(const M& a) {
#if SEALTOP_FP_DMUL == 2
    return dmul48::sqr(a);
#else
    return dmul48::sqr_hybrid(a);
#endif
}
#endif
