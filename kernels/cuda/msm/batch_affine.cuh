// Batch-affine bucket accumulation: the Pippenger buckets' additions in affine coordinates, with
// one field inversion shared by a whole block's step (Montgomery's trick).
//
// Why: the XYZZ accumulation (msm_core.cuh) costs 8M + 2S per mixed addition; an affine addition
// given 1/(x2 - x1) costs 2M + 1S, and the shared inversion adds 3M per element (one product on
// the way up, two on the way down) plus the block's one inversion, about 6M in all. The bucket
// accumulation is most of a large MSM's time (729.7 of 886 ms at 2^27 on the H200), so this is
// the way under the XYZZ floor (docs/BENCHMARKS.md).
//
// Layout: the work items of msm.py (bucket chunks [item_start, item_end) of the sorted entries)
// are the slots. Thread g of the grid (NT threads) owns slots j = k * NT + g for k < K, so a
// warp's lanes touch neighbouring slots. Each slot's affine accumulator lives in its own row of
// `partial` (the XYZZ output rows: x, y in the first two coordinates); item_start is its cursor.
// One step of a block:
//   1. every thread walks its slots: slot j's next point (x2, y2) meets its accumulator (x1, y1);
//      trivial cases are done at once (empty accumulator: take the point; point at infinity:
//      skip; x1 = x2 with y1 = -y2: infinity), otherwise the denominator d (x2 - x1, or 2 y1 for
//      a doubling) joins the thread's running product, whose value before d is kept in pref[j];
//   2. the block's threads' products are inverted together (warp 0: lane l inverts the product
//      of threads l, l + 32, ..., again by Montgomery's trick, so all 32 lanes do useful work);
//   3. every thread walks its slots backwards: 1/d = inv * pref[j], inv *= d; then
//      lambda = num / d, x3 = lambda^2 - x1 - x2, y3 = lambda (x1 - x3) - y1.
// The block steps until none of its slots has entries left; then each row is completed to XYZZ
// (ZZ = ZZZ = 1, or 0 for infinity), so the bucket sums and window reduction are unchanged.
// Results are group elements, so the MSM's affine result is the same bits as the XYZZ path's.
#pragma once
#include "../ec/xyzz.cuh"

#ifndef MSM_BATCH_THREADS
#define MSM_BATCH_THREADS 256
#endif
#ifndef MSM_BATCH_BOUNDS
#define MSM_BATCH_BOUNDS __launch_bounds__(MSM_BATCH_THREADS, 2)
#endif

// Slot kinds of one step (kind[j]): nothing left to do in step 3, an addition, a doubling.
#define BATCH_NONE 0
#define BATCH_ADD 1
#define BATCH_DBL 2

template <class F>
__device__ __forceinline__ F load_x(const uint32_t* points, uint32_t v) {
    return F::load(points + (uint64_t)(v & 0x7fffffffu) * (2 * F::WORDS));
}

template <class F>
__device__ __forceinline__ F load_y(const uint32_t* points, uint32_t v) {
    F y = F::load(points + (uint64_t)(v & 0x7fffffffu) * (2 * F::WORDS) + F::WORDS);
    return (v >> 31) ? y.neg() : y;
}

