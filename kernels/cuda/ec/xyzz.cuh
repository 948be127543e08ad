// Short-Weierstrass (a = 0) curve arithmetic shared by G1 (over Fp) and G2 (over Fp2).
//
// Affine points use design.md's layout (x then y; all-zero words mean the point at infinity,
// which is not on the curve y^2 = x^3 + b, so the encoding is unambiguous). Accumulators are
// XYZZ coordinates (x = X/ZZ, y = Y/ZZZ, ZZ^3 = ZZZ^2), with ZZ = 0 for infinity: a mixed
// addition costs 8M + 2S and needs no inversion, which is why Pippenger buckets use them.
// Formulas: add-2008-s, madd-2008-s, dbl-2008-s-1, mdbl-2008-s-1 (hyperelliptic.org EFD).
#pragma once
#include "../ff/bls12_381.cuh"

// SEALTOP_XYZZ_BYVAL (a build define): 1, the default, makes G1's out-of-line XYZZ addition and
// doubling static functions of values (sum, doubled) instead of member functions of a point in
// local memory (0). ptxas then makes every Fp product of them wide multiply-adds (the addition
// about 6,150 SASS instructions against 8,350), at more registers in the window kernels (g1_slices
// 255 against 172, still two blocks of 128 a multiprocessor). On an H100 (docs/BENCHMARKS.md,
// fifteenth round) H's window reduction at 2^27 took 28.8 ms with it against 30.8-30.9; the whole
// GPU suite passed on it (sixteenth round). G2 keeps the members: its points by value go through
// the stack. Bit for bit the same values.
#ifndef SEALTOP_XYZZ_BYVAL
#define SEALTOP_XYZZ_BYVAL 1
#endif

template <class F>
struct Affine {
    F x, y;
    static const int WORDS = 2 * F::WORDS;

    HD static Affine infinity() { Affine r; r.x = F::zero(); r.y = F::zero(); return r; }
    HD bool is_inf() const { return x.is_zero() && y.is_zero(); }
    HD static Affine load(const uint32_t* p) { Affine r; r.x = F::load(p); r.y = F::load(p + F::WORDS); return r; }
    HD void store(uint32_t* p) const { x.store(p); y.store(p + F::WORDS); }
    HD Affine neg() const { Affine r; r.x = x; r.y = y.neg(); return r; }
};

template <class F>
struct Xyzz {
    F X, Y, ZZ, ZZZ;
    static const int WORDS = 4 * F::WORDS;

    HD static Xyzz infinity() { Xyzz r; r.X = F::zero(); r.Y = F::zero(); r.ZZ = F::zero(); r.ZZZ = F::zero(); return r; }
    HD bool is_inf() const { return ZZ.is_zero(); }
    HD static Xyzz from_affine(const Affine<F>& a) {
        if (a.is_inf()) return infinity();
        Xyzz r; r.X = a.x; r.Y = a.y; r.ZZ = F::one(); r.ZZZ = F::one();
        return r;
    }
    HD static Xyzz load(const uint32_t* p) {
        Xyzz r;
        r.X = F::load(p); r.Y = F::load(p + F::WORDS);
        r.ZZ = F::load(p + 2 * F::WORDS); r.ZZZ = F::load(p + 3 * F::WORDS);
        return r;
    }
    HD void store(uint32_t* p) const {
        X.store(p); Y.store(p + F::WORDS); ZZ.store(p + 2 * F::WORDS); ZZZ.store(p + 3 * F::WORDS);
    }
    HD Xyzz neg() const { Xyzz r = *this; r.Y = Y.neg(); return r; }

    // 2 * (x, y) for an affine point (mdbl-2008-s-1).
    HD_NOINLINE static Xyzz dbl_affine(const F& x, const F& y) {
        F U = y.dbl();
        F V = U.sqr();
        F W = U * V;
        F S = x * V;
        F x2 = x.sqr();
        F M = x2.dbl() + x2;
        Xyzz r;
        r.X = M.sqr() - S.dbl();
        r.Y = M * (S - r.X) - W * y;
        r.ZZ = V;
        r.ZZZ = W;
        return r;
    }

