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

    // CIOS Montgomery multiplication: a * b * R^-1 mod p.
    HD friend Mont operator*(const Mont& a, const Mont& b) {
#if SEALTOP_PTX_FF
        // Each outer step adds a*b[i] and then m*p as two carry chains each (low halves into
        // t[j], high halves into t[j+1]), then shifts t down one word. Both moduli are below
        // 2^(32N-1), so t stays below 2p and the running sum below 2^(32(N+1)): N+1 words
        // suffice and no chain carries out of t[N] (the "no-carry" condition; checked against
        // Python integers in tests/test_cuda_ff.py and by the model in the commit that added it).
        uint32_t t[P::N + 1];
        UNROLL for (int i = 0; i < N + 1; i++) t[i] = 0;
        UNROLL for (int i = 0; i < N; i++) {
            const uint32_t bi = b.v[i];
            t[0] = ptx::mad_lo_cc(a.v[0], bi, t[0]);
            UNROLL for (int j = 1; j < N; j++) t[j] = ptx::madc_lo_cc(a.v[j], bi, t[j]);
            t[N] = ptx::addc(t[N], 0);
            t[1] = ptx::mad_hi_cc(a.v[0], bi, t[1]);
            UNROLL for (int j = 1; j < N - 1; j++) t[j + 1] = ptx::madc_hi_cc(a.v[j], bi, t[j + 1]);
            t[N] = ptx::madc_hi(a.v[N - 1], bi, t[N]);
            const uint32_t m = t[0] * P::INV;
            ptx::mad_lo_cc(m, P::mod(0), t[0]);  // low word becomes 0; only its carry is kept
            UNROLL for (int j = 1; j < N; j++) t[j] = ptx::madc_lo_cc(m, P::mod(j), t[j]);
            t[N] = ptx::addc(t[N], 0);
            t[1] = ptx::mad_hi_cc(m, P::mod(0), t[1]);
            UNROLL for (int j = 1; j < N - 1; j++) t[j + 1] = ptx::madc_hi_cc(m, P::mod(j), t[j + 1]);
            t[N] = ptx::madc_hi(m, P::mod(N - 1), t[N]);
            UNROLL for (int j = 0; j < N; j++) t[j] = t[j + 1];
            t[N] = 0;
        }
        Mont r;
        reduce_once(r.v, t, 0);
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

    HD Mont sqr() const { return *this * *this; }

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