template <class F>
__device__ __forceinline__ void accumulate_batch(const uint32_t* points, const uint32_t* sorted, uint32_t* cursor, const uint32_t* item_end,
                                                 uint32_t nitems, uint32_t K, uint32_t* partial, uint32_t* pref, uint8_t* kind) {
    constexpr int T = MSM_BATCH_THREADS;
    constexpr int W = F::WORDS;          // 32-bit words of one coordinate
    constexpr int ROW = 4 * W;           // words of one XYZZ row of partial
    constexpr int PER_LANE = T / 32;     // thread products inverted by one lane of warp 0
    static_assert(T % 32 == 0, "block size must be a multiple of 32");
    __shared__ uint32_t prod[T * W];

    const uint32_t tid = threadIdx.x;
    const uint32_t NT = gridDim.x * T;
    const uint32_t g = blockIdx.x * T + tid;

    // empty accumulators (all-zero x, y: the point at infinity)
    for (uint32_t k = 0; k < K; k++) {
        const uint32_t j = k * NT + g;
        if (j >= nitems) break;
        F::zero().store(partial + (uint64_t)j * ROW);
        F::zero().store(partial + (uint64_t)j * ROW + W);
    }

    while (true) {
        // step 1: denominators and the thread's running product
        F run = F::one();
        int active = 0;
        for (uint32_t k = 0; k < K; k++) {
            const uint32_t j = k * NT + g;
            if (j >= nitems) break;
            const uint32_t p = cursor[j];
            uint8_t kd = BATCH_NONE;
            if (p < item_end[j]) {
                active = 1;
                const uint32_t v = sorted[p];
                uint32_t* acc = partial + (uint64_t)j * ROW;
                const F x2 = load_x<F>(points, v);
                bool inf2 = false;
                if (x2.is_zero()) inf2 = load_y<F>(points, v).is_zero();  // x = 0 alone is a curve point
                if (inf2) {
                    cursor[j] = p + 1;
                } else {
                    const F x1 = F::load(acc);
                    const F y1 = F::load(acc + W);
                    if (x1.is_zero() && y1.is_zero()) {  // empty: take the point
                        x2.store(acc);
                        load_y<F>(points, v).store(acc + W);
                        cursor[j] = p + 1;
                    } else {
                        F d = x2 - x1;
                        if (d.is_zero()) {
                            if ((load_y<F>(points, v) - y1).is_zero()) {
                                d = y1.dbl();  // never zero: no point of order 2 in the group
                                kd = BATCH_DBL;
                            } else {  // P + (-P)
                                F::zero().store(acc);
                                F::zero().store(acc + W);
                                cursor[j] = p + 1;
                            }
                        } else {
                            kd = BATCH_ADD;
                        }
                        if (kd != BATCH_NONE) {
                            run.store(pref + (uint64_t)j * W);
                            run = run * d;
                        }
                    }
                }
            }
            kind[j] = kd;
        }
        run.store(prod + tid * W);
        if (!__syncthreads_or(active)) break;

        // step 2: warp 0 inverts the block's T products, lane l those of threads l + 32 i
        if (tid < 32) {
            F c[PER_LANE];
            c[0] = F::load(prod + tid * W);
            UNROLL for (int i = 1; i < PER_LANE; i++) c[i] = c[i - 1] * F::load(prod + (tid + 32 * i) * W);
            F inv = c[PER_LANE - 1].inv_fast();
            UNROLL for (int i = PER_LANE - 1; i >= 1; i--) {
                const F t = inv * c[i - 1];
                inv = inv * F::load(prod + (tid + 32 * i) * W);
                t.store(prod + (tid + 32 * i) * W);
            }
            inv.store(prod + tid * W);
        }
        __syncthreads();

        // step 3: the additions, slots in reverse order
        F inv = F::load(prod + tid * W);
        const uint32_t kmax = g < nitems ? min(K, (nitems - 1 - g) / NT + 1) : 0;
        for (uint32_t k = kmax; k-- > 0;) {
            const uint32_t j = k * NT + g;
            const uint8_t kd = kind[j];
            if (kd == BATCH_NONE) continue;
            const uint32_t p = cursor[j];
            const uint32_t v = sorted[p];
            uint32_t* acc = partial + (uint64_t)j * ROW;
            const F x1 = F::load(acc);
            const F y1 = F::load(acc + W);
            const F x2 = load_x<F>(points, v);
            F d, num;
            if (kd == BATCH_ADD) {
                d = x2 - x1;
                num = load_y<F>(points, v) - y1;
            } else {
                d = y1.dbl();
                const F xx = x1.sqr();
                num = xx.dbl() + xx;
            }
            const F dinv = inv * F::load(pref + (uint64_t)j * W);
            inv = inv * d;
            const F lam = num * dinv;
            const F x3 = lam.sqr() - x1 - x2;  // a doubling has x2 = x1
            const F y3 = lam * (x1 - x3) - y1;
            x3.store(acc);
            y3.store(acc + W);
            cursor[j] = p + 1;
        }
        __syncthreads();  // prod is rewritten by the next step
    }

    // complete each row to XYZZ: ZZ = ZZZ = 1, or 0 at infinity
    for (uint32_t k = 0; k < K; k++) {
        const uint32_t j = k * NT + g;
        if (j >= nitems) break;
        uint32_t* acc = partial + (uint64_t)j * ROW;
        const bool inf = F::load(acc).is_zero() && F::load(acc + W).is_zero();
        const F z = inf ? F::zero() : F::one();
        z.store(acc + 2 * W);
        z.store(acc + 3 * W);
    }
}

#define MSM_BATCH_KERNEL(G, F)                                                                                                \
    extern "C" __global__ void MSM_BATCH_BOUNDS G##_accumulate_batch(const uint32_t* points, const uint32_t* sorted,           \
                                                                     uint32_t* cursor, const uint32_t* item_end,               \
                                                                     uint32_t nitems, uint32_t K, uint32_t* partial,           \
                                                                     uint32_t* pref, uint8_t* kind) {                          \
        accumulate_batch<F>(points, sorted, cursor, item_end, nitems, K, partial, pref, kind);                                \
    }
