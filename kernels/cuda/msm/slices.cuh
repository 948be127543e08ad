// A window's buckets weighted by their digit, sum_b (b + 1) bucket[b], in slices of consecutive
// buckets, one thread a slice (the window reduction: msm.py). Host-buildable, so that
// tests/test_cuda_host_slices.py runs the same code on the host against arkworks.
//
// One level (flags 0): a slice [lo, lo + len) keeps a running sum S of its buckets from the top
// and T of the running sums (weights b - lo + 1), then adds lo * S by doublings from lo's top bit:
// at c = 22 (2^21 buckets a window, 65,536 slices of 32) that product is about a third of a
// thread's additions. Two levels (msm.py SLICE_LEVELS = 2): SLICE_SPLIT writes each slice's T and
// S apart, with no product; a second pass over the S's, as buckets of their own, weights slice j
// by j (SLICE_FROM0: weights b - lo, so with its own offset a slice gives sum_b b * x_b) and
// scales by the first level's slice length (2^scale), so that sum_j T_j + len * sum_j j S_j is the
// window's sum, for a few thousand products where there were tens of thousands.
#pragma once
#include "../ec/xyzz.cuh"
#include "../ff/host_cuda.cuh"

#define SLICE_SPLIT 1u
#define SLICE_FROM0 2u

// An XYZZ row by 16-byte loads (rows are 192 or 384 bytes, so 16-byte aligned): a warp's 4-byte
// loads of 32 rows each touch 32 lines, and Nsight Compute on the H200 found the bucket-sum
// kernel bound by them (L1 77% busy, DRAM 12%).
template <class F>
HD Xyzz<F> load_row(const uint32_t* p) {
    typedef Xyzz<F> X;
    uint32_t w[X::WORDS];
    const uint4* q = reinterpret_cast<const uint4*>(p);
    UNROLL for (int i = 0; i < X::WORDS / 4; i++) {
        const uint4 t = q[i];
        w[4 * i] = t.x; w[4 * i + 1] = t.y; w[4 * i + 2] = t.z; w[4 * i + 3] = t.w;
    }
    return X::load(w);
}

HD int top_bit(uint32_t x) {  // x > 0
#ifdef __CUDACC__
    return 31 - __clz(x);
#else
    return 31 - __builtin_clz(x);
#endif
}

// Slice t (window t / nseg, slice t % nseg of half / nseg buckets) into row w * ostride + j of
// out (and its S into row t of out_s with SLICE_SPLIT). Bucket g (window-major) is rows[g], or,
// with count (no heavy buckets: the bucket-sum pass folded in), the sum of its ceil(count[g] / L)
// work items' rows from rows[item_off[g]].
template <class F>
HD void slice_sum(uint32_t t, const uint32_t* rows, const uint32_t* count, const uint32_t* item_off, uint32_t L,
                  uint32_t half, uint32_t nseg, uint32_t flags, uint32_t scale, uint32_t ostride, uint32_t* out,
                  uint32_t* out_s) {
    typedef Xyzz<F> X;
    const uint32_t w = t / nseg, j = t % nseg, len = half / nseg, lo = j * len;
    const uint64_t first = (uint64_t)w * half;
    X S = X::infinity(), T = X::infinity();
    for (int b = (int)(lo + len) - 1; b >= (int)lo; b--) {
        const uint64_t g = first + b;
        if (flags & SLICE_FROM0) T.add(S);
        if (!count) {
            S.add(load_row<F>(rows + g * X::WORDS));
        } else {
            const uint32_t k = (count[g] + L - 1) / L, off = item_off[g];
            for (uint32_t i = 0; i < k; i++) S.add(load_row<F>(rows + (uint64_t)(off + i) * X::WORDS));
        }
        if (!(flags & SLICE_FROM0)) T.add(S);
    }
    uint32_t* o = out + ((uint64_t)w * ostride + j) * X::WORDS;
    if (flags & SLICE_SPLIT) {
        T.store(o);
        S.store(out_s + (uint64_t)t * X::WORDS);
        return;
    }
    // T = sum (b - lo + 1) bucket[b] (or b - lo); add lo * S, doubling from lo's top bit only
    X R = X::infinity();
    for (int bit = lo ? top_bit(lo) : -1; bit >= 0; bit--) {
        R = R.dbl();
        if ((lo >> bit) & 1) R.add(S);
    }
    R.add(T);
    for (uint32_t k = 0; k < scale; k++) R = R.dbl();
    R.store(o);
}
