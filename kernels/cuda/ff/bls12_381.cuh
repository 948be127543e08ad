// The two BLS12-381 prime fields (Fr: scalars, 255 bits; Fp: coordinates, 381 bits) and the
// quadratic extension Fp2 = Fp[u]/(u^2 + 1) used by G2. The constants come from params.cuh,
// which sealtop generates from kernels/constants.py so there is one source of truth.
#pragma once
#include "common.cuh"
#include "params.cuh"
#include "mont.cuh"

struct FrParams {
    static const int N = 8;
    static const uint32_t INV = FR_INV_WORD;
    HD static uint32_t mod(int i) { return fr_mod_word(i); }
    HD static uint32_t mod_c(int i) { return FR_MOD[i]; }
    HD static uint32_t inv_c() { return FR_INV_C[0]; }
    HD static uint32_t one(int i) { return fr_one_word(i); }
    HD static uint32_t r2(int i) { return FR_R2[i]; }
    HD static uint32_t mod_m2(int i) { return FR_MOD_M2[i]; }
};

struct FpParams {
    static const int N = 12;
    static const uint32_t INV = FP_INV_WORD;
    HD static uint32_t mod(int i) { return fp_mod_word(i); }
    HD static uint32_t mod_c(int i) { return FP_MOD[i]; }
    HD static uint32_t inv_c() { return FP_INV_C[0]; }
    HD static uint32_t one(int i) { return fp_one_word(i); }
    HD static uint32_t r2(int i) { return FP_R2[i]; }
    HD static uint32_t mod_m2(int i) { return FP_MOD_M2[i]; }
};

typedef Mont<FrParams> Fr;
typedef Mont<FpParams> Fp;

// SEALTOP_FP2_MUL (a build define): how Fp2's product and square are made, bit for bit the same
// values (tests/test_cuda_host_ff.py builds both).
//   1 (the default): one out-of-line call for an Fp2 product (fp2_mul_lazy) or square
//      (fp2_sqr_lazy): three or two double-width Fp products and two Montgomery reductions, the
//      sums unreduced. On an H100 (docs/BENCHMARKS.md, fourteenth and fifteenth rounds) G2's MSM
//      at 2^24 took 358.8 ms with it against 396.4, and 358.9 against 392.0-397.5 the next time;
//      the whole GPU suite passed on it (sixteenth round);
//   0: each Fp product an out-of-line call of a whole Montgomery product (fp_mul_call, operands
//      by value), the Karatsuba sums and differences reduced inline.
#ifndef SEALTOP_FP2_MUL
#define SEALTOP_FP2_MUL 1
#endif

// Out of line because G2 formulas hold dozens of products, and inlining every one makes the G2
// module take minutes to compile for little gain. The operands go by value: taken by reference
// (through local memory) ptxas made each a*b product of the CIOS rows a separate low and high
// multiply and add, 802 SASS instructions a product against 380 (nvcc 13.0, sm_90; 276 of the
// 380 are wide multiply-adds, against 144 of the 802), and G2's MSM at 2^24 took 520.2 ms on an
// H100 against 396.4 by value.
HD_NOINLINE Fp fp_mul_call(Fp a, Fp b) { return a * b; }

// c0 + c1*u with u^2 = -1; stored c0 then c1 (design.md).
struct Fp2 {
    static const int WORDS = 24;
    Fp c0, c1;

    HD static Fp2 zero() { Fp2 r; r.c0 = Fp::zero(); r.c1 = Fp::zero(); return r; }
    HD static Fp2 one() { Fp2 r; r.c0 = Fp::one(); r.c1 = Fp::zero(); return r; }
    HD bool is_zero() const { return c0.is_zero() && c1.is_zero(); }
    HD static Fp2 load(const uint32_t* p) { Fp2 r; r.c0 = Fp::load(p); r.c1 = Fp::load(p + 12); return r; }
    HD void store(uint32_t* p) const { c0.store(p); c1.store(p + 12); }

    HD friend Fp2 operator+(const Fp2& a, const Fp2& b) { Fp2 r; r.c0 = a.c0 + b.c0; r.c1 = a.c1 + b.c1; return r; }
    HD friend Fp2 operator-(const Fp2& a, const Fp2& b) { Fp2 r; r.c0 = a.c0 - b.c0; r.c1 = a.c1 - b.c1; return r; }
    HD Fp2 neg() const { Fp2 r; r.c0 = c0.neg(); r.c1 = c1.neg(); return r; }
    HD Fp2 dbl() const { Fp2 r; r.c0 = c0.dbl(); r.c1 = c1.dbl(); return r; }

