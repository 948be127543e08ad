// Pippenger multi-scalar multiplication for G1 and G2, with the 0/1 split of the scalars.
//
// Pipeline (host side in kernels/cuda/msm.py):
//   msm_scalars      Fr Montgomery -> canonical integers, and a class per scalar: 0, 1 or other;
//   *_sum_ones       points whose scalar is 1, summed with plain additions (no buckets);
//   msm_histogram    signed c-bit digits of the "other" scalars, counted per (window, bucket);
//   msm_scatter      a counting sort: (point index | sign << 31) grouped by bucket (for large,
//                    evenly spread tails msm_scatter_runs_w: one pass into fixed runs, no histogram);
//   msm_items        each bucket cut into work items of at most L entries (bounded per-thread
//                    work even when many scalars share a digit);
//   *_accumulate     one thread per item: XYZZ += affine point (negated for negative digits);
//   *_bucket_sum     one thread per bucket: the sum of its items;
//   *_segments       sum_b (b + 1) * bucket[b] over a slice of one window's buckets, as a running
//                    sum plus lo * S for the slice's offset lo;
//   *_reduce         sums consecutive runs of XYZZ points (slices -> windows, ones partials);
//   *_finish         Horner over the windows (c doublings each), plus the ones sum, to affine.
// Digits are signed (digits.cuh): a window has 2^(c-1) buckets, bucket |d| - 1.
#pragma once
#include "../ec/xyzz.cuh"
#include "digits.cuh"
#include "slices.cuh"

// canon holds the tail's canonical scalars in entry order: row t is entry t's, whose point is idx[t]
// (or t where there is no idx), so the sort reads them in order.
__device__ __forceinline__ void load_scalar(const uint32_t* canon, uint64_t p, uint32_t s[8]) {
    const uint4* q = reinterpret_cast<const uint4*>(canon + p * 8);
    uint4 a = q[0], b = q[1];
    s[0] = a.x; s[1] = a.y; s[2] = a.z; s[3] = a.w; s[4] = b.x; s[5] = b.y; s[6] = b.z; s[7] = b.w;
}

#ifdef MSM_GENERIC_KERNELS
extern "C" {

__global__ void msm_scalars(const uint32_t* scalars, uint32_t* canon, uint8_t* cls, uint64_t n) {
    uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    Fr s = Fr::load(scalars + i * 8).from_mont();
    s.store(canon + i * 8);
    uint32_t hi = 0;
    UNROLL for (int k = 1; k < 8; k++) hi |= s.v[k];
    cls[i] = (hi == 0 && s.v[0] <= 1) ? (uint8_t)s.v[0] : (uint8_t)2;
}

__global__ void msm_histogram(const uint32_t* canon, const uint32_t* idx, uint32_t m, int c, int nwin, uint32_t* count) {
    uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= m) return;
    uint32_t s[8];
    load_scalar(canon, t, s);
    const uint32_t half = 1u << (c - 1);
    uint32_t carry = 0, neg;
    for (int w = 0; w < nwin; w++) {
        uint32_t mag = signed_digit(scalar_bits(s, w * c, c), c, &carry, &neg);
        if (mag) atomicAdd(&count[(uint64_t)w * half + mag - 1], 1u);
    }
}

__global__ void msm_scatter(const uint32_t* canon, const uint32_t* idx, uint32_t m, int c, int nwin, uint32_t* cursor, uint32_t* sorted) {
    uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= m) return;
    uint32_t p = idx ? idx[t] : t;
    uint32_t s[8];
    load_scalar(canon, t, s);
    const uint32_t half = 1u << (c - 1);
    uint32_t carry = 0, neg;
    for (int w = 0; w < nwin; w++) {
        uint32_t mag = signed_digit(scalar_bits(s, w * c, c), c, &carry, &neg);
        if (mag) {
            uint32_t pos = atomicAdd(&cursor[(uint64_t)w * half + mag - 1], 1u);
            sorted[pos] = p | (neg << 31);
        }
    }
}

