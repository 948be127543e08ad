// "Rounds" bucket accumulation: batch-affine additions whose inversions are shared by the whole
// grid, every kernel a plain streaming kernel (kernels/cuda/msm_rounds.py drives them).
//
// Why: the XYZZ accumulation (msm_core.cuh) costs 8M + 2S a mixed addition and runs near the
// multiplication rate; an affine addition given 1/(x2 - x1) costs 1M + 1S + 1M (lambda, lambda^2,
// y3), and sharing the inversion adds 3M (one product on the way up, two on the way down), about
// 6M in all. The earlier batch_affine.cuh shared one inversion per block step behind block-wide
// barriers and a one-warp inversion, and ran at about half the multiplication rate. Here one round
// adds the next entry of every work item (slot) that has one, the round's denominators are
// multiplied together per thread, all threads' products are inverted by the levelled batch
// inversion (ff/batch_inverse.cuh), and the additions are completed; nothing waits on a barrier.
//
// Slots: the work items of msm.py sorted by length, longest first (slot j is item item[j], its
// entries sorted[start[j] + r] for rounds r < its length), so the slots live at round r are a
// prefix j < live(r) that the host knows from the lengths' histogram (no device flag is read).
// Thread g of NT owns slots j = k NT + g: a warp's lanes hold neighbouring slots, and every
// thread holds (nearly) the same number of live slots each round.
// Per-slot state, all indexed by slot so that a warp's accesses coalesce:
//   acc   the affine accumulator x then y, "quad-major": 16-byte word group q of coordinate c at
//         uint4 index (c W/4 + q) ns + j, so one warp-wide 16-byte load reads 512 contiguous bytes
//         (three loads a coordinate for Fp instead of twelve 4-byte ones; a warp's access to rows
//         of 48 bytes spans 1536 bytes: batch_affine.cuh's first version kept its slots in rows
//         and ran 1.07 s at 2^27, against about 0.94 s word-major);
//   pref  the thread's running product before this slot's denominator (same layout);
//   ent   the entry whose addition is pending; state: FULL (the accumulator holds a point) and
//         the pending kind (ADD, DBL or none).
// A pass over a thread's slots (rounds_thread) may, per slot:
//   FIN   complete the pending addition: 1/d = inv * pref, inv *= d, lambda = num / d,
//         x3 = lambda^2 - x1 - x2, y3 = lambda (x1 - x3) - y1 (inv: the inverse of the thread's
//         product, walked in the reverse of the order the product was built in);
//   out   for a slot that ends (j >= ncont): write its sum as an XYZZ row (x, y, 1, 1), or zeros
//         for infinity, into partial[item[j]] (so bucket sums and window reduction are unchanged);
//   STEP  take entry r: the trivial cases at once (empty accumulator: take the point; the point at
//         infinity, all-zero x and y: skip; P + (-P): empty), else d = x2 - x1 (or 2 y1 for a
//         doubling), pref[j] = run, run *= d; prod[g] = run at the end.
// The host runs either the fused pass (FIN of round r - 1 and STEP of round r in one kernel, the
// walk direction alternating so that each FIN walks its products backwards), or STEP and FIN as
// two kernels (rounds_step: few registers, rounds_finish), with the batch inversion of prod[]
// between. Results are group elements, so the MSM is bit-identical to the XYZZ path's.
#pragma once
#include "../ec/xyzz.cuh"
#include "../ff/batch_inverse.cuh"
#include "../ff/host_cuda.cuh"
#include "entry.cuh"

#define ROUNDS_NONE 0
#define ROUNDS_ADD 1
#define ROUNDS_DBL 2
#define ROUNDS_KIND 3
#define ROUNDS_FULL 4
// pass flags
#define ROUNDS_FIRST 1    // round 0: every accumulator starts empty (state is not read)
#define ROUNDS_REVERSE 2  // walk the thread's slots from the last

#ifdef __CUDACC__
#define ROUNDS_LDG(p) __ldg(p)
#else
#define ROUNDS_LDG(p) (*(p))
#endif