    // 2 * this (dbl-2008-s-1 with a = 0).
    HD Xyzz dbl() const {
#if SEALTOP_XYZZ_BYVAL
        if constexpr (F::WORDS == Fp::WORDS) return doubled(*this);
#endif
        return dbl_ref();
    }
    HD_NOINLINE Xyzz dbl_ref() const { return dbl_body(); }
    HD_NOINLINE static Xyzz doubled(Xyzz p) { return p.dbl_body(); }
    HD Xyzz dbl_body() const {
        if (is_inf()) return *this;
        F U = Y.dbl();
        F V = U.sqr();
        F W = U * V;
        F S = X * V;
        F x2 = X.sqr();
        F M = x2.dbl() + x2;
        Xyzz r;
        r.X = M.sqr() - S.dbl();
        r.Y = M * (S - r.X) - W * Y;
        r.ZZ = V * ZZ;
        r.ZZZ = W * ZZZ;
        return r;
    }

    // this += (x2, y2), an affine point that is not infinity (madd-2008-s). Out of line, so
    // the G2 formulas compile in reasonable time; add_affine_inline is the same formula for the
    // MSM's hot loop over G1, where a call's register save and restore costs more than it saves.
    HD_NOINLINE void add_affine(const F& x2, const F& y2) { add_affine_inline(x2, y2); }

    HD void add_affine_inline(const F& x2, const F& y2) {
        if (is_inf()) { X = x2; Y = y2; ZZ = F::one(); ZZZ = F::one(); return; }
        F U2 = x2 * ZZ;
        F S2 = y2 * ZZZ;
        F P = U2 - X;
        F R = S2 - Y;
        if (P.is_zero()) {
            if (R.is_zero()) *this = dbl_affine(x2, y2);
            else *this = infinity();
            return;
        }
        F PP = P.sqr();
        F PPP = P * PP;
        F Q = X * PP;
        F X3 = R.sqr() - PPP - Q.dbl();
        Y = R * (Q - X3) - Y * PPP;
        X = X3;
        ZZ = ZZ * PP;
        ZZZ = ZZZ * PPP;
    }

    // this += a for an affine point that may be infinity.
    HD void add(const Affine<F>& a) {
        if (!a.is_inf()) add_affine(a.x, a.y);
    }

    // this += q, both XYZZ (add-2008-s).
    HD void add(const Xyzz& q) {
#if SEALTOP_XYZZ_BYVAL
        if constexpr (F::WORDS == Fp::WORDS) { *this = sum(*this, q); return; }
#endif
        add_ref(q);
    }
    HD_NOINLINE void add_ref(const Xyzz& q) { add_body(q); }
    HD_NOINLINE static Xyzz sum(Xyzz p, Xyzz q) {
        p.add_body(q);
        return p;
    }
    HD void add_body(const Xyzz& q) {
        if (q.is_inf()) return;
        if (is_inf()) { *this = q; return; }
        F U1 = X * q.ZZ;
        F U2 = q.X * ZZ;
        F S1 = Y * q.ZZZ;
        F S2 = q.Y * ZZZ;
        F P = U2 - U1;
        F R = S2 - S1;
        if (P.is_zero()) {
            if (R.is_zero()) *this = dbl();
            else *this = infinity();
            return;
        }
        F PP = P.sqr();
        F PPP = P * PP;
        F Q = U1 * PP;
        F X3 = R.sqr() - PPP - Q.dbl();
        Y = R * (Q - X3) - S1 * PPP;
        X = X3;
        ZZ = ZZ * q.ZZ * PP;
        ZZZ = ZZZ * q.ZZZ * PPP;
    }

    // Affine form with one inversion: 1/ZZ = ZZZ/(ZZ ZZZ), 1/ZZZ = ZZ/(ZZ ZZZ).
    HD_NOINLINE Affine<F> to_affine() const {
        if (is_inf()) return Affine<F>::infinity();
        F t = (ZZ * ZZZ).inv();
        Affine<F> a;
        a.x = X * (t * ZZZ);
        a.y = Y * (t * ZZ);
        return a;
    }
};

typedef Affine<Fp> G1Affine;
typedef Xyzz<Fp> G1Xyzz;
typedef Affine<Fp2> G2Affine;
typedef Xyzz<Fp2> G2Xyzz;