// The same two passes with one window per grid row (blockIdx.y = w): the blocks running at one
// time then share one window's counters (2^(c-1) words, L2-resident even at c = 20), at the cost
// of reading each scalar once per window. The carry into window w is recomputed from the lower
// windows' bits, exactly as the loops above produce it.
//
// Each thread takes SORT_PER_THREAD entries (block b's are b * 256 * K + k * 256 + threadIdx.x, so
// every load stays coalesced) and issues all their loads, then all their atomics, then all their
// stores. With one entry a thread the scatter is a chain of dependent accesses (index, scalar,
// counter, store) and waits on memory: Nsight Compute on the H200 (2026-12-04, H's GLV split at
// 2^27, 1.6 G entries) found 103 of every 129 cycles between a warp's instructions stalled on
// L1TEX, 1.38 TB/s of memory traffic and DRAM 29% busy, in 103.8 ms.
#ifndef SORT_PER_THREAD
#define SORT_PER_THREAD 4
#endif

// Window blockIdx.y's digit magnitude (0: none) and sign of each of the thread's entries, and
// their point indices (sign in bit 31 added by the caller).
__device__ __forceinline__ void window_digits(const uint32_t* canon, const uint32_t* idx, uint32_t m, int c,
                                              uint32_t p[SORT_PER_THREAD], uint32_t mag[SORT_PER_THREAD],
                                              uint32_t neg[SORT_PER_THREAD]) {
    const uint32_t base = blockIdx.x * (blockDim.x * SORT_PER_THREAD) + threadIdx.x;
    uint32_t s[SORT_PER_THREAD][8];
    UNROLL for (int k = 0; k < SORT_PER_THREAD; k++) {
        const uint32_t t = base + k * blockDim.x;
        p[k] = t < m ? (idx ? idx[t] : t) : 0;
    }
    UNROLL for (int k = 0; k < SORT_PER_THREAD; k++) {
        if (base + k * blockDim.x < m) load_scalar(canon, base + k * blockDim.x, s[k]);
        else UNROLL for (int i = 0; i < 8; i++) s[k][i] = 0;  // digit 0: no entry
    }
    const WindowDigits wd(c, blockIdx.y);
    UNROLL for (int k = 0; k < SORT_PER_THREAD; k++) mag[k] = wd.digit(s[k], &neg[k]);
}

__global__ void msm_histogram_w(const uint32_t* canon, const uint32_t* idx, uint32_t m, int c, uint32_t* count) {
    uint32_t p[SORT_PER_THREAD], mag[SORT_PER_THREAD], neg[SORT_PER_THREAD];
    window_digits(canon, idx, m, c, p, mag, neg);
    uint32_t* wc = count + ((uint64_t)blockIdx.y << (c - 1));
    UNROLL for (int k = 0; k < SORT_PER_THREAD; k++)
        if (mag[k]) atomicAdd(&wc[mag[k] - 1], 1u);
}

__global__ void msm_scatter_w(const uint32_t* canon, const uint32_t* idx, uint32_t m, int c, uint32_t* cursor, uint32_t* sorted) {
    uint32_t p[SORT_PER_THREAD], mag[SORT_PER_THREAD], neg[SORT_PER_THREAD], pos[SORT_PER_THREAD];
    window_digits(canon, idx, m, c, p, mag, neg);
    uint32_t* wc = cursor + ((uint64_t)blockIdx.y << (c - 1));
    UNROLL for (int k = 0; k < SORT_PER_THREAD; k++)
        if (mag[k]) pos[k] = atomicAdd(&wc[mag[k] - 1], 1u);
    UNROLL for (int k = 0; k < SORT_PER_THREAD; k++)
        if (mag[k]) sorted[pos[k]] = p[k] | (neg[k] << 31);
}

