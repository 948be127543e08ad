// Montgomery arithmetic over a prime field, on N 32-bit limbs (little-endian).
//
// One template serves Fr (N = 8) and Fp (N = 12); a traits class P supplies the modulus, R mod p,
// R^2 mod p, -p^-1 mod 2^32 and p - 2. Storage is the uint64 limb layout of design.md, which on a
// little-endian machine is exactly these 32-bit limbs, so a kernel reinterprets element pointers
// without conversion. Every operation returns a fully reduced value in [0, p), so Montgomery
// representations are canonical and CPU and GPU agree bit for bit.
#pragma once
#include "common.cuh"
#include "ptx.cuh"

#ifndef SEALTOP_FF_SQR
#define SEALTOP_FF_SQR 1  // Mont::sqr() as a dedicated squaring (0: as a * a)
#endif

// SEALTOP_FP_DMUL (a build define, for measuring variants): 1 makes every Fp product and squaring
// dmul.cuh's hybrid (limb products on the FP64 pipe, the reduction on the IMAD pipe), 2 its pure
// FP64 Karatsuba product and squaring; bit for bit the same values (tests/test_cuda_host_dmul.py).
#ifndef SEALTOP_FP_DMUL
#define SEALTOP_FP_DMUL 0
#endif
#if SEALTOP_FP_DMUL
template <class M> HD M fp_dmul(const M& a, const M& b);  // defined in dmul.cuh
template <class M> HD M fp_dsqr(const M& a);
#endif

template <class P>
struct Mont {
    static const int N = P::N;
    static const int WORDS = P::N;  // 32-bit words per element
    uint32_t v[P::N];

    HD static Mont zero() {
        Mont r;
        UNROLL for (int i = 0; i < N; i++) r.v[i] = 0;
        return r;
    }
    // 1 in Montgomery form (R mod p).
    HD static Mont one() {
        Mont r;
        UNROLL for (int i = 0; i < N; i++) r.v[i] = P::one(i);
        return r;
    }
    HD bool is_zero() const {
        uint32_t acc = 0;
        UNROLL for (int i = 0; i < N; i++) acc |= v[i];
        return acc == 0;
    }
    HD bool eq(const Mont& o) const {
        uint32_t acc = 0;
        UNROLL for (int i = 0; i < N; i++) acc |= v[i] ^ o.v[i];
        return acc == 0;
    }

    HD static Mont load(const uint32_t* p) {
        Mont r;
        UNROLL for (int i = 0; i < N; i++) r.v[i] = p[i];
        return r;
    }
    HD void store(uint32_t* p) const {
        UNROLL for (int i = 0; i < N; i++) p[i] = v[i];
    }

    // t (N limbs plus a carry word) minus p when t >= p; result in r.
    HD static void reduce_once(uint32_t r[P::N], const uint32_t t[P::N], uint32_t carry) {
        uint32_t s[P::N];
#if SEALTOP_PTX_FF
        s[0] = ptx::sub_cc(t[0], P::mod(0));
        UNROLL for (int i = 1; i < N; i++) s[i] = ptx::subc_cc(t[i], P::mod(i));
        uint32_t keep = ptx::subc(carry, 0);  // 0xffffffff when t < p: keep t
        UNROLL for (int i = 0; i < N; i++) r[i] = keep ? t[i] : s[i];
#else
        uint64_t bw = 0;
        UNROLL for (int i = 0; i < N; i++) {
            uint64_t d = (uint64_t)t[i] - P::mod(i) - bw;
            s[i] = (uint32_t)d;
            bw = (d >> 32) & 1;
        }
        bool take = carry != 0 || bw == 0;
        UNROLL for (int i = 0; i < N; i++) r[i] = take ? s[i] : t[i];
#endif
    }

    HD friend Mont operator+(const Mont& a, const Mont& b) {
        uint32_t t[P::N];
#if SEALTOP_PTX_FF
        t[0] = ptx::add_cc(a.v[0], b.v[0]);
        UNROLL for (int i = 1; i < N; i++) t[i] = ptx::addc_cc(a.v[i], b.v[i]);
        uint32_t c = ptx::addc(0, 0);
#else
        uint64_t c = 0;
        UNROLL for (int i = 0; i < N; i++) {
            c += (uint64_t)a.v[i] + b.v[i];
            t[i] = (uint32_t)c;
            c >>= 32;
        }
#endif
        Mont r;
        reduce_once(r.v, t, (uint32_t)c);
        return r;
    }

