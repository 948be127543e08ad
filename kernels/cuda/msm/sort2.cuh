// The sort into fixed runs in two passes (kernels/cuda/msm_sort2.py drives it), for one window at a
// time; the same layout and counts as msm_scatter_runs_w (msm_core.cuh), with no global atomic per
// entry and no 4-byte store to a random address in pass 1:
//   pass 1 (msm_sort2_bin)   a block takes a tile of SORT2_TILE entries, computes their digits
//                            (window_digit), ranks them per COARSE bin (the top bits of the bucket
//                            index, at most SORT2_THREADS bins) with shared atomics, reserves room
//                            in each non-empty bin's staging area with one global atomic, groups
//                            the tile by bin in shared memory and writes every entry as 8 bytes
//                            (point | sign << 31, bucket) at its place: a bin's entries from one tile
//                            land together, and consecutive threads write consecutive words;
//   pass 2 (msm_sort2_place) one block a coarse bin: shared counters for its 2^fb fine buckets, a
//                            run position per staged entry by a shared atomic, the entry stored at
//                            wbase + bucket * wcap + pos, then count[] += the bin's counters;
//   or pass 2 flat           (msm_sort2_place_flat, msm_sort2.PLACE) one thread a staged entry in
//                            bin order, its run position by a global atomic on count[] (see
//                            place_flat for why).
// count[] ends as msm_scatter_runs_w leaves it, every entry counted: an entry whose bucket has no
// run (b >= nb) or that finds its bin's staging area full is counted in pass 1 by a global atomic
// and sets *overflow (the caller then sorts again the exact way, from count); one that finds its
// run full sets *overflow in pass 2. So a window without overflow holds in each run exactly the
// bucket's entries, as msm_scatter_runs_w's; the order within a run differs (it does not matter:
// a bucket's sum does not depend on it).
// Pass 2 stores each entry straight into its run. Grouping a chunk of the bin's entries by fine
// bucket in shared memory first would write a bucket's new entries together only if a chunk held
// several entries a bucket; with 8192 fine buckets and the 16 KB of shared memory left beside the
// counters (4096 entries) a chunk holds half an entry a bucket, so it would add a pass over shared
// memory and save no stores. What pass 2 gains over msm_scatter_runs_w is that its atomics are
// shared ones; its stores are as scattered (within the bin's runs, 7.7 MB at H's 2^28 entries a
// window).
// Written as per-thread phases between barriers, so that host_sort2.cpp runs the same code block
// by block, thread by thread (tests/test_cuda_host_sort2.py).
#pragma once
#include "../ff/host_cuda.cuh"
#include "digits.cuh"

#define SORT2_THREADS 256  // pass 1's block, and the most coarse bins a window
#ifndef SORT2_PER
#define SORT2_PER 8  // entries a thread in pass 1
#endif
#define SORT2_TILE (SORT2_THREADS * SORT2_PER)
#ifndef SORT2_BIN_MINB
#define SORT2_BIN_MINB 3  // pass 1's blocks an SM: 80 registers at SORT2_PER 8 (106 unbounded), no spills
#endif
#define SORT2_FINE_MAX 8192  // fine buckets a coarse bin at most: pass 2's shared counters (32 KB)
#ifndef SORT2_PLACE_THREADS
#define SORT2_PLACE_THREADS 1024
#endif
#define SORT2_PLACE_PER 4  // staged entries a thread loads before its atomics and stores
#define SORT2_FLAT_THREADS 256  // the flat pass 2's block
#define SORT2_NONE 0xffffffffu