// The scatter with no histogram pass first, for scalars whose digits spread evenly (H's: random
// field elements): window w's buckets below wnb[w] each own a run of wcap[w] entries from
// wbase[w] + (|d| - 1) * wcap[w]. count[b] takes every entry; one whose run is full, or whose
// bucket has no run, is not written and sets *overflow, and the caller then sorts again the exact
// way, from count (the whole histogram by then). One grid row per window, like msm_scatter_w.
__global__ void msm_scatter_runs_w(const uint32_t* canon, const uint32_t* idx, uint32_t m, int c, const uint32_t* wbase,
                                   const uint32_t* wcap, const uint32_t* wnb, uint32_t* count, uint32_t* sorted,
                                   uint32_t* overflow) {
    uint32_t p[SORT_PER_THREAD], mag[SORT_PER_THREAD], neg[SORT_PER_THREAD], pos[SORT_PER_THREAD];
    window_digits(canon, idx, m, c, p, mag, neg);
    const int w = blockIdx.y;
    uint32_t* wc = count + ((uint64_t)w << (c - 1));
    UNROLL for (int k = 0; k < SORT_PER_THREAD; k++)
        if (mag[k]) pos[k] = atomicAdd(&wc[mag[k] - 1], 1u);
    const uint32_t base = wbase[w], cap = wcap[w], nb = wnb[w];
    UNROLL for (int k = 0; k < SORT_PER_THREAD; k++) {
        if (!mag[k]) continue;
        if (mag[k] - 1 < nb && pos[k] < cap) sorted[base + (mag[k] - 1) * cap + pos[k]] = p[k] | (neg[k] << 31);
        else *overflow = 1;
    }
}

// Work items: bucket b owns items item_off[b] .. item_off[b] + ceil(count[b] / L) - 1.
__global__ void msm_items(const uint32_t* count, const uint32_t* bucket_off, const uint32_t* item_off, uint32_t nb, uint32_t L,
                          uint32_t* item_start, uint32_t* item_end) {
    uint32_t b = blockIdx.x * blockDim.x + threadIdx.x;
    if (b >= nb) return;
    // positions in 64 bits: the runs' layout reaches 2.78 G entries at 2^27 (GLV), and pos + L
    // must not wrap for a run that ends within L of 2^32
    const uint64_t start = bucket_off[b], end = start + count[b];
    uint32_t it = item_off[b];
    for (uint64_t pos = start; pos < end; pos += L, it++) {
        item_start[it] = (uint32_t)pos;
        item_end[it] = (uint32_t)min(pos + L, end);
    }
}

}  // extern "C"
#endif  // MSM_GENERIC_KERNELS

template <class F>
__device__ __forceinline__ void sum_ones(const uint32_t* points, const uint8_t* cls, uint64_t n, uint32_t chunk, uint32_t* partial) {
    typedef Affine<F> A;
    typedef Xyzz<F> X;
    uint64_t t = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    uint64_t start = t * chunk;
    if (start >= n) return;
    uint64_t end = min(start + chunk, n);
    X acc = X::infinity();
    for (uint64_t i = start; i < end; i++)
        if (cls[i] == 1) acc.add(A::load(points + i * A::WORDS));
    acc.store(partial + t * X::WORDS);
}

// MSM_G2_INLINE=1 (a build define, for measuring a variant of msm_g2): G2's mixed addition inline
// in the accumulation as G1's is. Out of line by default, so that G2 compiles in reasonable time;
// G2's ones are B2's main cost (20 M additions a porep-32g partition, 39 ms alone on the H200).
#ifndef MSM_G2_INLINE
#define MSM_G2_INLINE 0
#endif

// Thread t takes work item order[t] (order: the items by length, longest first, so that the
// threads of a warp run chains of nearly one length; null: item t).
template <class F>
__device__ __forceinline__ void accumulate(const uint32_t* points, const uint32_t* sorted, const uint32_t* item_start, const uint32_t* item_end,
                                           const uint32_t* order, uint32_t nitems, uint32_t* partial) {
    typedef Affine<F> A;
    typedef Xyzz<F> X;
    uint32_t it = blockIdx.x * blockDim.x + threadIdx.x;
    if (it >= nitems) return;
    if (order) it = order[it];
    X acc = X::infinity();
    const uint32_t end = item_end[it];
    uint32_t pos = item_start[it];
    uint32_t v = pos < end ? sorted[pos] : 0;
    for (; pos < end; pos++) {
        // the next entry's index is read one addition ahead (prefetching its point into L1 as
        // well measured no difference on the H200: 135.5 against 136.2 ms at 2^24, 460.9 against
        // 459.0 at 2^26, so it is not done)
        const uint32_t vn = pos + 1 < end ? sorted[pos + 1] : 0;
        A a = A::load(points + (uint64_t)(v & 0x7fffffffu) * A::WORDS);
        const uint32_t neg = v >> 31;
        v = vn;
        if (a.is_inf()) continue;
        if (neg) a.y = a.y.neg();
        if constexpr (F::WORDS == Fp::WORDS || MSM_G2_INLINE) acc.add_affine_inline(a.x, a.y);  // G1 (G2 too in that build)
        else acc.add_affine(a.x, a.y);
    }
    acc.store(partial + (uint64_t)it * X::WORDS);
}

