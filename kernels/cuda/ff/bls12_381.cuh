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

// Fp products inside Fp2 go through one out-of-line function: G2 formulas hold dozens of them,
// and inlining every one makes the G2 module take minutes to compile for little gain.
HD_NOINLINE Fp fp_mul_call(const Fp& a, const Fp& b) { return a * b; }

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

    // Karatsuba: three Fp multiplications.
    HD friend Fp2 operator*(const Fp2& a, const Fp2& b) {
        Fp t0 = fp_mul_call(a.c0, b.c0);
        Fp t1 = fp_mul_call(a.c1, b.c1);
        Fp t2 = fp_mul_call(a.c0 + a.c1, b.c0 + b.c1);
        Fp2 r;
        r.c0 = t0 - t1;
        r.c1 = t2 - t0 - t1;
        return r;
    }
    // (c0 + c1 u)^2 = (c0 + c1)(c0 - c1) + 2 c0 c1 u: two Fp multiplications.
    HD Fp2 sqr() const {
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

// Always included (kernels/cuda/source.py inlines each header once, where it first appears, so a
// conditional include here would hide it from the modules that include it themselves): the
// FP64-pipe products, and the SEALTOP_FP_DMUL build's hooks.
#include "dmul.cuh"