    HD friend Mont operator-(const Mont& a, const Mont& b) {
        uint32_t t[P::N];
        Mont r;
#if SEALTOP_PTX_FF
        t[0] = ptx::sub_cc(a.v[0], b.v[0]);
        UNROLL for (int i = 1; i < N; i++) t[i] = ptx::subc_cc(a.v[i], b.v[i]);
        uint32_t mask = ptx::subc(0, 0);  // 0xffffffff when a < b: add p back
        r.v[0] = ptx::add_cc(t[0], P::mod(0) & mask);
        UNROLL for (int i = 1; i < N - 1; i++) r.v[i] = ptx::addc_cc(t[i], P::mod(i) & mask);
        r.v[N - 1] = ptx::addc(t[N - 1], P::mod(N - 1) & mask);
#else
        uint64_t bw = 0;
        UNROLL for (int i = 0; i < N; i++) {
            uint64_t d = (uint64_t)a.v[i] - b.v[i] - bw;
            t[i] = (uint32_t)d;
            bw = (d >> 32) & 1;
        }
        // add p back when the subtraction borrowed
        uint32_t mask = 0u - (uint32_t)bw;
        uint64_t c = 0;
        UNROLL for (int i = 0; i < N; i++) {
            c += (uint64_t)t[i] + (P::mod(i) & mask);
            r.v[i] = (uint32_t)c;
            c >>= 32;
        }
#endif
        return r;
    }

    HD Mont neg() const { return zero() - *this; }
    HD Mont dbl() const { return *this + *this; }

#if SEALTOP_PTX_FF
    // Word j of a multiplicand: of a register array, or of the modulus (an immediate).
    struct Words {
        const uint32_t* v;
        HD uint32_t operator()(int j) const { return v[j]; }
    };
    struct Modulus {
        HD uint32_t operator()(int j) const { return P::mod_c(j); }
    };

    // acc = sum_k x(2k + off) * y * 2^(64k): the products of one parity tile acc without overlap.
    template <class X>
    HD static void mul_pairs(uint32_t acc[P::N], X x, int off, uint32_t y) {
        UNROLL for (int j = 0; j < N; j += 2) {
            uint64_t pr = (uint64_t)x(j + off) * y;
            acc[j] = (uint32_t)pr;
            acc[j + 1] = (uint32_t)(pr >> 32);
        }
    }
    // acc += sum_k x(2k + off) * y * 2^(64k), one carry chain of (lo, hi) pairs; the carry out
    // of acc[N-1] is left in the flag for the caller.
    template <class X>
    HD static void mad_pairs(uint32_t acc[P::N], X x, int off, uint32_t y) {
        acc[0] = ptx::mad_lo_cc(x(off), y, acc[0]);
        acc[1] = ptx::madc_hi_cc(x(off), y, acc[1]);
        UNROLL for (int j = 2; j < N; j += 2) {
            acc[j] = ptx::madc_lo_cc(x(j + off), y, acc[j]);
            acc[j + 1] = ptx::madc_hi_cc(x(j + off), y, acc[j + 1]);
        }
    }
    // acc = (acc >> 64) + sum_k x(2k + off) * y * 2^(64k) + the incoming carry flag, in place
    // (word k is written after word k + 2 is read). The top two words take only the products.
    template <class X>
    HD static void madc_pairs_shift2(uint32_t acc[P::N], X x, int off, uint32_t y) {
        UNROLL for (int j = 0; j < N - 2; j += 2) {
            acc[j] = ptx::madc_lo_cc(x(j + off), y, acc[j + 2]);
            acc[j + 1] = ptx::madc_hi_cc(x(j + off), y, acc[j + 3]);
        }
        acc[N - 2] = ptx::madc_lo_cc(x(N - 2 + off), y, 0);
        acc[N - 1] = ptx::madc_hi(x(N - 2 + off), y, 0);
    }
    // lo += m * p with m making word 0 of the total vanish; hi is the odd-aligned half.
    HD static void reduce_row(uint32_t lo[P::N], uint32_t hi[P::N]) {
        const uint32_t m = lo[0] * P::inv_c();
        mad_pairs(hi, Modulus(), 1, m);  // no carry out: hi stays below 2^(32N) (see operator*)
        mad_pairs(lo, Modulus(), 0, m);
        hi[N - 1] = ptx::addc(hi[N - 1], 0);
    }
    // One CIOS row after the first: with T = x + 2^32 y on entry (x[0] = 0), T = T / 2^32 + a * b,
    // reduced by m * p, leaving T = y' + 2^32 x' in the same registers with the roles swapped.
    HD static void row(uint32_t x[P::N], uint32_t y[P::N], const Mont& a, uint32_t b) {
        y[0] = ptx::add_cc(y[0], x[1]);            // x's word 1 lands on word 0 after the shift
        madc_pairs_shift2(x, Words{a.v}, 1, b);    // x becomes the odd half: (x >> 64) + odd products
        mad_pairs(y, Words{a.v}, 0, b);            // y becomes the even half
        x[N - 1] = ptx::addc(x[N - 1], 0);
        reduce_row(y, x);
    }
    // One row of redc_wide: with T = x + 2^32 y on entry (x[0] = 0), T = T / 2^32 + m p, m making
    // word 0 vanish; T = y' + 2^32 x' after, the roles swapped (row() without the a * b products).
    HD static void redc_row(uint32_t x[P::N], uint32_t y[P::N]) {
        y[0] = ptx::add_cc(y[0], x[1]);  // x's word 1 lands on word 0 after the shift
        const uint32_t m = y[0] * P::inv_c();
        madc_pairs_shift2(x, Modulus(), 1, m);  // x becomes the odd half: (x >> 64) + m p_odd
        mad_pairs(y, Modulus(), 0, m);          // y becomes the even half
        x[N - 1] = ptx::addc(x[N - 1], 0);
    }
#endif