template <class F>
__device__ __forceinline__ void bucket_sum(const uint32_t* partial, const uint32_t* count, const uint32_t* item_off, uint32_t nb, uint32_t L,
                                           uint32_t* buckets) {
    typedef Xyzz<F> X;
    uint32_t b = blockIdx.x * blockDim.x + threadIdx.x;
    if (b >= nb) return;
    uint32_t k = (count[b] + L - 1) / L, off = item_off[b];
    X acc = X::infinity();
    for (uint32_t j = 0; j < k; j++) acc.add(load_row<F>(partial + (uint64_t)(off + j) * X::WORDS));
    acc.store(buckets + (uint64_t)b * X::WORDS);
}

// Slice j of window w covers buckets [lo, lo + len): out = sum_b (b + 1) bucket[b] over the slice
// (slices.cuh, one level).
template <class F>
__device__ __forceinline__ void segments(const uint32_t* rows, const uint32_t* count, const uint32_t* item_off, uint32_t L,
                                         uint32_t half, uint32_t nseg, uint32_t nwin, uint32_t* out) {
    uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= nseg * nwin) return;
    slice_sum<F>(t, rows, count, item_off, L, half, nseg, 0u, 0u, nseg, out, nullptr);
}

template <class F>
__device__ __forceinline__ void reduce(const uint32_t* in, uint64_t count, uint32_t per, uint32_t* out) {
    typedef Xyzz<F> X;
    uint64_t t = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    uint64_t start = t * per;
    if (start >= count) return;
    uint64_t end = min(start + per, count);
    X acc = X::infinity();
    for (uint64_t i = start; i < end; i++) acc.add(X::load(in + i * X::WORDS));
    acc.store(out + t * X::WORDS);
}

// out[g] = sum of in[start[g] .. start[g] + len[g]) (XYZZ; infinity for len 0): one level of the
// segmented reduction trees in msm.py, which keep len small since one thread's chain of XYZZ
// additions runs at latency, not throughput (about 18 us an addition on the H200).
template <class F>
__device__ __forceinline__ void reduce_groups(const uint32_t* in, const uint32_t* start, const uint32_t* len, uint32_t ngroups,
                                              uint32_t* out) {
    typedef Xyzz<F> X;
    uint32_t g = blockIdx.x * blockDim.x + threadIdx.x;
    if (g >= ngroups) return;
    X acc = X::infinity();
    for (uint32_t i = start[g], e = start[g] + len[g]; i < e; i++) acc.add(X::load(in + (uint64_t)i * X::WORDS));
    acc.store(out + (uint64_t)g * X::WORDS);
}

// In place, one thread a bucket g of n: rows[first[g]] = the sum of its len[g] rows from there, and
// count[bucket[g]] = 1, so the window slices read that one row (msm_fold.py: why). The buckets'
// rows are disjoint, so no thread reads a row another writes.
template <class F>
__device__ __forceinline__ void fold_groups(uint32_t* rows, const uint32_t* bucket, const uint32_t* first,
                                            const uint32_t* len, uint32_t n, uint32_t* count) {
    typedef Xyzz<F> X;
    uint32_t g = blockIdx.x * blockDim.x + threadIdx.x;
    if (g >= n) return;
    uint32_t* row = rows + (uint64_t)first[g] * X::WORDS;
    X acc = load_row<F>(row);
    for (uint32_t i = 1, k = len[g]; i < k; i++) acc.add(load_row<F>(row + (uint64_t)i * X::WORDS));
    acc.store(row);
    count[bucket[g]] = 1;
}