    // The product and square (defined below, as SEALTOP_FP2_MUL picks).
    HD friend Fp2 operator*(const Fp2& a, const Fp2& b);
    HD Fp2 sqr() const;
    // Karatsuba: three Fp multiplications.
    HD Fp2 mul_calls(const Fp2& b) const {
        const Fp2& a = *this;
        Fp t0 = fp_mul_call(a.c0, b.c0);
        Fp t1 = fp_mul_call(a.c1, b.c1);
        Fp t2 = fp_mul_call(a.c0 + a.c1, b.c0 + b.c1);
        Fp2 r;
        r.c0 = t0 - t1;
        r.c1 = t2 - t0 - t1;
        return r;
    }
    // (c0 + c1 u)^2 = (c0 + c1)(c0 - c1) + 2 c0 c1 u: two Fp multiplications.
    HD Fp2 sqr_calls() const {
        Fp2 r;
        Fp m = fp_mul_call(c0, c1);
        r.c0 = fp_mul_call(c0 + c1, c0 - c1);
        r.c1 = m.dbl();
        return r;
    }
    // 1/(c0 + c1 u) = (c0 - c1 u) / (c0^2 + c1^2); 0 maps to 0.
    HD Fp2 inv() const {
        Fp t = (c0.sqr() + c1.sqr()).inv();
        Fp2 r;
        r.c0 = c0 * t;
        r.c1 = (c1 * t).neg();
        return r;
    }
    HD Fp2 inv_fast() const {
        Fp t = (c0.sqr() + c1.sqr()).inv_fast();
        Fp2 r;
        r.c0 = c0 * t;
        r.c1 = (c1 * t).neg();
        return r;
    }
};

// (a0 + a1 u)(b0 + b1 u) = (a0 b0 - a1 b1) + (a0 b1 + a1 b0) u with three double-width Fp
// products and one Montgomery reduction for each half (mont.cuh's mul_wide and redc_wide),
// instead of three whole Montgomery products: a1 b0 + a0 b1 = (a0 + a1)(b0 + b1) - a0 b0 - a1 b1
// is below 2 p^2, and a0 b0 - a1 b1 is made non-negative by adding p 2^384, which the reduction
// maps to 0; both are then below p 2^384, as redc_wide needs. The Karatsuba sums are not
// reduced (below 2p < 2^382).
HD_NOINLINE Fp2 fp2_mul_lazy(Fp2 a, Fp2 b) {
    uint32_t t0[24], t1[24], t2[24];
    Fp::mul_wide(t0, a.c0, b.c0);
    Fp::mul_wide(t1, a.c1, b.c1);
    Fp::mul_wide(t2, Fp::add_raw(a.c0, a.c1), Fp::add_raw(b.c0, b.c1));
    Fp2 r;
    Fp::sub_wide_mod(t2, t0);  // t2 >= t0 + t1: no borrow
    Fp::sub_wide_mod(t2, t1);
    Fp::redc_wide(r.c1.v, t2);
    Fp::sub_wide_mod(t0, t1);
    Fp::redc_wide(r.c0.v, t0);
    return r;
}

// (c0 + c1 u)^2 = (c0 + c1)(c0 - c1) + 2 c0 c1 u: two double-width products (both below 2 p^2)
// and their reductions, the sums unreduced.
HD_NOINLINE Fp2 fp2_sqr_lazy(Fp2 a) {
    uint32_t t[24];
    Fp2 r;
    Fp::mul_wide(t, Fp::add_raw(a.c0, a.c1), a.c0 - a.c1);
    Fp::redc_wide(r.c0.v, t);
    Fp::mul_wide(t, Fp::add_raw(a.c0, a.c0), a.c1);
    Fp::redc_wide(r.c1.v, t);
    return r;
}

#if SEALTOP_FP2_MUL == 1
HD Fp2 operator*(const Fp2& a, const Fp2& b) { return fp2_mul_lazy(a, b); }
HD Fp2 Fp2::sqr() const { return fp2_sqr_lazy(*this); }
#else
HD Fp2 operator*(const Fp2& a, const Fp2& b) { return a.mul_calls(b); }
HD Fp2 Fp2::sqr() const { return sqr_calls(); }
#endif

// Always included (kernels/cuda/source.py inlines each header once, where it first appears, so a
// conditional include here would hide it from the modules that include it themselves): the
// FP64-pipe products, and the SEALTOP_FP_DMUL build's hooks.
#include "dmul.cuh"
