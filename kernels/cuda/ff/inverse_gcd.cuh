// Modular inversion by a binary GCD (Bernstein-Yang "safegcd" divsteps), variable time.
//
// What: inv_gcd(a) returns what Mont::inv_fast() returns, bit for bit: the Montgomery form of
// a^-1 (0 maps to 0); an Fp2 overload inverts through its norm, as Fp2::inv_fast() does.
//
// Why: Fermat's a^(p-2) is a chain of ~490 dependent Montgomery products (Fp), and the top level
// of the batch inversion (batch_inverse.cuh) waits on one such chain every round. A GCD takes
// ~790 divsteps for Fp (~530 for Fr), done in batches on one machine word each, with a matrix
// product over the multi-word values per batch, whose products are independent of each other.
//
// How: with x the stored words (x = aR mod p), f = p, g = x, d = 0, e = R^2 mod p, every batch
// runs B divsteps on the low word of f and g alone, giving a 2x2 matrix T with
// 2^B (f', g') = T (f, g), and applies it: to (f, g) exactly, to (d, e) mod p, where d and e get
// the multiple of p that makes the division by 2^B exact (p^-1 mod 2^B, by Newton's iteration).
// Throughout f = d x R^-2 and g = e x R^-2 (mod p), so when g reaches 0, f = +-1 (p is prime)
// and +-d = x^-1 R^2 = a^-1 R, the answer; no Montgomery product is needed. The divsteps skip
// runs of zero bits of g at once (count trailing zeros) and cancel up to 6 low bits of g per step
// with a multiple of f (f's inverse mod 64 by one Newton step), ~4 divsteps a loop iteration.
// That is the divstep sequence of Bernstein and Yang's constant-time algorithm (delta = 1 at the
// start; here eta = -delta), only stopped as soon as g = 0. Their bound, (49 d + 57) / 17
// divsteps for d >= 46 bits (Theorem 11.2), caps the number of batches, so no input loops long.
//
// Two limb widths (SEALTOP_INV_GCD_BITS, a build define, picks inv_gcd's; inv_gcd_w takes either):
//   30 (the default): 32-bit words, batches of 30 divsteps (~27 for Fp, at most 37), values in
//       30-bit limbs, each product one 32 x 32 -> 64-bit multiply-add into a 64-bit sum (three
//       products stay below 2^62): the GPU's native width;
//   62: 64-bit words, batches of 62 divsteps (~13 for Fp, at most 18), values in 62-bit limbs,
//       products summed in a 128-bit accumulator of two words (__mul64hi on the device, as
//       NVRTC has no __int128).
// On sm_90 (nvcc 13.0, static counts, not timings) the 30-bit divstep loop is 36 SASS
// instructions an iteration against 69, and a batch's matrix products for Fp ~390 against
// ~1970: ~18,000 instructions an Fp inversion against ~40,000 (~205 loop iterations either way),
// at 102 registers against 124. Fermat's inv_fast is ~490 products of a few hundred each.
// Limbs below the top are in [0, 2^B), the top one is signed. Ranges (Bernstein-Yang; the
// libsecp256k1 write-up of safegcd): every matrix has |u| + |v| <= 2^B and |q| + |r| <= 2^B;
// f, g stay in [-p, p] and d, e in (-2p, p).
#pragma once
#include "bls12_381.cuh"

#ifndef SEALTOP_INV_GCD_BITS
#define SEALTOP_INV_GCD_BITS 30
#endif

