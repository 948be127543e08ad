// Fixed-base scalar multiplication, out[i] = s_i * B for one base B and many scalars: what makes
// a proving key's large sections (2^27 points each at porep-32g) on the device.
//
//   table   table[w][d - 1] = d * 2^(c w) * B, affine, for d in [1, 2^(c-1)] and nwin = ceil(256/c)
//           windows (signed digits, digits.cuh): a scalar costs nwin - 1 mixed additions, one
//           table entry per window, negated for a negative digit;
//   affine  each point's XYZZ sum needs 1/ZZZ: a thread takes K points (strided by the thread
//           count, so a warp's loads and stores are contiguous) and inverts their ZZZ together
//           (Montgomery's trick: one inversion and three products a point), then 1/ZZ = t^2 with
//           t = ZZ/ZZZ, since ZZ^3 = ZZZ^2 for every XYZZ point the formulas make.
// Against one 8-bit unsigned window a digit and one inversion a point (the kernel this replaces:
// 32 additions + ~613 products), a point costs ~15 additions + 7 products + 1/K of an inversion.
//
// The same per-thread normalization (affine_thread) also writes the pair table of the ones' sums:
// P_2j + P_(2j+1) for every pair of a query's points (pair_thread, kernels/cuda/pairs.py).
//
// Written as per-thread functions with no barriers, so that a host build (msm/host_fixed.cpp,
// tests/test_cuda_host_fixed.py) runs the very code thread by thread.
#pragma once
#include "../ec/xyzz.cuh"
#include "digits.cuh"