// Build variants (SEALTOP_CUDA_DEFINES, module.py), for measuring against the default; off by
// default, and they change nothing that is computed (tests/test_cuda_host_rounds.py builds them too):
//   ROUNDS_PREFETCH=1  the pass reads each slot's state byte and entries two slots ahead (one by
//                      default) and asks L2 for the next slot's accumulator, prefix and points
//                      (prefetch.global.L2: no registers held) before it works on this one, so
//                      that the next slot's loads hit L2 instead of waiting on DRAM (13
//                      prefetches a slot in the fused pass; each lane asks for its own words);
//   ROUNDS_PREFETCH=2  the same into L1 (prefetch.global.L1: nearer, but the SM's L1 holds
//                      ~200 KB, about two slots' rows for each of its 512 threads);
//   ROUNDS_PREFETCH_DIST=D (with either; 1 by default) asks for slot s + D's rows while working
//                      on slot s, its entries read D + 1 slots ahead: for when one slot's work is
//                      shorter than DRAM's latency under the pass's load.
// Why: ncu of H's first round found the fused pass at 23 % occupancy (128 registers), 60 cycles
// between a warp's instructions and DRAM 58 % busy, i.e. waiting on memory latency. More warps
// cost registers (msm_g1.cu's MSM_G1_ROUNDS_MINB: ptxas spills ~250 bytes at 96 registers, ~450 at
// 80); a prefetch holds none.
#ifndef ROUNDS_PREFETCH
#define ROUNDS_PREFETCH 0
#endif
#ifndef ROUNDS_PREFETCH_DIST
#define ROUNDS_PREFETCH_DIST 1
#endif

struct RoundsArgs {
    const uint32_t* points;  // affine rows (x, y), 2 W words each
    const uint32_t* sorted;  // entries: point index | negate y << 31
    const uint32_t* start;   // slot j's first entry
    const uint32_t* item;    // slot j's work item (its row of partial)
    uint32_t* acc;
    uint32_t* pref;
    uint32_t* ent;
    uint8_t* state;
    uint32_t* prod;     // NT values of W words: the threads' products, inverted in place between passes
    uint32_t* partial;  // XYZZ rows of 4 W words, one per work item
    uint32_t ns;        // slots
    uint32_t NT;        // threads owning slots
    uint32_t r;         // the round whose entry STEP takes
    uint32_t nvisit;    // slots j < nvisit are visited
    uint32_t ncont;     // slots j < ncont go on (STEP, or keep their accumulator); the rest are written out
    uint32_t flags;
};

// Quad-major slot state (see above): element j of an array of ns values.
template <class F>
HD F rounds_load(const uint32_t* base, uint32_t ns, uint32_t j) {
    uint32_t w[F::WORDS];
    const uint4* q = reinterpret_cast<const uint4*>(base);
    UNROLL for (int i = 0; i < F::WORDS / 4; i++) {
        const uint4 t = q[(uint64_t)i * ns + j];
        w[4 * i] = t.x; w[4 * i + 1] = t.y; w[4 * i + 2] = t.z; w[4 * i + 3] = t.w;
    }
    return F::load(w);
}

template <class F>
HD void rounds_store(const F& v, uint32_t* base, uint32_t ns, uint32_t j) {
    uint32_t w[F::WORDS];
    v.store(w);
    uint4* q = reinterpret_cast<uint4*>(base);
    UNROLL for (int i = 0; i < F::WORDS / 4; i++) q[(uint64_t)i * ns + j] = make_uint4(w[4 * i], w[4 * i + 1], w[4 * i + 2], w[4 * i + 3]);
}

HD void rounds_prefetch(const void* p) {
#if defined(__CUDA_ARCH__) && ROUNDS_PREFETCH == 2
    asm volatile("prefetch.global.L1 [%0];" ::"l"(p));
#elif defined(__CUDA_ARCH__)
    asm volatile("prefetch.global.L2 [%0];" ::"l"(p));
#else
    (void)p;
#endif
}

// ROUNDS_PREFETCH: a slot's index and the entries the pass reads ahead of its work (zeros past
// the thread's kn slots), for the k-th slot of the thread's walk.
struct RoundsAhead {
    uint32_t j, ent, v;
    uint8_t st;
};
template <bool FIN, bool STEP>
HD RoundsAhead rounds_ahead(const RoundsArgs& a, uint32_t k, uint32_t kn, uint32_t g, bool rev, bool first) {
    RoundsAhead h{0, 0, 0, 0};
    if (k >= kn) return h;
    h.j = (rev ? kn - 1 - k : k) * a.NT + g;
    h.st = first ? 0 : a.state[h.j];
    h.ent = FIN && !first ? a.ent[h.j] : 0;
    h.v = STEP && h.j < a.ncont ? ROUNDS_LDG(a.sorted + ROUNDS_LDG(a.start + h.j) + a.r) : 0;
    return h;
}