    // CIOS Montgomery multiplication: a * b * R^-1 mod p.
    HD friend Mont operator*(const Mont& a, const Mont& b) {
#if SEALTOP_FP_DMUL
        if constexpr (P::N == 12) return fp_dmul(a, b);
#endif
#if SEALTOP_PTX_FF
        // CIOS, with the running sum T held as two N-word halves: e (words 0..N-1) and o (words
        // 1..N), T = e + 2^32 o. A row's products a[j]*b[i] of even j tile e without overlap and
        // those of odd j tile o, so each half takes one carry chain of (lo, hi) pairs of one
        // operand pair, which ptxas turns into one wide multiply-add with carry per pair
        // (IMAD.WIDE.U32.X) on aligned register pairs; the shift by one word after each row is a
        // swap of the halves' roles plus one add (row()). e's carry out of word N-1 goes to o's
        // top word; o never carries out: both moduli are below 2^(32N-1), so T < 2p before each
        // row and T + a*b[i] + m*p < 2^(32(N+1)), which bounds o below 2^(32N) (and every
        // partial sum, all terms being non-negative). Checked against Python integers on the
        // device (tests/test_cuda_ff.py) and, through ptx.cuh's host model, without one
        // (tests/test_cuda_host_ff.py).
        uint32_t e[P::N], o[P::N];
        mul_pairs(e, Words{a.v}, 0, b.v[0]);
        mul_pairs(o, Words{a.v}, 1, b.v[0]);
        reduce_row(e, o);
        UNROLL for (int i = 1; i < N; i += 2) {
            row(e, o, a, b.v[i]);
            if (i + 1 < N) row(o, e, a, b.v[i + 1]);
        }
        // N is even, so the last row left T = o + 2^32 e with o[0] = 0: the result is e + (o >> 32)
        Mont r;
        r.v[0] = ptx::add_cc(e[0], o[1]);
        UNROLL for (int k = 1; k < N - 1; k++) r.v[k] = ptx::addc_cc(e[k], o[k + 1]);
        r.v[N - 1] = ptx::addc(e[N - 1], 0);
        reduce_once(r.v, r.v, 0);
        return r;
#else
        uint32_t t[P::N + 2];
        UNROLL for (int i = 0; i < N + 2; i++) t[i] = 0;
        UNROLL for (int i = 0; i < N; i++) {
            uint64_t c = 0;
            uint32_t bi = b.v[i];
            UNROLL for (int j = 0; j < N; j++) {
                c += (uint64_t)a.v[j] * bi + t[j];
                t[j] = (uint32_t)c;
                c >>= 32;
            }
            c += t[N];
            t[N] = (uint32_t)c;
            t[N + 1] = (uint32_t)(c >> 32);
            uint32_t m = t[0] * P::INV;
            c = (uint64_t)m * P::mod(0) + t[0];
            c >>= 32;
            UNROLL for (int j = 1; j < N; j++) {
                c += (uint64_t)m * P::mod(j) + t[j];
                t[j - 1] = (uint32_t)c;
                c >>= 32;
            }
            c += t[N];
            t[N - 1] = (uint32_t)c;
            t[N] = t[N + 1] + (uint32_t)(c >> 32);
        }
        Mont r;
        reduce_once(r.v, t, t[N]);
        return r;
#endif
    }