namespace fixedb {

// Table entry e = w * 2^(c-1) + d - 1: d * 2^(c w) * base, affine (infinity as all zeros).
template <class F>
HD void table_entry(const uint32_t* base, int c, uint32_t e, uint32_t* table) {
    typedef Affine<F> A;
    typedef Xyzz<F> X;
    const uint32_t w = e >> (c - 1), d = (e & ((1u << (c - 1)) - 1)) + 1;
    const A g = A::load(base);
    X acc = X::infinity();
    for (int bit = c - 1; bit >= 0; bit--) {
        acc = acc.dbl();
        if ((d >> bit) & 1) acc.add(g);
    }
    for (uint32_t k = 0; k < (uint32_t)c * w; k++) acc = acc.dbl();
    acc.to_affine().store(table + (uint64_t)e * A::WORDS);
}

// s * base as XYZZ, from the scalar's Montgomery words: one table entry per nonzero digit.
template <class F>
HD Xyzz<F> scalar_point(const uint32_t* table, int c, int nwin, const uint32_t* scalar) {
    typedef Affine<F> A;
    const Fr s = Fr::load(scalar).from_mont();
    const uint32_t half = 1u << (c - 1);
    Xyzz<F> acc = Xyzz<F>::infinity();
    uint32_t carry = 0, neg;
    for (int w = 0; w < nwin; w++) {
        const uint32_t mag = signed_digit(scalar_bits(s.v, w * c, c), c, &carry, &neg);
        if (!mag) continue;
        A a = A::load(table + ((uint64_t)w * half + mag - 1) * A::WORDS);
        if (neg) a.y = a.y.neg();
        acc.add(a);
    }
    return acc;
}

// Thread t of T: points make(t), make(t + T), ... (at most K of them, below n), written affine.
// out[i] holds X, Y until the last pass writes x, y there; scratch holds three rows of F words
// per point: ZZ, ZZZ (1 for infinity, which then comes out as x = y = 0) and the running product
// of the thread's ZZZ.
template <class F, class Make>
HD void affine_thread(const Make& make, uint64_t n, uint64_t t, uint64_t T, uint32_t K, uint32_t* out,
                      uint32_t* scratch) {
    const int W = F::WORDS;
    uint32_t* zz = scratch;
    uint32_t* zzz = scratch + n * W;
    uint32_t* pre = scratch + 2 * n * W;
    F run = F::one();
    uint32_t k = 0;
    for (uint64_t i = t; k < K && i < n; k++, i += T) {
        const Xyzz<F> p = make(i);
        const F z3 = p.is_inf() ? F::one() : p.ZZZ;
        p.X.store(out + i * 2 * W);
        p.Y.store(out + i * 2 * W + W);
        p.ZZ.store(zz + i * W);
        z3.store(zzz + i * W);
        run = run * z3;
        run.store(pre + i * W);
    }
    if (k == 0) return;
    F inv = run.inv_fast();  // 1 / (product of the k ZZZ)
    while (k-- > 0) {
        const uint64_t i = t + (uint64_t)k * T;
        const F u = k ? inv * F::load(pre + (i - T) * W) : inv;  // 1 / ZZZ_i
        inv = inv * F::load(zzz + i * W);
        const F tz = F::load(zz + i * W) * u;  // ZZ / ZZZ = 1/z, so 1/ZZ = tz^2
        const F x = F::load(out + i * 2 * W) * tz.sqr();
        const F y = F::load(out + i * 2 * W + W) * u;
        x.store(out + i * 2 * W);
        y.store(out + i * 2 * W + W);
    }
}

// The fixed-base product of scalar i.
template <class F>
struct ScalarPoint {
    const uint32_t* table;
    int c, nwin;
    const uint32_t* scalars;
    HD Xyzz<F> operator()(uint64_t i) const { return scalar_point<F>(table, c, nwin, scalars + i * 8); }
};

// P_2j + P_(2j+1) of an affine table (infinity, doubling and opposite points as the XYZZ
// addition handles them): the pair table of the ones' sums (kernels/cuda/pairs.py).
template <class F>
struct PairSum {
    const uint32_t* points;
    HD Xyzz<F> operator()(uint64_t j) const {
        typedef Affine<F> A;
        Xyzz<F> p = Xyzz<F>::from_affine(A::load(points + 2 * j * A::WORDS));
        p.add(A::load(points + (2 * j + 1) * A::WORDS));
        return p;
    }
};

template <class F>
HD void mul_thread(const uint32_t* table, int c, int nwin, const uint32_t* scalars, uint64_t n, uint64_t t, uint64_t T,
                   uint32_t K, uint32_t* out, uint32_t* scratch) {
    affine_thread<F>(ScalarPoint<F>{table, c, nwin, scalars}, n, t, T, K, out, scratch);
}

template <class F>
HD void pair_thread(const uint32_t* points, uint64_t npairs, uint64_t t, uint64_t T, uint32_t K, uint32_t* out,
                    uint32_t* scratch) {
    affine_thread<F>(PairSum<F>{points}, npairs, t, T, K, out, scratch);
}

}  // namespace fixedb

#ifdef __CUDACC__
#define FIXED_BASE_KERNELS(G, F)                                                                                             \
    extern "C" __global__ void G##_fixed_table(const uint32_t* base, int c, int nwin, uint32_t* table) {                    \
        const uint32_t e = blockIdx.x * blockDim.x + threadIdx.x;                                                            \
        if (e < ((uint32_t)nwin << (c - 1))) fixedb::table_entry<F>(base, c, e, table);                                      \
    }                                                                                                                        \
    extern "C" __global__ void G##_fixed_mul(const uint32_t* table, int c, int nwin, const uint32_t* scalars, uint64_t n,    \
                                             uint32_t K, uint32_t* out, uint32_t* scratch) {                                 \
        const uint64_t T = (uint64_t)gridDim.x * blockDim.x;                                                                 \
        fixedb::mul_thread<F>(table, c, nwin, scalars, n, (uint64_t)blockIdx.x * blockDim.x + threadIdx.x, T, K, out,       \
                              scratch);                                                                                      \
    }                                                                                                                        \
    extern "C" __global__ void G##_pair_sums(const uint32_t* points, uint64_t npairs, uint32_t K, uint32_t* out,             \
                                             uint32_t* scratch) {                                                            \
        const uint64_t T = (uint64_t)gridDim.x * blockDim.x;                                                                 \
        fixedb::pair_thread<F>(points, npairs, (uint64_t)blockIdx.x * blockDim.x + threadIdx.x, T, K, out, scratch);        \
    }
#endif