// ROUNDS_PREFETCH: ask the cache for what the pass will read of slot j (state st, pending entry ent,
// round-r entry v): the accumulator, the prefix and the points' rows (their first and last words,
// so both lines a row may span).
template <class F, bool FIN, bool STEP>
HD void rounds_prefetch_slot(const RoundsArgs& a, uint32_t j, uint8_t st, uint32_t ent, uint32_t v) {
    constexpr int W = F::WORDS;
    const bool pending = FIN && (st & ROUNDS_KIND) != ROUNDS_NONE;
    const bool out = j >= a.ncont;
    if (!STEP && !pending && !out) return;
    const uint4* acc = reinterpret_cast<const uint4*>(a.acc);
    if (st & ROUNDS_FULL) {
        UNROLL for (int i = 0; i < W / 4; i++) rounds_prefetch(acc + (uint64_t)i * a.ns + j);
        if (pending || out) UNROLL for (int i = W / 4; i < W / 2; i++) rounds_prefetch(acc + (uint64_t)i * a.ns + j);
    }
    if (pending) {
        const uint4* pref = reinterpret_cast<const uint4*>(a.pref);
        UNROLL for (int i = 0; i < W / 4; i++) rounds_prefetch(pref + (uint64_t)i * a.ns + j);
        const uint32_t* row = a.points + (uint64_t)(ent & 0x7fffffffu) * (2 * W);
        rounds_prefetch(row);
        rounds_prefetch(row + 2 * W - 1);
    }
    if (STEP && !out) {
        const uint32_t* row = a.points + (uint64_t)(v & 0x7fffffffu) * (2 * W);
        rounds_prefetch(row);
        rounds_prefetch(row + W - 1);
    }
}

// Thread g's pass over its slots (see the top of the file). FIN and STEP pick the pass's parts at
// compile time, so the step-only kernel keeps few registers.
template <class F, bool FIN, bool STEP>
HD void rounds_thread(const RoundsArgs& a, uint32_t g) {
    constexpr int W = F::WORDS;
    if (g >= a.NT || g >= a.nvisit) return;
    const bool first = a.flags & ROUNDS_FIRST;
    const uint32_t kn = (a.nvisit - 1 - g) / a.NT + 1;  // slots visited
    uint32_t* accy = a.acc + (uint64_t)W * a.ns;
    F inv = FIN && !first ? F::load(a.prod + (uint64_t)g * W) : F::one();
    F run = F::one();
    // the next slot's state byte, pending entry and round-r entry are read one slot ahead, so a
    // slot's point gathers wait on one load, not a chain of two or three (state, then entry, then
    // point; start, then entry, then point); with ROUNDS_PREFETCH D + 1 slots ahead (q below)
    const bool rev = a.flags & ROUNDS_REVERSE;
#if ROUNDS_PREFETCH
    // q[i]: slot s + i's entries at the top of iteration s (i <= D); slot s + D is asked of the
    // cache at iteration s, an iteration after its entries were read (the first D - 1 slots
    // before the loop)
    constexpr int D = ROUNDS_PREFETCH_DIST;
    RoundsAhead q[D + 1];
    UNROLL for (int i = 0; i <= D; i++) q[i] = rounds_ahead<FIN, STEP>(a, i, kn, g, rev, first);
    UNROLL for (int i = 1; i < D; i++) {
        if (i < kn) rounds_prefetch_slot<F, FIN, STEP>(a, q[i].j, q[i].st, q[i].ent, q[i].v);
    }
#else
    uint32_t jn = (rev ? kn - 1 : 0) * a.NT + g;
    uint8_t st_n = first ? 0 : a.state[jn];
    uint32_t ent_n = FIN && !first ? a.ent[jn] : 0;
    uint32_t v_n = STEP && jn < a.ncont ? ROUNDS_LDG(a.sorted + ROUNDS_LDG(a.start + jn) + a.r) : 0;
#endif
    for (uint32_t s = 0; s < kn; s++) {
#if ROUNDS_PREFETCH
        const uint32_t j = q[0].j;
        const uint8_t st = q[0].st;
        const uint32_t ent = q[0].ent, vr = q[0].v;
        UNROLL for (int i = 0; i < D; i++) q[i] = q[i + 1];
        if (s + D < kn) rounds_prefetch_slot<F, FIN, STEP>(a, q[D - 1].j, q[D - 1].st, q[D - 1].ent, q[D - 1].v);
        q[D] = rounds_ahead<FIN, STEP>(a, s + D + 1, kn, g, rev, first);
#else
        const uint32_t j = jn;
        const uint8_t st = st_n;
        const uint32_t ent = ent_n, vr = v_n;
        if (s + 1 < kn) {
            jn = (rev ? kn - 2 - s : s + 1) * a.NT + g;
            st_n = first ? 0 : a.state[jn];
            ent_n = FIN && !first ? a.ent[jn] : 0;
            v_n = STEP && jn < a.ncont ? ROUNDS_LDG(a.sorted + ROUNDS_LDG(a.start + jn) + a.r) : 0;
        }
#endif
        const bool full = st & ROUNDS_FULL;
        const bool pending = FIN && (st & ROUNDS_KIND) != ROUNDS_NONE;
        const bool out = j >= a.ncont;
        if (!STEP && !pending && !out) continue;  // a finish pass with nothing to do here
        F x1 = F::zero(), y1 = F::zero();
        bool have_y = false, dirty = false;
        if (full) {
            x1 = rounds_load<F>(a.acc, a.ns, j);
            if (pending || out) {
                y1 = rounds_load<F>(accy, a.ns, j);
                have_y = true;
            }
        }
        if (pending) {
            finish_affine<F>(x1, y1, a.points, ent, (st & ROUNDS_KIND) == ROUNDS_ADD, [&] { return rounds_load<F>(a.pref, a.ns, j); }, inv);
            dirty = true;
        }
        if (out) {  // the slot's last entry is done: its sum goes out
            uint32_t* row = a.partial + (uint64_t)ROUNDS_LDG(a.item + j) * 4 * W;
            const F one = full ? F::one() : F::zero();
            (full ? x1 : F::zero()).store(row);
            (full ? y1 : F::zero()).store(row + W);
            one.store(row + 2 * W);
            one.store(row + 3 * W);
            continue;
        }
        if (!STEP) {
            if (dirty) {
                rounds_store(x1, a.acc, a.ns, j);
                rounds_store(y1, accy, a.ns, j);
            }
            continue;
        }
        const uint32_t v = vr;
        const F x2 = entry_coord<F>(a.points, v, 0);
        uint8_t nst = full ? ROUNDS_FULL : 0;
        F d = x2 - x1;
        // x = 0 alone is a curve point: the point at infinity is x = y = 0
        const bool inf2 = x2.is_zero() && entry_coord<F>(a.points, v, 1).is_zero();
        if (!inf2) {
            if (!full) {  // empty: take the point
                rounds_store(x2, a.acc, a.ns, j);
                rounds_store(entry_coord<F>(a.points, v, 1), accy, a.ns, j);
                nst = ROUNDS_FULL;
                dirty = false;
            } else {
                uint8_t kind = ROUNDS_ADD;
                if (d.is_zero()) {
                    if (!have_y) y1 = rounds_load<F>(accy, a.ns, j);
                    if ((entry_coord<F>(a.points, v, 1) - y1).is_zero()) {
                        d = y1.dbl();  // never zero: no point of order 2 in the group
                        kind = ROUNDS_DBL;
                    } else {  // P + (-P)
                        kind = ROUNDS_NONE;
                        nst = 0;
                        dirty = false;
                    }
                }
                if (kind != ROUNDS_NONE) {
                    rounds_store(run, a.pref, a.ns, j);
                    a.ent[j] = v;
                    run = run * d;
                    nst |= kind;
                }
            }
        }
        if (dirty) {
            rounds_store(x1, a.acc, a.ns, j);
            rounds_store(y1, accy, a.ns, j);
        }
        a.state[j] = nst;
    }
    if (STEP) run.store(a.prod + (uint64_t)g * W);
}