    // Montgomery squaring: a * a * R^-1 mod p, bit-identical to *this * *this.
    //
    // A product a * b takes N^2 word products before its reduction; a square needs each cross
    // product a[i]*a[j] (i < j) once, doubled, plus the N squares a[i]^2: N(N+1)/2 (78 for Fp's
    // N = 12, against 144). The 2N-word square is then reduced by N rows of m * p (separated:
    // square first, reduce after), the other N^2 products. So a squaring takes about three
    // quarters of a product's multiplies, for about 4N more additions (merging the two halves of
    // the cross sum and doubling it, adding the high half after the reduction).
    // SEALTOP_FF_SQR=0 (a build define) makes it the plain product again, to measure one
    // against the other on the device.
    HD Mont sqr() const {
#if SEALTOP_FP_DMUL
        if constexpr (P::N == 12) return fp_dsqr(*this);
#endif
#if SEALTOP_FF_SQR
        uint32_t t[2 * P::N];
        square_wide(t, *this);
        Mont r;
        redc_wide(r.v, t);
        return r;
#else
        return *this * *this;
#endif
    }

#if SEALTOP_PTX_FF
    // acc[k0 .. k0 + 2c) += sum_q a[j0 + 2q] * b * 2^(32 (k0 + 2q)): c products of one parity
    // as one chain of (lo, hi) pairs, its carry out left in the flag unless `last` (a chain that
    // ends on a[N-1] cannot carry: see square_wide).
    HD static void mad_run(uint32_t* acc, int k0, const uint32_t* a, int j0, int c, uint32_t b, bool last) {
        acc[k0] = ptx::mad_lo_cc(a[j0], b, acc[k0]);
        UNROLL for (int q = 0; q < c; q++) {
            const int k = k0 + 2 * q;
            if (q > 0) acc[k] = ptx::madc_lo_cc(a[j0 + 2 * q], b, acc[k]);
            if (q + 1 < c || !last) acc[k + 1] = ptx::madc_hi_cc(a[j0 + 2 * q], b, acc[k + 1]);
            else acc[k + 1] = ptx::madc_hi(a[j0 + 2 * q], b, acc[k + 1]);
        }
    }
#endif