namespace sort2 {

#ifdef __CUDACC__
HD uint32_t add(uint32_t* p, uint32_t v) { return atomicAdd(p, v); }
#else
inline uint32_t add(uint32_t* p, uint32_t v) {  // the host build runs one thread at a time
    const uint32_t old = *p;
    *p = old + v;
    return old;
}
#endif

struct BinArgs {
    const uint32_t* canon;  // canonical scalars, eight words each
    const uint32_t* idx;    // the entries' scalar indices (null: entry t is scalar t)
    uint32_t m;             // entries
    int c, w;               // window bits, this window
    uint32_t fb, nb;        // fine bits (bucket b is in coarse bin b >> fb), buckets with runs
    uint32_t bincap;        // staged entries a coarse bin at most
    uint32_t* fill;         // per coarse bin: entries reserved so far (zero before the pass)
    uint32_t* stage;        // bin j's k-th entry: words 2 (j bincap + k) and +1
    uint32_t* count;        // the window's counters: count[b] (b < 2^(c-1))
    uint32_t* overflow;
};

// Window w0 + g's arguments in a pass over windows w0 .. (see msm_sort2_bin).
HD BinArgs bin_args(const uint32_t* canon, const uint32_t* idx, uint32_t m, int c, int w0, uint32_t g, const uint32_t* wnb,
                    const uint32_t* wplan, uint32_t* fill, uint32_t* stage, uint64_t stride, uint32_t* count,
                    uint32_t* overflow) {
    const int w = w0 + (int)g;
    return BinArgs{canon, idx, m, c, w, wplan[2 * w + 1], wnb[w], wplan[2 * w], fill + g * SORT2_THREADS, stage + g * stride,
                   count + ((uint64_t)w << (c - 1)), overflow};
}

struct BinShared {  // pass 1's shared memory
    uint32_t mw[8], am[8];            // the window's constants (Window)
    uint32_t cnt[SORT2_THREADS];      // entries of the tile per coarse bin
    uint32_t base[SORT2_THREADS];     // the bin's first reserved slot
    uint32_t scan[2][SORT2_THREADS];  // inclusive prefix sums of cnt (ping-pong)
    uint32_t v[SORT2_TILE];           // the tile grouped by coarse bin: point | sign << 31
    uint32_t b[SORT2_TILE];           // and bucket
};

struct BinLane {  // one thread's entries across pass 1's phases (registers on the device)
    uint32_t v[SORT2_PER], b[SORT2_PER], r[SORT2_PER];
};

// Window w's digit rule (digits.cuh: window_digit) with its per-window constants worked out once
// a block, not once an entry: the carry into window w is 1 exactly when s mod 2^(wc) exceeds
// M_w = sum_{i<w} 2^(ic + c - 1); mw holds M_w's words, am the masks of s mod 2^(wc). (With
// window_digit inlined for each entry, this kernel's first version ran about 700 instructions
// an entry in SASS, its scalars in local memory.)
struct Window {
    int c, limb, sh;  // window bits; the word and bit where the window starts
    uint32_t mw[8], am[8];
};

// Word j (< 8) of M_w and of the mask of s mod 2^(wc).
HD void window_word(int c, int w, int j, uint32_t* mw, uint32_t* am) {
    const int off = w * c;
    uint32_t mj = 0;
    for (int i = 0; i < w; i++) {
        const int pos = i * c + c - 1;
        mj |= (pos >> 5) == j ? 1u << (pos & 31) : 0u;
    }
    *mw = mj;
    *am = 32 * j + 32 <= off ? 0xffffffffu : 32 * j >= off ? 0u : (1u << (off - 32 * j)) - 1;
}

// The window's bits start in word LIMB (a template argument: with the word picked at run time
// the compiler keeps the scalars in local memory and indexes them there).
template <int LIMB>
HD uint32_t digit(const Window& x, const uint32_t s[8], uint32_t* neg) {
    int gt = 0, lt = 0;
    UNROLL for (int j = 7; j >= 0; j--) {
        const uint32_t a = s[j] & x.am[j];
        if (!gt && !lt) {
            gt = a > x.mw[j];
            lt = a < x.mw[j];
        }
    }
    const uint32_t lo = LIMB < 8 ? s[LIMB < 8 ? LIMB : 0] : 0u, hi = LIMB + 1 < 8 ? s[LIMB + 1 < 8 ? LIMB + 1 : 0] : 0u;
    const uint32_t bits = (x.sh ? (lo >> x.sh) | (hi << (32 - x.sh)) : lo) & ((1u << x.c) - 1);
    uint32_t carry = gt;
    return signed_digit(bits, x.c, &carry, neg);
}

template <int LIMB>
HD void digits(const Window& x, const uint32_t sc[SORT2_PER][8], uint32_t mag[SORT2_PER], uint32_t neg[SORT2_PER]) {
    UNROLL for (int k = 0; k < SORT2_PER; k++) mag[k] = digit<LIMB>(x, sc[k], &neg[k]);
}

// Phase 0: clear the bin counters; threads 0..7 work out one word each of the window's constants.
HD void bin_clear(const BinArgs& a, BinShared& s, uint32_t tid) {
    s.cnt[tid] = 0;
    if (tid < 8) window_word(a.c, a.w, (int)tid, &s.mw[tid], &s.am[tid]);
}

// Phase 1: the thread's entries tile * TILE + k * THREADS + tid (coalesced loads, all issued
// before the first digit); each digit's bucket, and its rank among the tile's entries of its
// coarse bin. An entry whose bucket has no run is counted and flagged here, as
// msm_scatter_runs_w does.
HD void bin_digits(const BinArgs& a, BinShared& s, uint32_t tile, uint32_t tid, BinLane& l) {
    const uint32_t first = tile * SORT2_TILE + tid;
    uint32_t p[SORT2_PER], sc[SORT2_PER][8];
    UNROLL for (int k = 0; k < SORT2_PER; k++) {
        const uint32_t t = first + k * SORT2_THREADS;
        p[k] = t < a.m ? (a.idx ? a.idx[t] : t) : 0;
    }
    UNROLL for (int k = 0; k < SORT2_PER; k++) {
        if (first + k * SORT2_THREADS < a.m) {
            const uint4* q = reinterpret_cast<const uint4*>(a.canon + (uint64_t)(first + k * SORT2_THREADS) * 8);
            const uint4 x = q[0], y = q[1];
            sc[k][0] = x.x; sc[k][1] = x.y; sc[k][2] = x.z; sc[k][3] = x.w;
            sc[k][4] = y.x; sc[k][5] = y.y; sc[k][6] = y.z; sc[k][7] = y.w;
        } else {
            UNROLL for (int i = 0; i < 8; i++) sc[k][i] = 0;  // digit 0: no entry
        }
    }
    Window x;
    x.c = a.c;
    x.limb = (a.w * a.c) >> 5;
    x.sh = (a.w * a.c) & 31;
    UNROLL for (int j = 0; j < 8; j++) {
        x.mw[j] = s.mw[j];
        x.am[j] = s.am[j];
    }
    uint32_t mag[SORT2_PER], neg[SORT2_PER];
    switch (x.limb) {  // the same for the whole grid
        case 0: digits<0>(x, sc, mag, neg); break;
        case 1: digits<1>(x, sc, mag, neg); break;
        case 2: digits<2>(x, sc, mag, neg); break;
        case 3: digits<3>(x, sc, mag, neg); break;
        case 4: digits<4>(x, sc, mag, neg); break;
        case 5: digits<5>(x, sc, mag, neg); break;
        case 6: digits<6>(x, sc, mag, neg); break;
        case 7: digits<7>(x, sc, mag, neg); break;
        default: digits<8>(x, sc, mag, neg); break;  // past the scalar: its bits are 0
    }
    UNROLL for (int k = 0; k < SORT2_PER; k++) {
        l.b[k] = mag[k] ? mag[k] - 1 : SORT2_NONE;
        l.v[k] = p[k] | (neg[k] << 31);
    }
    UNROLL for (int k = 0; k < SORT2_PER; k++) {
        const uint32_t b = l.b[k];
        if (b == SORT2_NONE) continue;
        if (b >= a.nb) {
            add(&a.count[b], 1u);
            *a.overflow = 1;
            l.b[k] = SORT2_NONE;
            continue;
        }
        l.r[k] = add(&s.cnt[b >> a.fb], 1u);
    }
}

// Phase 2: thread j reserves the tile's entries of coarse bin j (one global atomic a non-empty
// bin) and starts the scan.
HD void bin_reserve(const BinArgs& a, BinShared& s, uint32_t tid) {
    const uint32_t n = s.cnt[tid];
    s.base[tid] = n ? add(&a.fill[tid], n) : 0u;
    s.scan[0][tid] = n;
}

// Phases 3: one Hillis-Steele step each (d = 1, 2, 4, ...; step i reads scan[i & 1]).
HD void bin_scan_step(BinShared& s, uint32_t tid, uint32_t d, int i) {
    const uint32_t* in = s.scan[i & 1];
    s.scan[(i + 1) & 1][tid] = in[tid] + (tid >= d ? in[tid - d] : 0u);
}

// After SORT2_THREADS = 2^8 steps of doubling d the inclusive sums are back in scan[0].
HD uint32_t bin_start(const BinShared& s, uint32_t j) { return s.scan[0][j] - s.cnt[j]; }

// Phase 4: the thread's entries into the tile's grouping by coarse bin.
HD void bin_group(const BinArgs& a, BinShared& s, const BinLane& l) {
    UNROLL for (int k = 0; k < SORT2_PER; k++) {
        if (l.b[k] == SORT2_NONE) continue;
        const uint32_t i = bin_start(s, l.b[k] >> a.fb) + l.r[k];
        s.v[i] = l.v[k];
        s.b[i] = l.b[k];
    }
}

// Phase 5: entry i of the grouped tile goes to its bin's reserved slots; consecutive threads take
// consecutive entries, so a warp's stores cover a few contiguous stretches. One past the bin's
// staging area is counted and flagged.
HD void bin_write(const BinArgs& a, const BinShared& s, uint32_t tid) {
    const uint32_t total = s.scan[0][SORT2_THREADS - 1];
    for (uint32_t i = tid; i < total; i += SORT2_THREADS) {
        const uint32_t b = s.b[i], j = b >> a.fb;
        const uint32_t slot = s.base[j] + (i - bin_start(s, j));
        if (slot < a.bincap) {
            uint32_t* d = a.stage + 2 * ((uint64_t)j * a.bincap + slot);
#ifdef __CUDACC__
            *reinterpret_cast<uint2*>(d) = make_uint2(s.v[i], b);
#else
            d[0] = s.v[i];
            d[1] = b;
#endif
        } else {
            add(&a.count[b], 1u);
            *a.overflow = 1;
        }
    }
}

struct PlaceArgs {
    const uint32_t* stage;  // as BinArgs
    const uint32_t* fill;
    uint32_t bincap, fb, nb;
    uint32_t wbase, wcap;  // the window's first entry and run length (msm.bucket_runs)
    uint32_t* count;       // the window's counters
    uint32_t* sorted;
    uint32_t* overflow;
    uint32_t nbins;        // the window's coarse bins (the flat pass's extent: nbins * bincap slots)
    uint32_t stripes;      // the flat pass's stripes (see place_flat)
};

// Pass 2, phase 0: clear the bin's fine counters.
HD void place_clear(const PlaceArgs& a, uint32_t* cnt, uint32_t tid, uint32_t nt) {
    for (uint32_t f = tid; f < (1u << a.fb); f += nt) cnt[f] = 0;
}

// Phase 1: the bin's staged entries, PLACE_PER a thread at a time (loads, then the shared
// atomics, then the stores); an entry past its run's end is flagged.
HD void place_entries(const PlaceArgs& a, uint32_t* cnt, uint32_t bin, uint32_t tid, uint32_t nt) {
    const uint32_t n = a.fill[bin] < a.bincap ? a.fill[bin] : a.bincap;
    const uint32_t* st = a.stage + 2 * (uint64_t)bin * a.bincap;
    const uint32_t fmask = (1u << a.fb) - 1;
    for (uint32_t i0 = tid; i0 < n; i0 += SORT2_PLACE_PER * nt) {
        uint32_t v[SORT2_PLACE_PER], b[SORT2_PLACE_PER], pos[SORT2_PLACE_PER];
        UNROLL for (int k = 0; k < SORT2_PLACE_PER; k++) {
            const uint32_t i = i0 + k * nt;
            b[k] = SORT2_NONE;
            if (i < n) {
#ifdef __CUDACC__
                // read once: evict-first, so that the runs' partly written lines keep L2's room
                const uint2 e = __ldcs(reinterpret_cast<const uint2*>(st) + i);
                v[k] = e.x;
                b[k] = e.y;
#else
                v[k] = st[2 * (uint64_t)i];
                b[k] = st[2 * (uint64_t)i + 1];
#endif
            }
        }
        UNROLL for (int k = 0; k < SORT2_PLACE_PER; k++)
            if (b[k] != SORT2_NONE) pos[k] = add(&cnt[b[k] & fmask], 1u);
        UNROLL for (int k = 0; k < SORT2_PLACE_PER; k++) {
            if (b[k] == SORT2_NONE) continue;
            if (b[k] < a.nb && pos[k] < a.wcap) a.sorted[a.wbase + (uint64_t)b[k] * a.wcap + pos[k]] = v[k];
            else *a.overflow = 1;
        }
    }
}

// Phase 2: the bin's counts into count[] (pass 1 may have counted entries of these buckets that
// it could not stage; it ran before, so a plain addition is exact).
HD void place_counts(const PlaceArgs& a, const uint32_t* cnt, uint32_t bin, uint32_t tid, uint32_t nt) {
    for (uint32_t f = tid; f < (1u << a.fb); f += nt) {
        const uint32_t b = (bin << a.fb) + f;
        if (cnt[f]) a.count[b] += cnt[f];
    }
}

// Pass 2, flat (msm_sort2_place_flat): one thread a staging slot, the grid over the window's
// staging area in bin order, each entry's run position by a returning atomic on count[] itself
// (which so ends as the histogram, with no shared counters to add in). Why: in the per-bin pass
// every block stores into its own bin's runs (7.7 MB at H's size) and all 256 bins run at once,
// so the runs being written span the window's 1 GB and L2 writes each 32-byte sector back many
// times, a few bytes each (ncu on the H200: 15 ms a window at 22% of DRAM bandwidth and 3% of
// the SMs). Blocks start roughly in index order, so here the entries in flight are those of a
// bin or two, whose runs and counters stay in L2 until their sectors are whole. But the entries
// in flight then share few counters (at 8192 buckets a bin, ~128 atomics on one address at once,
// which L2 serializes), so the staging area is cut into `stripes` stripes walked side by side:
// block k takes chunk k / stripes of stripe k % stripes (a chunk: SORT2_PLACE_PER * nt slots),
// so about `stripes` bins are in flight, each with 1 / stripes of the entries; the caller picks
// the stripes so that their runs still fit L2. An entry that pass 1 could not stage was already
// counted into count[] with overflow set, so the positions taken here need not allow for it (the
// caller then sorts the exact way).
HD void place_flat(const PlaceArgs& a, uint32_t block, uint32_t tid, uint32_t nt) {
    const uint32_t total = a.nbins * a.bincap, chunk = SORT2_PLACE_PER * nt;
    const uint32_t chunks = (total + chunk - 1) / chunk, per = (chunks + a.stripes - 1) / a.stripes;
    const uint32_t c = (block % a.stripes) * per + block / a.stripes;
    if (block / a.stripes >= per || c >= chunks) return;
    const uint32_t first = c * chunk + tid;
    uint32_t v[SORT2_PLACE_PER], b[SORT2_PLACE_PER], pos[SORT2_PLACE_PER];
    UNROLL for (int k = 0; k < SORT2_PLACE_PER; k++) {
        const uint32_t i = first + k * nt;
        b[k] = SORT2_NONE;
        if (i >= total) continue;
        const uint32_t bin = i / a.bincap, slot = i - bin * a.bincap;
        const uint32_t n = a.fill[bin] < a.bincap ? a.fill[bin] : a.bincap;
        if (slot >= n) continue;
#ifdef __CUDACC__
        const uint2 e = __ldcs(reinterpret_cast<const uint2*>(a.stage) + i);
        v[k] = e.x;
        b[k] = e.y;
#else
        v[k] = a.stage[2 * (uint64_t)i];
        b[k] = a.stage[2 * (uint64_t)i + 1];
#endif
    }
    UNROLL for (int k = 0; k < SORT2_PLACE_PER; k++)
        if (b[k] != SORT2_NONE) pos[k] = add(&a.count[b[k]], 1u);
    UNROLL for (int k = 0; k < SORT2_PLACE_PER; k++) {
        if (b[k] == SORT2_NONE) continue;
        if (b[k] < a.nb && pos[k] < a.wcap) a.sorted[a.wbase + (uint64_t)b[k] * a.wcap + pos[k]] = v[k];
        else *a.overflow = 1;
    }
}

}  // namespace sort2