#ifdef __CUDACC__
#ifndef MSM_ROUNDS_BOUNDS
#define MSM_ROUNDS_BOUNDS __launch_bounds__(256, 2)
#endif
#ifndef MSM_ROUNDS_STEP_BOUNDS
#define MSM_ROUNDS_STEP_BOUNDS __launch_bounds__(256, 3)
#endif
#define ROUNDS_PARAMS                                                                                                   \
    const uint32_t *points, const uint32_t *sorted, const uint32_t *start, const uint32_t *item, uint32_t *acc,        \
        uint32_t *pref, uint32_t *ent, uint8_t *state, uint32_t *prod, uint32_t *partial, uint32_t ns, uint32_t NT,   \
        uint32_t r, uint32_t nvisit, uint32_t ncont, uint32_t flags
#define ROUNDS_ARGS RoundsArgs{points, sorted, start, item, acc, pref, ent, state, prod, partial, ns, NT, r, nvisit, ncont, flags}
#define MSM_ROUNDS_KERNELS(G, F)                                                                                        \
    extern "C" __global__ void MSM_ROUNDS_BOUNDS G##_rounds_fused(ROUNDS_PARAMS) {                                      \
        rounds_thread<F, true, true>(ROUNDS_ARGS, blockIdx.x * blockDim.x + threadIdx.x);                               \
    }                                                                                                                   \
    extern "C" __global__ void MSM_ROUNDS_STEP_BOUNDS G##_rounds_step(ROUNDS_PARAMS) {                                  \
        rounds_thread<F, false, true>(ROUNDS_ARGS, blockIdx.x * blockDim.x + threadIdx.x);                              \
    }                                                                                                                   \
    extern "C" __global__ void MSM_ROUNDS_BOUNDS G##_rounds_finish(ROUNDS_PARAMS) {                                     \
        rounds_thread<F, true, false>(ROUNDS_ARGS, blockIdx.x * blockDim.x + threadIdx.x);                              \
    }
#endif