    // t = a * a as 2N words.
    HD static void square_wide(uint32_t t[2 * P::N], const Mont& a) {
#if SEALTOP_PTX_FF
        // Row i's cross products a[i]*a[j] (j > i) lie at words i + j, i + j + 1: those with j - i
        // odd tile the odd-aligned sum o and those with j - i even the even-aligned sum e, so each
        // row is two chains of (lo, hi) pairs of one operand pair, as in operator*. No carry is
        // lost: after row i the cross sum is at most a * (a mod 2^(32(i+1))) < 2^(32(N+i+1)) / 2
        // (a < p < 2^(32N-1)), and so is each half. So the chain that ends on a[N-1] (top word
        // i + N) cannot carry out; it runs first, and the other chain's carry out of word i + N - 1
        // is added to its top word. Every half then holds whole aligned pairs (a register pair
        // either written or still zero), which the wide multiply-adds take as their addend.
        uint32_t e[2 * P::N], o[2 * P::N];
        UNROLL for (int k = 0; k < 2 * N; k++) e[k] = o[k] = 0;
        UNROLL for (int i = 0; i < N - 1; i++) {
            const int co = (N - i) / 2, ce = (N - 1 - i) / 2;  // products with j - i odd, even
            if ((N - 1 - i) % 2 == 1) {                         // a[N-1] ends the odd chain
                mad_run(o, 2 * i + 1, a.v, i + 1, co, a.v[i], true);
                if (ce > 0) {
                    mad_run(e, 2 * i + 2, a.v, i + 2, ce, a.v[i], false);
                    o[i + N] = ptx::addc(o[i + N], 0);
                }
            } else {
                mad_run(e, 2 * i + 2, a.v, i + 2, ce, a.v[i], true);
                mad_run(o, 2 * i + 1, a.v, i + 1, co, a.v[i], false);
                e[i + N] = ptx::addc(e[i + N], 0);
            }
        }
        // s = e + o (words 0 and 1 of e and word 0 of o are zero), doubled in place by a carry
        // chain (s < a^2 / 2, so nothing leaves the top word), then t = 2 s + the squares a[i]^2,
        // even-aligned pairs again: one chain of wide multiply-adds. (A funnel shift per word
        // doubles with no chain, but measured more instructions for Fp, ptxas then spilling
        // carry flags.)
        uint32_t s[2 * P::N];
        s[0] = 0;
        s[1] = o[1];
        s[2] = ptx::add_cc(e[2], o[2]);
        UNROLL for (int k = 3; k < 2 * N - 1; k++) s[k] = ptx::addc_cc(e[k], o[k]);
        s[2 * N - 1] = ptx::addc(e[2 * N - 1], o[2 * N - 1]);
        s[1] = ptx::add_cc(s[1], s[1]);
        UNROLL for (int k = 2; k < 2 * N - 1; k++) s[k] = ptx::addc_cc(s[k], s[k]);
        s[2 * N - 1] = ptx::addc(s[2 * N - 1], s[2 * N - 1]);
        t[0] = ptx::mad_lo_cc(a.v[0], a.v[0], 0);
        t[1] = ptx::madc_hi_cc(a.v[0], a.v[0], s[1]);
        UNROLL for (int i = 1; i < N; i++) {
            t[2 * i] = ptx::madc_lo_cc(a.v[i], a.v[i], s[2 * i]);
            if (i + 1 < N) t[2 * i + 1] = ptx::madc_hi_cc(a.v[i], a.v[i], s[2 * i + 1]);
            else t[2 * i + 1] = ptx::madc_hi(a.v[i], a.v[i], s[2 * i + 1]);  // a^2 < 2^(64N): no carry
        }
#else
        UNROLL for (int k = 0; k < 2 * N; k++) t[k] = 0;
        // cross products, row i into words 2i+1 .. i+N (word i+N is fresh: row i-1 ended below it)
        UNROLL for (int i = 0; i < N - 1; i++) {
            uint64_t c = 0;
            UNROLL for (int j = i + 1; j < N; j++) {
                c += (uint64_t)a.v[i] * a.v[j] + t[i + j];
                t[i + j] = (uint32_t)c;
                c >>= 32;
            }
            t[i + N] = (uint32_t)c;
        }
        // double (the cross sum is below a^2 / 2 < 2^(64N - 1): the top bit is free) ...
        UNROLL for (int k = 2 * N - 1; k > 0; k--) t[k] = (t[k] << 1) | (t[k - 1] >> 31);
        t[0] <<= 1;
        // ... and add the squares a[i]^2 at word 2i
        uint64_t c = 0;
        UNROLL for (int i = 0; i < N; i++) {
            const uint64_t sq = (uint64_t)a.v[i] * a.v[i];
            c += (uint64_t)t[2 * i] + (uint32_t)sq;
            t[2 * i] = (uint32_t)c;
            c = (c >> 32) + t[2 * i + 1] + (sq >> 32);
            t[2 * i + 1] = (uint32_t)c;
            c >>= 32;
        }
#endif
    }

