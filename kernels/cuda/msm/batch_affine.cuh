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
// warp's lanes touch neighbouring slots. The per-slot state is stored word-major (word w of slot
// j at w * nitems + j), so that each of a warp's 32-bit accesses is one contiguous 128-byte line:
// the first version kept it in rows (x, y in the slot's XYZZ output row), and each warp access
// then touched 32 lines; on the H200 that ran at 1.07 s at 2^27 against XYZZ's 0.72 s, with a
// per-slot cost that scaled with the number of accesses, not the multiplications. Points are
// gathered with 16-byte loads. item_start is each slot's cursor.
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
#include "entry.cuh"

#ifndef MSM_BATCH_THREADS
#define MSM_BATCH_THREADS 256
#endif
#ifndef MSM_BATCH_MINB
#define MSM_BATCH_MINB 2
#endif
#ifndef MSM_BATCH_BOUNDS
#define MSM_BATCH_BOUNDS __launch_bounds__(MSM_BATCH_THREADS, MSM_BATCH_MINB)
#endif

// state[j]: the kind of step 3's work (low two bits) and whether the accumulator holds a point.
#define BATCH_NONE 0
#define BATCH_ADD 1
#define BATCH_DBL 2
#define BATCH_KIND 3
#define BATCH_FULL 4

template <class F>
__device__ __forceinline__ F load_soa(const uint32_t* base, uint64_t stride, uint32_t j) {
    uint32_t w[F::WORDS];
    UNROLL for (int i = 0; i < F::WORDS; i++) w[i] = base[i * stride + j];
    return F::load(w);
}

template <class F>
__device__ __forceinline__ void store_soa(const F& v, uint32_t* base, uint64_t stride, uint32_t j) {
    uint32_t w[F::WORDS];
    v.store(w);
    UNROLL for (int i = 0; i < F::WORDS; i++) base[i * stride + j] = w[i];
}

// acc: 2 * F::WORDS words per slot (x then y), pref: F::WORDS, ent: the entry step 3 adds,
// state: as above; all word-major with stride nitems (S).
struct BatchSlots {
    const uint32_t* points;
    const uint32_t* sorted;
    uint32_t* cursor;
    const uint32_t* item_end;
    uint32_t* acc;
    uint32_t* pref;
    uint32_t* ent;
    uint8_t* state;
    uint64_t S;
    uint32_t NT, g;
};

// Step 1 over the thread's slots k0, k0 + ks, ... < kmax: returns whether any had entries left;
// `run` becomes the product of this step's denominators. Slots go MSM_BATCH_GROUP at a time,
// their loads (cursor, then the entry, then the point's x and the accumulator's x) issued for the
// whole group before any is used: each slot has only one multiplication to hide a chain of three
// dependent loads behind, and the first two versions of this kernel ran at about half the
// multiplication rate of the XYZZ kernel.
#ifndef MSM_BATCH_GROUP
#define MSM_BATCH_GROUP 2
#endif
template <class F>
__device__ __forceinline__ int batch_step1(const BatchSlots& b, uint32_t k0, uint32_t ks, uint32_t kmax, F& run) {
    constexpr int W = F::WORDS;
    constexpr int G = MSM_BATCH_GROUP;
    uint32_t* accy = b.acc + (uint64_t)W * b.S;
    int active = 0;
    run = F::one();
    for (uint32_t k = k0; k < kmax; k += G * ks) {
        uint32_t j[G], p[G], v[G];
        bool has[G];
        uint8_t st[G];
        F x2[G], x1[G];
        UNROLL for (int i = 0; i < G; i++) {
            const bool live = k + i * ks < kmax;
            j[i] = (k + i * ks) * b.NT + b.g;
            p[i] = live ? b.cursor[j[i]] : 0;
            has[i] = live && p[i] < b.item_end[j[i]];
            st[i] = live ? (b.state[j[i]] & BATCH_FULL) : 0;
        }
        UNROLL for (int i = 0; i < G; i++) v[i] = has[i] ? b.sorted[p[i]] : 0;
        UNROLL for (int i = 0; i < G; i++) {
            x2[i] = has[i] ? entry_coord<F>(b.points, v[i], 0) : F::zero();
            x1[i] = has[i] && st[i] ? load_soa<F>(b.acc, b.S, j[i]) : F::zero();
        }
        UNROLL for (int i = 0; i < G; i++) {
            if (k + i * ks >= kmax) break;
            if (has[i]) {
                active = 1;
                b.cursor[j[i]] = p[i] + 1;
                // x = 0 alone is a curve point: the point at infinity is x = y = 0
                const bool inf2 = x2[i].is_zero() && entry_coord<F>(b.points, v[i], 1).is_zero();
                if (!inf2) {
                    if (!st[i]) {  // empty: take the point
                        store_soa(x2[i], b.acc, b.S, j[i]);
                        store_soa(entry_coord<F>(b.points, v[i], 1), accy, b.S, j[i]);
                        st[i] = BATCH_FULL;
                    } else {
                        F d = x2[i] - x1[i];
                        uint8_t kd = BATCH_ADD;
                        if (d.is_zero()) {
                            const F y1 = load_soa<F>(accy, b.S, j[i]);
                            if ((entry_coord<F>(b.points, v[i], 1) - y1).is_zero()) {
                                d = y1.dbl();  // never zero: no point of order 2 in the group
                                kd = BATCH_DBL;
                            } else {  // P + (-P)
                                kd = BATCH_NONE;
                                st[i] = BATCH_NONE;
                            }
                        }
                        if (kd != BATCH_NONE) {
                            store_soa(run, b.pref, b.S, j[i]);
                            b.ent[j[i]] = v[i];
                            run = run * d;
                            st[i] |= kd;
                        }
                    }
                }
            }
            b.state[j[i]] = st[i];
        }
    }
    return active;
}