#if defined(__CUDACC__) && defined(MSM_GENERIC_KERNELS)
extern "C" {

// Pass 1 for windows w0 .. w0 + nw - 1: block b takes tile b / nw of window w0 + b % nw (the
// blocks of one tile run side by side, so the scalars they share come from L2 after the first),
// with that window's counters (count + w 2^(c-1)), staging area (stage + (b % nw) stride) and
// fill counters (fill + (b % nw) SORT2_THREADS); wnb[w] its buckets with runs, wplan[2 w] and
// wplan[2 w + 1] its bins' capacity and fine bits (msm_sort2.plan).
__global__ void __launch_bounds__(SORT2_THREADS, SORT2_BIN_MINB) msm_sort2_bin(const uint32_t* canon, const uint32_t* idx, uint32_t m, int c,
                                                              int w0, uint32_t nw, const uint32_t* wnb,
                                                              const uint32_t* wplan, uint32_t* fill, uint32_t* stage,
                                                              uint64_t stride, uint32_t* count, uint32_t* overflow) {
    __shared__ sort2::BinShared s;
    const uint32_t g = blockIdx.x % nw, tile = blockIdx.x / nw;
    const sort2::BinArgs a = sort2::bin_args(canon, idx, m, c, w0, g, wnb, wplan, fill, stage, stride, count, overflow);
    const uint32_t tid = threadIdx.x;
    sort2::BinLane l;
    sort2::bin_clear(a, s, tid);
    __syncthreads();
    sort2::bin_digits(a, s, tile, tid, l);
    __syncthreads();
    sort2::bin_reserve(a, s, tid);
    __syncthreads();
    int i = 0;
    for (uint32_t d = 1; d < SORT2_THREADS; d <<= 1, i++) {
        sort2::bin_scan_step(s, tid, d, i);
        __syncthreads();
    }
    sort2::bin_group(a, s, l);
    __syncthreads();
    sort2::bin_write(a, s, tid);
}

// Pass 2 for one window: one block a coarse bin (blockIdx.x).
__global__ void __launch_bounds__(SORT2_PLACE_THREADS) msm_sort2_place(const uint32_t* stage, const uint32_t* fill,
                                                                      uint32_t bincap, uint32_t fb, uint32_t nb,
                                                                      uint32_t wbase, uint32_t wcap, uint32_t* count,
                                                                      uint32_t* sorted, uint32_t* overflow) {
    __shared__ uint32_t cnt[SORT2_FINE_MAX];
    const sort2::PlaceArgs a{stage, fill, bincap, fb, nb, wbase, wcap, count, sorted, overflow, gridDim.x, 1};
    sort2::place_clear(a, cnt, threadIdx.x, blockDim.x);
    __syncthreads();
    sort2::place_entries(a, cnt, blockIdx.x, threadIdx.x, blockDim.x);
    __syncthreads();
    sort2::place_counts(a, cnt, blockIdx.x, threadIdx.x, blockDim.x);
}

// Pass 2, flat, for one window: stripes * ceil(chunks / stripes) blocks (see place_flat).
__global__ void __launch_bounds__(SORT2_FLAT_THREADS) msm_sort2_place_flat(const uint32_t* stage, const uint32_t* fill,
                                                                          uint32_t bincap, uint32_t nbins, uint32_t stripes,
                                                                          uint32_t nb, uint32_t wbase, uint32_t wcap,
                                                                          uint32_t* count, uint32_t* sorted, uint32_t* overflow) {
    const sort2::PlaceArgs a{stage, fill, bincap, 0, nb, wbase, wcap, count, sorted, overflow, nbins, stripes};
    sort2::place_flat(a, blockIdx.x, threadIdx.x, blockDim.x);
}

}  // extern "C"
#endif