    // t = a * b as 2N words, unreduced: for products whose reductions are shared or deferred
    // (Fp2's Karatsuba product makes three of these and reduces two sums of them). a and b need
    // only be below 2^(32N), not reduced.
    HD static void mul_wide(uint32_t t[2 * P::N], const Mont& a, const Mont& b) {
#if SEALTOP_PTX_FF
        // Row i's products a[j]*b[i] lie at words i + j, i + j + 1: those with i + j even tile the
        // even-aligned sum e and the others the odd-aligned sum o, so a row is two chains of
        // (lo, hi) pairs of one operand pair (operator*'s layout, without its reduction rows). A
        // chain over words k0 .. k0 + N - 1 leaves its carry in word k0 + N, which no earlier
        // row carried into twice (it holds 0 or 1), so the carry stops there. Each half is a
        // partial sum of a*b's products, below 2^(64N): the carry into word 2N (e's last row)
        // is zero and is not kept.
        uint32_t e[2 * P::N], o[2 * P::N];
        UNROLL for (int k = 0; k < 2 * N; k++) e[k] = o[k] = 0;
        UNROLL for (int i = 0; i < N; i++) {
            const int je = i & 1, jo = 1 - je;  // the first j with i + j even, odd
            const bool e_top = i + je + N == 2 * N;
            mad_run(e, i + je, a.v, je, N / 2, b.v[i], e_top);
            if (!e_top) e[i + je + N] = ptx::addc(e[i + je + N], 0);
            mad_run(o, i + jo, a.v, jo, N / 2, b.v[i], false);
            o[i + jo + N] = ptx::addc(o[i + jo + N], 0);
        }
        t[0] = ptx::add_cc(e[0], o[0]);
        UNROLL for (int k = 1; k < 2 * N - 1; k++) t[k] = ptx::addc_cc(e[k], o[k]);
        t[2 * N - 1] = ptx::addc(e[2 * N - 1], o[2 * N - 1]);
#else
        UNROLL for (int k = 0; k < 2 * N; k++) t[k] = 0;
        UNROLL for (int i = 0; i < N; i++) {
            uint64_t c = 0;
            UNROLL for (int j = 0; j < N; j++) {
                c += (uint64_t)a.v[j] * b.v[i] + t[i + j];
                t[i + j] = (uint32_t)c;
                c >>= 32;
            }
            t[i + N] = (uint32_t)c;
        }
#endif
    }

    // a + b without the reduction: below 2^(32N) when a + b is (two reduced elements of Fp, whose
    // p < 2^381, sum below 2^382); only mul_wide takes it.
    HD static Mont add_raw(const Mont& a, const Mont& b) {
        Mont r;
#if SEALTOP_PTX_FF
        r.v[0] = ptx::add_cc(a.v[0], b.v[0]);
        UNROLL for (int i = 1; i < N - 1; i++) r.v[i] = ptx::addc_cc(a.v[i], b.v[i]);
        r.v[N - 1] = ptx::addc(a.v[N - 1], b.v[N - 1]);
#else
        uint64_t c = 0;
        UNROLL for (int i = 0; i < N; i++) {
            c += (uint64_t)a.v[i] + b.v[i];
            r.v[i] = (uint32_t)c;
            c >>= 32;
        }
#endif
        return r;
    }

    // t -= u over 2N words; when that borrows (t < u), p 2^(32N) is added back, which the
    // Montgomery reduction maps to p = 0. So t - u (+ p 2^(32N)) stays below p 2^(32N), as
    // redc_wide needs, whenever t < p 2^(32N) and u <= p 2^(32N) to begin with.
    HD static void sub_wide_mod(uint32_t t[2 * P::N], const uint32_t u[2 * P::N]) {
#if SEALTOP_PTX_FF
        t[0] = ptx::sub_cc(t[0], u[0]);
        UNROLL for (int k = 1; k < 2 * N; k++) t[k] = ptx::subc_cc(t[k], u[k]);
        const uint32_t mask = ptx::subc(0, 0);  // 0xffffffff when it borrowed
        t[N] = ptx::add_cc(t[N], P::mod(0) & mask);
        UNROLL for (int k = 1; k < N - 1; k++) t[N + k] = ptx::addc_cc(t[N + k], P::mod(k) & mask);
        t[2 * N - 1] = ptx::addc(t[2 * N - 1], P::mod(N - 1) & mask);
#else
        uint64_t bw = 0;
        UNROLL for (int k = 0; k < 2 * N; k++) {
            uint64_t d = (uint64_t)t[k] - u[k] - bw;
            t[k] = (uint32_t)d;
            bw = (d >> 32) & 1;
        }
        const uint32_t mask = 0u - (uint32_t)bw;
        uint64_t c = 0;
        UNROLL for (int k = 0; k < N; k++) {
            c += (uint64_t)t[N + k] + (P::mod(k) & mask);
            t[N + k] = (uint32_t)c;
            c >>= 32;
        }
#endif
    }