// Step 3 over the same slots in reverse, with inv = 1 / (the product step 1 returned).
template <class F>
__device__ __forceinline__ void batch_step3(const BatchSlots& b, uint32_t k0, uint32_t ks, uint32_t kmax, F inv) {
    constexpr int W = F::WORDS;
    uint32_t* accy = b.acc + (uint64_t)W * b.S;
    if (kmax <= k0) return;
    uint32_t k = k0 + (kmax - 1 - k0) / ks * ks;
    uint8_t kd_next = b.state[k * b.NT + b.g] & BATCH_KIND;
    uint32_t v_next = b.ent[k * b.NT + b.g];
    for (;; k -= ks) {
        const uint32_t j = k * b.NT + b.g;
        const uint8_t kd = kd_next;
        const uint32_t v = v_next;
        if (k >= k0 + ks) {  // the next slot's kind and entry, one slot ahead
            kd_next = b.state[j - ks * b.NT] & BATCH_KIND;
            v_next = b.ent[j - ks * b.NT];
        }
        if (kd != BATCH_NONE) {
            F x1 = load_soa<F>(b.acc, b.S, j);
            F y1 = load_soa<F>(accy, b.S, j);
            finish_affine<F>(x1, y1, b.points, v, kd == BATCH_ADD, [&] { return load_soa<F>(b.pref, b.S, j); }, inv);
            store_soa(x1, b.acc, b.S, j);
            store_soa(y1, accy, b.S, j);
            b.state[j] = BATCH_FULL;
        }
        if (k < k0 + ks) break;
    }
}

// prod[t] for t < n := 1 / prod[t], by one warp: lane l inverts the product of entries
// l, l + 32, ... (at most PER_LANE of them) and hands each its inverse back.
template <class F, int PER_LANE>
__device__ __forceinline__ void invert_shared(uint32_t* prod, uint32_t lane) {
    constexpr int W = F::WORDS;
    F c[PER_LANE];
    c[0] = F::load(prod + lane * W);
    UNROLL for (int i = 1; i < PER_LANE; i++) c[i] = c[i - 1] * F::load(prod + (lane + 32 * i) * W);
    F inv = c[PER_LANE - 1].inv_fast();
    UNROLL for (int i = PER_LANE - 1; i >= 1; i--) {
        const F t = inv * c[i - 1];
        inv = inv * F::load(prod + (lane + 32 * i) * W);
        t.store(prod + (lane + 32 * i) * W);
    }
    inv.store(prod + lane * W);
}