// One thread: sum_w 2^(c w) win[w] (+ extra), written affine.
template <class F>
__device__ __forceinline__ void finish(const uint32_t* win, int nwin, int c, const uint32_t* extra, uint32_t* out) {
    typedef Xyzz<F> X;
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    X acc = X::infinity();
    for (int w = nwin - 1; w >= 0; w--) {
        if (w != nwin - 1)
            for (int k = 0; k < c; k++) acc = acc.dbl();
        acc.add(X::load(win + (uint64_t)w * X::WORDS));
    }
    if (extra) acc.add(X::load(extra));
    acc.to_affine().store(out);
}

// The bucket accumulation is the hot loop: cap its registers (168) so that 3 blocks of 128 threads
// fit on an SM (G1; G2 sets MSM_ACC_BOUNDS empty). Measured on the H200 with the even/odd field
// multiplication: 4 blocks (128 registers, spilling) 152.5 ms at 2^24, 3 blocks 147.3 ms,
// 2 blocks 156.6 ms.
#ifndef MSM_ACC_BOUNDS
#define MSM_ACC_BOUNDS __launch_bounds__(128, 3)
#endif

// The window slices' launch bounds (a build define, for measuring variants; none by default).
#ifndef MSM_SEG_BOUNDS
#define MSM_SEG_BOUNDS
#endif

#define MSM_GROUP_KERNELS(G, F)                                                                                              \
    extern "C" __global__ void G##_sum_ones(const uint32_t* points, const uint8_t* cls, uint64_t n, uint32_t chunk,           \
                                            uint32_t* partial) { sum_ones<F>(points, cls, n, chunk, partial); }                \
    extern "C" __global__ void MSM_ACC_BOUNDS G##_accumulate(const uint32_t* points, const uint32_t* sorted, const uint32_t* s,             \
                                              const uint32_t* e, const uint32_t* order, uint32_t nitems, uint32_t* partial) { \
        accumulate<F>(points, sorted, s, e, order, nitems, partial);                                                         \
    }                                                                                                                        \
    extern "C" __global__ void G##_bucket_sum(const uint32_t* partial, const uint32_t* count, const uint32_t* item_off,     \
                                              uint32_t nb, uint32_t L, uint32_t* buckets) {                                  \
        bucket_sum<F>(partial, count, item_off, nb, L, buckets);                                                             \
    }                                                                                                                        \
    extern "C" __global__ void MSM_SEG_BOUNDS G##_segments(const uint32_t* rows, const uint32_t* count, const uint32_t* item_off,           \
                                            uint32_t L, uint32_t half, uint32_t nseg, uint32_t nwin, uint32_t* out) {          \
        segments<F>(rows, count, item_off, L, half, nseg, nwin, out);                                                        \
    }                                                                                                                        \
    extern "C" __global__ void MSM_SEG_BOUNDS G##_slices(const uint32_t* rows, const uint32_t* count, const uint32_t* item_off, \
                                            uint32_t L, uint32_t half, uint32_t nseg, uint32_t nwin, uint32_t flags,          \
                                            uint32_t scale, uint32_t ostride, uint32_t* out, uint32_t* out_s) {              \
        uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;                                                                  \
        if (t < nseg * nwin) slice_sum<F>(t, rows, count, item_off, L, half, nseg, flags, scale, ostride, out, out_s);       \
    }                                                                                                                        \
    extern "C" __global__ void G##_reduce(const uint32_t* in, uint64_t count, uint32_t per, uint32_t* out) {                \
        reduce<F>(in, count, per, out);                                                                                      \
    }                                                                                                                        \
    extern "C" __global__ void G##_reduce_groups(const uint32_t* in, const uint32_t* start, const uint32_t* len,            \
                                                 uint32_t ngroups, uint32_t* out) {                                          \
        reduce_groups<F>(in, start, len, ngroups, out);                                                                      \
    }                                                                                                                        \
    extern "C" __global__ void G##_fold_groups(uint32_t* rows, const uint32_t* bucket, const uint32_t* first,               \
                                               const uint32_t* len, uint32_t n, uint32_t* count) {                           \
        fold_groups<F>(rows, bucket, first, len, n, count);                                                                  \
    }                                                                                                                        \
    extern "C" __global__ void G##_finish(const uint32_t* win, int nwin, int c, const uint32_t* extra, uint32_t* out) {     \
        finish<F>(win, nwin, c, extra, out);                                                                                 \
    }