namespace gcdinv {

// the number of trailing zero bits of x, for x != 0
HD int ctz(uint64_t x) {
#if defined(__CUDA_ARCH__)
    return __ffsll((long long)x) - 1;
#else
    return __builtin_ctzll(x);
#endif
}
HD int ctz(uint32_t x) {
#if defined(__CUDA_ARCH__)
    return __ffs((int)x) - 1;
#else
    return __builtin_ctz(x);
#endif
}

// the high 64 bits of the signed 128-bit product a b
HD int64_t mulhi(int64_t a, int64_t b) {
#if defined(__CUDA_ARCH__)
    return __mul64hi((long long)a, (long long)b);
#else
    return (int64_t)(((__int128)a * b) >> 64);
#endif
}

// 62-bit limbs on 64-bit words. Acc: a signed 128-bit sum lo + 2^64 hi.
struct Limbs62 {
    typedef uint64_t U;
    typedef int64_t S;
    static const int B = 62;
    struct Acc {
        uint64_t lo;
        int64_t hi;
        HD void set(S a, S b) {
            lo = (uint64_t)a * (uint64_t)b;
            hi = mulhi(a, b);
        }
        HD void mac(S a, S b) {  // += a b
            const uint64_t pl = (uint64_t)a * (uint64_t)b;
            lo += pl;
            hi += mulhi(a, b) + (int64_t)(lo < pl);
        }
        HD void shr() {  // >>= 62, arithmetic
            lo = (lo >> 62) | ((uint64_t)hi << 2);
            hi >>= 62;
        }
        HD U low() const { return lo; }
        HD S top() const { return (S)lo; }  // once the sum fits a word
    };
};

// 30-bit limbs on 32-bit words: the sums of three products stay below 2^62, so one 64-bit word
// accumulates them.
struct Limbs30 {
    typedef uint32_t U;
    typedef int32_t S;
    static const int B = 30;
    struct Acc {
        int64_t v;
        HD void set(S a, S b) { v = (int64_t)a * b; }
        HD void mac(S a, S b) { v += (int64_t)a * b; }
        HD void shr() { v >>= 30; }
        HD U low() const { return (U)v; }
        HD S top() const { return (S)v; }
    };
};

// The matrix of one batch: 2^B (f', g') = (u f + v g, q f + r g).
template <class W>
struct Trans {
    typename W::S u, v, q, r;
};

// B divsteps on the low words of f and g (f odd), from eta = -delta; returns the new eta.
// The first k divsteps depend only on the low k bits of f and g, and after j of them the low
// (word bits - j) bits of the shifted g are still exact, so one word suffices for B.
template <class W>
HD int divsteps(int eta, typename W::U f, typename W::U g, Trans<W>& t) {
    typedef typename W::U U;
    // (u, v; q, r) with 2^j (f, g) = (u f0 + v g0, q f0 + r g0) after j divsteps; wrapping
    // unsigned arithmetic, the entries stay within +-2^B
    U u = 1, v = 0, q = 0, r = 1;
    int i = W::B;  // divsteps left
    for (;;) {
        // min(trailing zeros of g, i) divsteps at once: each halves g (g even: no swap, no add)
        const int z = ctz((U)(g | ((U)1 << i)));
        g >>= z;
        u <<= z;
        v <<= z;
        eta -= z;
        i -= z;
        if (i == 0) break;
        // g is odd. delta > 0: the divstep swaps, (f, g) = (g, -f) before it adds
        if (eta < 0) {
            eta = -eta;
            const U tf = f, tu = u, tv = v;
            f = g;
            g = 0 - tf;
            u = q;
            v = r;
            q = 0 - tu;
            r = 0 - tv;
        }
        // The next min(eta + 1, i) divsteps cannot swap, so each adds f when g is odd and halves:
        // together g + w f with w = -g / f mod 2^k makes the low k bits zero; k <= 6 for f's
        // inverse mod 64, f (2 - f^2) (f^2 = 1 mod 8 for odd f, one Newton step doubles that).
        int k = eta + 1 < i ? eta + 1 : i;
        k = k < 6 ? k : 6;
        const uint32_t f32 = (uint32_t)f;
        const uint32_t finv = f32 * (2u - f32 * f32);
        const U w = (0u - (uint32_t)g * finv) & ((1u << k) - 1u);
        g += w * f;
        q += w * u;
        r += w * v;
    }
    t.u = (typename W::S)u;
    t.v = (typename W::S)v;
    t.q = (typename W::S)q;
    t.r = (typename W::S)r;
    return eta;
}

// (f, g) = T (f, g) / 2^B, exactly (the low B bits of both sums are zero by construction).
template <class W, int L>
HD void update_fg(typename W::S f[L], typename W::S g[L], const Trans<W>& t) {
    typedef typename W::S S;
    const typename W::U mask = ((typename W::U)1 << W::B) - 1;
    typename W::Acc cf, cg;
    cf.set(t.u, f[0]);
    cf.mac(t.v, g[0]);
    cg.set(t.q, f[0]);
    cg.mac(t.r, g[0]);
    cf.shr();
    cg.shr();
    UNROLL for (int k = 1; k < L; k++) {
        cf.mac(t.u, f[k]);
        cf.mac(t.v, g[k]);
        cg.mac(t.q, f[k]);
        cg.mac(t.r, g[k]);
        f[k - 1] = (S)(cf.low() & mask);
        g[k - 1] = (S)(cg.low() & mask);
        cf.shr();
        cg.shr();
    }
    f[L - 1] = cf.top();  // f, g stay within +-p: the rest fits a word
    g[L - 1] = cg.top();
}

// (d, e) = (T (d, e) + p (md, me)) / 2^B, with md, me making the divisions exact: congruent to
// T (d, e) / 2^B mod p. From d, e in (-2p, p): adding u p when d < 0 (v p when e < 0) makes
// |u d + v e| < 2^B p, and subtracting (0 .. 2^B) p to clear the low bits keeps the result in
// (-2p, p) again. minv = p^-1 mod 2^B.
template <class W, int L>
HD void update_de(typename W::S d[L], typename W::S e[L], const Trans<W>& t, const typename W::S m[L],
                  typename W::U minv) {
    typedef typename W::S S;
    typedef typename W::U U;
    const U mask = ((U)1 << W::B) - 1;
    const S sd = d[L - 1] < 0 ? -1 : 0, se = e[L - 1] < 0 ? -1 : 0;
    S md = (t.u & sd) + (t.v & se);
    S me = (t.q & sd) + (t.r & se);
    // the low B bits of u d + v e (of q d + r e) and the multiple of p that clears them
    const U ld = (U)t.u * (U)d[0] + (U)t.v * (U)e[0];
    const U le = (U)t.q * (U)d[0] + (U)t.r * (U)e[0];
    md -= (S)((minv * ld + (U)md) & mask);
    me -= (S)((minv * le + (U)me) & mask);
    typename W::Acc cd, ce;
    cd.set(t.u, d[0]);
    cd.mac(t.v, e[0]);
    cd.mac(m[0], md);
    ce.set(t.q, d[0]);
    ce.mac(t.r, e[0]);
    ce.mac(m[0], me);
    cd.shr();
    ce.shr();
    UNROLL for (int k = 1; k < L; k++) {
        cd.mac(t.u, d[k]);
        cd.mac(t.v, e[k]);
        cd.mac(m[k], md);
        ce.mac(t.q, d[k]);
        ce.mac(t.r, e[k]);
        ce.mac(m[k], me);
        d[k - 1] = (S)(cd.low() & mask);
        e[k - 1] = (S)(ce.low() & mask);
        cd.shr();
        ce.shr();
    }
    d[L - 1] = cd.top();
    e[L - 1] = ce.top();
}

// Limbs below the top into [0, 2^B), the carries into the (signed) top limb.
template <class W, int L>
HD void carry(typename W::S x[L]) {
    typename W::S c = 0;
    UNROLL for (int k = 0; k < L - 1; k++) {
        c += x[k];
        x[k] = (typename W::S)((typename W::U)c & (((typename W::U)1 << W::B) - 1));
        c >>= W::B;
    }
    x[L - 1] += c;
}

// x += m when x < 0 (x carried).
template <class W, int L>
HD void add_if_negative(typename W::S x[L], const typename W::S m[L]) {
    const typename W::S s = x[L - 1] < 0 ? -1 : 0;
    UNROLL for (int k = 0; k < L; k++) x[k] += m[k] & s;
    carry<W, L>(x);
}

// N 32-bit words (little-endian) -> L limbs of B bits.
template <class W, int N, int L>
HD void to_limbs(typename W::S x[L], const uint32_t w[N]) {
    UNROLL for (int k = 0; k < L; k++) {
        const int b = W::B * k, j = b / 32, s = b % 32;
        uint64_t lo = j < N ? w[j] : 0;
        if (j + 1 < N) lo |= (uint64_t)w[j + 1] << 32;
        uint64_t y = lo >> s;
        if (s + W::B > 64 && j + 2 < N) y |= (uint64_t)w[j + 2] << (64 - s);
        x[k] = (typename W::S)(y & ((1ull << W::B) - 1));
    }
}

// L limbs in [0, 2^B) of a value below 2^(32 N) -> N words.
template <class W, int N, int L>
HD void from_limbs(uint32_t w[N], const typename W::S x[L]) {
    UNROLL for (int j = 0; j < N; j++) {
        const int b = 32 * j, k = b / W::B, s = b % W::B;
        uint64_t y = (uint64_t)x[k] >> s;
        UNROLL for (int a = 1; a < 3; a++) {  // the next limbs, while the word is not full
            const int at = a * W::B - s;
            if (at < 32 && k + a < L) y |= (uint64_t)x[k + a] << at;
        }
        w[j] = (uint32_t)y;
    }
}

// x^-1 R^2 mod p for the stored words x of a (a^-1 in Montgomery form), with B-bit limbs.
template <class W, class P>
HD Mont<P> invert(const Mont<P>& a) {
    typedef typename W::S S;
    typedef typename W::U U;
    const int N = P::N;
    const int L = (32 * N + 2 + W::B - 1) / W::B;  // limbs of B bits: room for 32 N + 2 signed bits
    // divsteps that take any input below 2^(32 N) to g = 0 (Bernstein-Yang, Theorem 11.2), in
    // batches of B
    const int MAX_BATCHES = ((49 * 32 * N + 57) / 17 + W::B - 1) / W::B;
    if (a.is_zero()) return a;

    uint32_t w[P::N];
    UNROLL for (int j = 0; j < N; j++) w[j] = P::mod_c(j);
    S m[L], f[L], g[L], d[L], e[L];
    to_limbs<W, N, L>(m, w);
    to_limbs<W, N, L>(g, a.v);
    UNROLL for (int j = 0; j < N; j++) w[j] = P::r2(j);
    to_limbs<W, N, L>(e, w);
    UNROLL for (int k = 0; k < L; k++) {
        f[k] = m[k];
        d[k] = 0;
    }
    // p^-1 mod 2^64 by Newton's iteration from p (right mod 8): 3, 6, 12, 24, 48, 96 bits
    const uint64_t p0 = (uint64_t)P::mod_c(1) << 32 | P::mod_c(0);
    uint64_t pinv = p0;
    UNROLL for (int it = 0; it < 5; it++) pinv *= 2 - p0 * pinv;
    const U minv = (U)(pinv & ((1ull << W::B) - 1));

    int eta = -1;
#if defined(__CUDA_ARCH__)
#pragma unroll 1
#endif
    for (int b = 0; b < MAX_BATCHES; b++) {
        Trans<W> t;
        eta = divsteps<W>(eta, (U)f[0] | ((U)f[1] << W::B), (U)g[0] | ((U)g[1] << W::B), t);
        update_fg<W, L>(f, g, t);
        update_de<W, L>(d, e, t, m, minv);
        S any = 0;
        UNROLL for (int k = 0; k < L; k++) any |= g[k];
        if (any == 0) break;
    }

    // f = +-1: x^-1 R^2 = sign(f) d, in (-2p, 2p), reduced to [0, p)
    const S s = f[L - 1] < 0 ? -1 : 0;  // -1 when f = -1
    UNROLL for (int k = 0; k < L; k++) d[k] = (d[k] ^ s) - s;
    carry<W, L>(d);
    add_if_negative<W, L>(d, m);
    add_if_negative<W, L>(d, m);
    S t[L];
    UNROLL for (int k = 0; k < L; k++) t[k] = d[k] - m[k];
    carry<W, L>(t);
    const S keep = t[L - 1] < 0 ? -1 : 0;  // -1 when d < p
    UNROLL for (int k = 0; k < L; k++) d[k] = (d[k] & keep) | (t[k] & ~keep);
    Mont<P> r;
    from_limbs<W, N, L>(r.v, d);
    return r;
}

}  // namespace gcdinv

#if SEALTOP_INV_GCD_BITS == 62
typedef gcdinv::Limbs62 GcdLimbs;
#else
typedef gcdinv::Limbs30 GcdLimbs;
#endif

// a^-1 in Montgomery form (0 maps to 0) with limbs W (gcdinv::Limbs62 or gcdinv::Limbs30).
template <class W, class P>
HD_NOINLINE Mont<P> inv_gcd_w(Mont<P> a) { return gcdinv::invert<W, P>(a); }

// 1/(c0 + c1 u) = (c0 - c1 u) / (c0^2 + c1^2), as Fp2::inv_fast; 0 maps to 0.
template <class W>
HD_NOINLINE Fp2 inv_gcd_w(Fp2 a) {
    const Fp t = inv_gcd_w<W>(a.c0.sqr() + a.c1.sqr());
    Fp2 r;
    r.c0 = a.c0 * t;
    r.c1 = (a.c1 * t).neg();
    return r;
}

// the same with SEALTOP_INV_GCD_BITS's limbs
template <class P>
HD Mont<P> inv_gcd(const Mont<P>& a) { return inv_gcd_w<GcdLimbs>(a); }
HD Fp2 inv_gcd(const Fp2& a) { return inv_gcd_w<GcdLimbs>(a); }