// MSM_BATCH_PIPE=1: the block's last warp only inverts, and the other warps'
// slots are split in two halves (even and odd k) that take turns: while the inverting warp
// inverts one half's products, the others finish the other half's additions (step 3) and start
// its next step (step 1). One inversion is a chain of ~490 dependent multiplications; without the
// pipeline the whole block waits for it every step (about 0.46 ms a step at 2^24 on the H200,
// fitted from the first version's steps at 8, 29 and 107 slots a thread). Measured (H200,
// 2026-12-03, accumulation at 2^27): 965.7 ms with it, 943.6 ms without, so it is off by default.
#ifndef MSM_BATCH_PIPE
#define MSM_BATCH_PIPE 0
#endif

template <class F>
__device__ __forceinline__ void accumulate_batch(const uint32_t* points, const uint32_t* sorted, uint32_t* cursor, const uint32_t* item_end,
                                                 uint32_t nitems, uint32_t K, uint32_t* acc, uint32_t* pref, uint32_t* ent,
                                                 uint8_t* state, uint32_t* partial) {
    constexpr int T = MSM_BATCH_THREADS;
    constexpr int W = F::WORDS;          // 32-bit words of one coordinate
    static_assert(T % 32 == 0 && T >= 64, "block size must be a multiple of 32, at least 64");
    constexpr int TW = MSM_BATCH_PIPE ? T - 32 : T;  // threads that own slots
    const uint32_t tid = threadIdx.x;
    BatchSlots b{points, sorted, cursor, item_end, acc, pref, ent, state, nitems, gridDim.x * TW, blockIdx.x * TW + tid};
    const bool worker = tid < TW;
    const uint32_t kmax = worker && b.g < nitems ? min(K, (nitems - 1 - b.g) / b.NT + 1) : 0;
    for (uint32_t k = 0; k < kmax; k++) state[k * b.NT + b.g] = BATCH_NONE;  // empty accumulators

#if MSM_BATCH_PIPE
    __shared__ uint32_t prod[2][TW * W];
    if (worker) {
        F::one().store(prod[0] + tid * W);
        F::one().store(prod[1] + tid * W);
    }
    __syncthreads();
    int idle = 0;
    for (uint32_t h = 0;; h ^= 1) {
        const uint32_t q = h ^ 1;  // the half the workers take while half h is inverted
        int active = 0;
        if (!worker) {
            invert_shared<F, TW / 32>(prod[h], tid - TW);
        } else {
            batch_step3<F>(b, q, 2, kmax, F::load(prod[q] + tid * W));
            F run;
            active = batch_step1<F>(b, q, 2, kmax, run);
            run.store(prod[q] + tid * W);
        }
        idle = __syncthreads_or(active) ? 0 : idle + 1;
        if (idle == 2) break;  // both halves' last step 1 found nothing: nothing pending either
    }
#else
    __shared__ uint32_t prod[T * W];
    while (true) {
        F run;
        const int active = batch_step1<F>(b, 0, 1, kmax, run);
        run.store(prod + tid * W);
        if (!__syncthreads_or(active)) break;
        if (tid < 32) invert_shared<F, T / 32>(prod, tid);
        __syncthreads();
        batch_step3<F>(b, 0, 1, kmax, F::load(prod + tid * W));
        __syncthreads();  // prod is rewritten by the next step
    }
#endif

    // each slot's row of partial in XYZZ: (x, y, 1, 1), or 0 at infinity
    uint32_t* accy = acc + (uint64_t)W * b.S;
    for (uint32_t k = 0; k < kmax; k++) {
        const uint32_t j = k * b.NT + b.g;
        uint32_t* row = partial + (uint64_t)j * 4 * W;
        if (state[j] & BATCH_FULL) {
            load_soa<F>(acc, b.S, j).store(row);
            load_soa<F>(accy, b.S, j).store(row + W);
            F::one().store(row + 2 * W);
            F::one().store(row + 3 * W);
        } else {
            F::zero().store(row + 2 * W);  // ZZ = 0: infinity
        }
    }
}

#define MSM_BATCH_KERNEL(G, F)                                                                                                \
    extern "C" __global__ void MSM_BATCH_BOUNDS G##_accumulate_batch(const uint32_t* points, const uint32_t* sorted,           \
                                                                     uint32_t* cursor, const uint32_t* item_end,               \
                                                                     uint32_t nitems, uint32_t K, uint32_t* acc,               \
                                                                     uint32_t* pref, uint32_t* ent, uint8_t* state,            \
                                                                     uint32_t* partial) {                                      \
        accumulate_batch<F>(points, sorted, cursor, item_end, nitems, K, acc, pref, ent, state, partial);                     \
    }