    // r = t * R^-1 mod p for a 2N-word t < p 2^(32N) (Montgomery reduction), fully reduced.
    HD static void redc_wide(uint32_t r[P::N], const uint32_t t[2 * P::N]) {
#if SEALTOP_PTX_FF
        // Montgomery reduction is linear: with t = l + 2^(32N) h, the result is h + (l + M p) /
        // 2^(32N), M < 2^(32N) the multiple of p that clears l's words. The low half l enters as
        // the running sum T = e + 2^32 o of operator* and each row adds m * p and shifts one word
        // (redc_row); T < 2^(32N) + p before each row, so T + m p < 2^(32(N+1)) and o, which
        // holds words 1..N, cannot carry out. (l + M p) / 2^(32N) < 1 + p and h < p (t < p 2^(32N)),
        // so the sum is below 2p: one conditional subtraction, and no carry out of word N - 1.
        uint32_t e[P::N], o[P::N];
        UNROLL for (int k = 0; k < N; k++) {
            e[k] = t[k];
            o[k] = 0;
        }
        reduce_row(e, o);
        UNROLL for (int k = 1; k < N; k += 2) {
            redc_row(e, o);
            if (k + 1 < N) redc_row(o, e);
        }
        // N is even, so the last row left T = o + 2^32 e with o[0] = 0: r = e + (o >> 32) + h
        r[0] = ptx::add_cc(e[0], o[1]);
        UNROLL for (int k = 1; k < N - 1; k++) r[k] = ptx::addc_cc(e[k], o[k + 1]);
        r[N - 1] = ptx::addc(e[N - 1], 0);
        r[0] = ptx::add_cc(r[0], t[N]);
        UNROLL for (int k = 1; k < N - 1; k++) r[k] = ptx::addc_cc(r[k], t[N + k]);
        r[N - 1] = ptx::addc(r[N - 1], t[2 * N - 1]);
        reduce_once(r, r, 0);
#else
        uint32_t w[2 * P::N];
        UNROLL for (int k = 0; k < 2 * N; k++) w[k] = t[k];
        uint32_t top = 0;  // the carry out of word i + N, added a row later at word i + N + 1
        UNROLL for (int i = 0; i < N; i++) {
            const uint32_t m = w[i] * P::INV;
            uint64_t c = 0;
            UNROLL for (int j = 0; j < N; j++) {
                c += (uint64_t)m * P::mod(j) + w[i + j];
                w[i + j] = (uint32_t)c;
                c >>= 32;
            }
            c += (uint64_t)w[i + N] + top;
            w[i + N] = (uint32_t)c;
            top = (uint32_t)(c >> 32);
        }
        // t + M p < p 2^(32N) + 2^(32N) p: the result w[N..2N) is below 2p
        reduce_once(r, w + N, top);
#endif
    }

    // Montgomery form -> canonical integer (multiply by plain 1).
    HD Mont from_mont() const {
        Mont one_int = zero();
        one_int.v[0] = 1;
        return *this * one_int;
    }
    // canonical integer -> Montgomery form (multiply by R^2).
    HD Mont to_mont() const {
        Mont r2;
        UNROLL for (int i = 0; i < N; i++) r2.v[i] = P::r2(i);
        return *this * r2;
    }

    // a^(p-2) by left-to-right square and multiply; 0 maps to 0.
    HD_NOINLINE Mont inv() const {
        Mont r = one();
        for (int i = 32 * N - 1; i >= 0; i--) {
            r = r.sqr();
            if ((P::mod_m2(i >> 5) >> (i & 31)) & 1) r = r * *this;
        }
        return r;
    }

    // The same inverse with 4-bit windows of p - 2: a table of a^1 .. a^15, then four squarings
    // and at most one product per window (Fp: 380 squarings and 106 products, against 384 and
    // 229 above). For the batch-affine MSM, whose block step waits on one inversion.
    HD_NOINLINE Mont inv_fast() const {
        Mont tab[15];
        tab[0] = *this;
        for (int i = 1; i < 15; i++) tab[i] = tab[i - 1] * *this;
        Mont r = one();
        bool started = false;
        for (int i = 32 * N / 4 - 1; i >= 0; i--) {
            if (started) r = r.sqr().sqr().sqr().sqr();
            const uint32_t nib = (P::mod_m2(i >> 3) >> (4 * (i & 7))) & 15u;
            if (nib) {
                r = started ? r * tab[nib - 1] : tab[nib - 1];
                started = true;
            }
        }
        return r;
    }

    // a^e for a small exponent given as a 64-bit integer.
    HD Mont pow_u64(uint64_t e) const {
        Mont r = one();
        Mont b = *this;
        while (e) {
            if (e & 1) r = r * b;
            b = b.sqr();
            e >>= 1;
        }
        return r;
    }
};
