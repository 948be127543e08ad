// One shared-memory pass of a radix-2 Fr NTT, in both orders, written as per-thread phases
// (load, one stage, store) so that the same code runs as a CUDA kernel (ntt.cu: the phases
// between __syncthreads) and, built for the host, under a loop over a block's threads
// (tests/test_cuda_host_ntt.py checks it against Python integers without a GPU).
//
// A pass covers the index bits [s0, s0 + S): a block holds the 2^S elements whose indices differ
// only there (g = high << (s0 + S) | e << s0 | low, e < 2^S), one thread per butterfly.
//
// DIT (decimation in time, the order of ntt.cu's ntt_pass): bit-reversed input, natural output,
// passes from the low bits up; stage t multiplies the odd input by w^(j 2^(L-1-t)), j = g mod 2^t.
// The first pass may gather its input from another buffer: at g (in place), at bitrev(g), or at
// (n - bitrev(g)) mod n (the inverse transform through the forward twiddles: INTT(x)[k] =
// DFT(x[-i])[k] / n), optionally multiplying two buffers elementwise as it loads (the H step's
// a' * b'). The last pass may subtract sub[bitrev(g)] and then scale by a power table at g.
//
// DIF (decimation in frequency): natural input, bit-reversed output, in place, passes from the
// high bits down; stage t computes (u + v, (u - v) w^(j 2^(L-1-t))). The inverse uses the same
// table: w^-x = w^(n/2) w^(n/2 - x) = -w^(n/2 - x), so (u - v) w^-(j 2^(L-1-t)) =
// (v - u) W[(2^t - j) 2^(L-1-t)], which for j = 0 reads W[n/2] = -1 (the table holds n/2 + 1
// entries). Stage 0 multiplies by 1 in both directions and is a plain subtraction. The last pass
// may scale by a power table at bitrev(g), the index of the coefficient the slot holds.
//
// Radix 2^K (dit_stage_k / dif_stage_k, K = 2 or 3): a thread holds 2^K elements, whose indices
// differ in K adjacent bits, and runs those K stages on them between two barriers: 1/K of the
// barriers and shared-memory traffic of radix 2, fewer twiddle loads (3 for 4 products at K = 2,
// 7 for 12 at K = 3), and 2^(K-1) independent products at a time for the scheduler. A block has
// 2^(S-K) threads; stages left over (S mod K) run as a smaller radix, several groups a thread.
//
// Power tables: value(i) = lo[i & (2^bits - 1)] * hi[i >> bits], hi per batch row (hi_stride).
// Shared memory keeps an element as two 16-byte halves (half h of element e at sm[h << S | e]).
#pragma once
#include "../ff/bls12_381.cuh"
#include "../ff/host_cuda.cuh"

namespace nttp {

HD Fr ld(const uint32_t* p, uint64_t i) {
    const uint4* q = reinterpret_cast<const uint4*>(p + i * 8);
    uint4 a = __ldg(q), b = __ldg(q + 1);
    Fr r;
    r.v[0] = a.x; r.v[1] = a.y; r.v[2] = a.z; r.v[3] = a.w;
    r.v[4] = b.x; r.v[5] = b.y; r.v[6] = b.z; r.v[7] = b.w;
    return r;
}

// A plain load: for buffers the same launch writes (an in-place pass), which the read-only
// cache must not serve.
HD Fr ld_rw(const uint32_t* p, uint64_t i) {
    const uint4* q = reinterpret_cast<const uint4*>(p + i * 8);
    uint4 a = q[0], b = q[1];
    Fr r;
    r.v[0] = a.x; r.v[1] = a.y; r.v[2] = a.z; r.v[3] = a.w;
    r.v[4] = b.x; r.v[5] = b.y; r.v[6] = b.z; r.v[7] = b.w;
    return r;
}

HD void st(uint32_t* p, uint64_t i, const Fr& r) {
    uint4* q = reinterpret_cast<uint4*>(p + i * 8);
    q[0] = make_uint4(r.v[0], r.v[1], r.v[2], r.v[3]);
    q[1] = make_uint4(r.v[4], r.v[5], r.v[6], r.v[7]);
}

HD void put(uint4* sm, int S, uint32_t e, const Fr& x) {
    sm[e] = make_uint4(x.v[0], x.v[1], x.v[2], x.v[3]);
    sm[(1u << S) | e] = make_uint4(x.v[4], x.v[5], x.v[6], x.v[7]);
}

HD Fr get(const uint4* sm, int S, uint32_t e) {
    uint4 a = sm[e], b = sm[(1u << S) | e];
    Fr r;
    r.v[0] = a.x; r.v[1] = a.y; r.v[2] = a.z; r.v[3] = a.w;
    r.v[4] = b.x; r.v[5] = b.y; r.v[6] = b.z; r.v[7] = b.w;
    return r;
}

HD uint64_t bitrev(uint64_t g, int log_n) { return log_n ? __brevll(g) >> (64 - log_n) : 0; }

// Everything one pass needs; the kernels fill it from their arguments, the host test directly.
struct Pass {
    const uint32_t* src;   // DIT first pass: where the input is read (may be dst: in place)
    const uint32_t* src2;  // DIT first pass: multiply by src2 at the same index (null: no)
    uint32_t* dst;         // the buffer transformed in place after the first pass
    uint64_t stride;       // words between batch rows of src, src2 and dst
    const uint32_t* W;     // w^k for k <= n/2
    int log_n, s0, S;
    int gather;            // DIT first pass: 0 from g, 1 from bitrev(g), 2 from (n - bitrev(g)) mod n
    int inverse;           // DIF: inverse twiddles
    const uint32_t* lo;    // last pass: scale by lo[i & mask] * hi[i >> bits] (null: no scale)
    const uint32_t* hi;
    uint64_t hi_stride;    // words between the hi tables of consecutive batch rows
    int tab_bits;
    const uint32_t* sub;   // DIT last pass: subtract sub[bitrev(g)] before the scale (null: no)
};

// One block's place in a pass: its fixed high and low index bits and its batch row.
struct Block {
    uint64_t low, high, row;
    uint32_t T;  // threads of the block: 2^S / E, E elements a thread (2: one butterfly a stage)
};

HD Block block_of(const Pass& p, uint64_t bx, uint64_t by, int K = 1) {  // 2^K elements a thread
    Block b;
    b.low = bx & ((1ull << p.s0) - 1);
    b.high = bx >> p.s0;
    b.row = by;
    b.T = 1u << (p.S - K);
    return b;
}

// The twiddle index of stage t (= s0 + tt) for the butterfly whose lower element is i: its bits
// below tt, then the block's low bits.
HD uint64_t twiddle_j(const Pass& p, const Block& b, uint32_t i, int tt) {
    return ((uint64_t)(i & ((1u << tt) - 1)) << p.s0) | b.low;
}

// Where element e sits in shared memory. The radix-2^K kernels (Z) swizzle it: e's low three bits
// XOR its bits 3..5, so that a quarter-warp's eight 16-byte accesses fall in eight different bank
// groups both where its lanes hold consecutive elements (loads, stores, high stages) and where
// each lane holds 2^K consecutive ones (the lowest stages). Counted with a Python model of these
// access patterns for a 9-stage pass: 1,024 shared-memory wavefronts in radix 8 against 2,816
// unswizzled (3,328 in radix 2), 1,792 in radix 4 against 2,560.
template <bool Z>
HD uint32_t slot(uint32_t e) {
    return Z ? e ^ ((e >> 3) & 7u) : e;
}

// tid with K zero bits inserted at r: the first of a radix-2^K thread's elements.
HD uint32_t spread(uint32_t tid, int r, int K) {
    return ((tid >> r) << (r + K)) | (tid & ((1u << r) - 1));
}

HD uint64_t index_of(const Pass& p, const Block& b, uint32_t e) {
    return (b.high << (p.s0 + p.S)) | ((uint64_t)e << p.s0) | b.low;
}

HD Fr table_value(const Pass& p, const Block& b, uint64_t i) {
    const uint32_t* hi = p.hi + b.row * p.hi_stride;
    return ld(p.lo, i & ((1ull << p.tab_bits) - 1)) * ld(hi, i >> p.tab_bits);
}

// ---- DIT ---------------------------------------------------------------------------------------
template <int K = 1>
HD void dit_load(const Pass& p, const Block& b, uint4* sm, uint32_t tid) {
    const bool first = p.s0 == 0;
    const uint64_t n = 1ull << p.log_n;
    UNROLL for (int h = 0; h < (1 << K); h++) {
        const uint32_t e = tid + h * b.T;
        const uint64_t g = index_of(p, b, e);
        Fr x;
        if (first) {
            uint64_t from = g;
            if (p.gather) from = bitrev(g, p.log_n);
            if (p.gather == 2) from = (n - from) & (n - 1);
            const uint32_t* src = p.src + b.row * p.stride;
            x = src == p.dst + b.row * p.stride ? ld_rw(src, from) : ld(src, from);
            if (p.src2) x = x * ld(p.src2 + b.row * p.stride, from);
        } else {
            x = ld_rw(p.dst + b.row * p.stride, g);
        }
        put(sm, p.S, slot<(K > 1)>(e), x);
    }
}

// (u, v) -> (u + v w, u - v w), w = w^(j 2^(L-1-t)); t is the same for the whole block, and
// stage 0 multiplies by w^0 = 1: the radix-4 stages' butterfly (dit_stage writes the same
// through shared memory).
HD void dit_bfly(const Pass& p, int t, uint64_t j, Fr& u, Fr& v) {
    if (t != 0) v = v * ld(p.W, j << (p.log_n - 1 - t));
    const Fr x = u + v;
    v = u - v;
    u = x;
}

// Stage tt's butterfly number tid (of 2^(S-1)).
HD void dit_stage(const Pass& p, const Block& b, uint4* sm, uint32_t tid, int tt) {
    const uint32_t hbit = 1u << tt;
    const uint32_t i = ((tid >> tt) << (tt + 1)) | (tid & (hbit - 1));
    const uint32_t k = i | hbit;
    const int t = p.s0 + tt;
    Fr u = get(sm, p.S, i), v = get(sm, p.S, k);
    if (t != 0) {  // t is the same for the whole block; stage 0 multiplies by w^0 = 1
        const uint64_t j = ((uint64_t)(i & (hbit - 1)) << p.s0) | b.low;
        v = v * ld(p.W, j << (p.log_n - 1 - t));
    }
    put(sm, p.S, i, u + v);
    put(sm, p.S, k, u - v);
}

// Stages tt .. tt + K - 1 on the 2^K elements q | m 2^tt (m < 2^K) of group g (of 2^(S-K)):
// stage tt + s pairs element m with m | 2^s (bit s of m clear), its twiddle set by m's bits below s.
template <int K, bool Z>
HD void dit_stage_k(const Pass& p, const Block& b, uint4* sm, uint32_t g, int tt) {
    const uint32_t q = spread(g, tt, K);
    Fr x[1 << K];
    UNROLL for (int m = 0; m < (1 << K); m++) x[m] = get(sm, p.S, slot<Z>(q | ((uint32_t)m << tt)));
    UNROLL for (int st = 0; st < K; st++) {
        UNROLL for (int m = 0; m < (1 << K); m++) {
            if (m & (1 << st)) continue;
            const uint32_t below = (uint32_t)(m & ((1 << st) - 1)) << tt;
            dit_bfly(p, p.s0 + tt + st, twiddle_j(p, b, q | below, tt + st), x[m], x[m | (1 << st)]);
        }
    }
    UNROLL for (int m = 0; m < (1 << K); m++) put(sm, p.S, slot<Z>(q | ((uint32_t)m << tt)), x[m]);
}

template <int K = 1>
HD void dit_store(const Pass& p, const Block& b, const uint4* sm, uint32_t tid) {
    const bool last = p.s0 + p.S == p.log_n;
    UNROLL for (int h = 0; h < (1 << K); h++) {
        const uint32_t e = tid + h * b.T;
        const uint64_t g = index_of(p, b, e);
        Fr x = get(sm, p.S, slot<(K > 1)>(e));
        if (last && p.sub) x = x - ld(p.sub, bitrev(g, p.log_n));
        if (last && p.lo) x = x * table_value(p, b, g);
        st(p.dst + b.row * p.stride, g, x);
    }
}

// ---- DIF ---------------------------------------------------------------------------------------
template <int K = 1>
HD void dif_load(const Pass& p, const Block& b, uint4* sm, uint32_t tid) {
    UNROLL for (int h = 0; h < (1 << K); h++) {
        const uint32_t e = tid + h * b.T;
        put(sm, p.S, slot<(K > 1)>(e), ld_rw(p.dst + b.row * p.stride, index_of(p, b, e)));
    }
}

// (u, v) -> (u + v, (u - v) w), w = w^(j 2^(L-1-t)), or w^-(j 2^(L-1-t)) for the inverse: the
// radix-4 stages' butterfly (dif_stage writes the same through shared memory).
HD void dif_bfly(const Pass& p, int t, uint64_t j, Fr& u, Fr& v) {
    const Fr x = u + v;
    if (t == 0) {  // w^0 = 1 both ways (the inverse's W[n/2] = -1 times v - u)
        v = u - v;
    } else {
        const int sh = p.log_n - 1 - t;
        if (p.inverse) v = (v - u) * ld(p.W, ((1ull << t) - j) << sh);
        else v = (u - v) * ld(p.W, j << sh);
    }
    u = x;
}

// Stage tt's butterfly number tid (of 2^(S-1)).
HD void dif_stage(const Pass& p, const Block& b, uint4* sm, uint32_t tid, int tt) {
    const uint32_t hbit = 1u << tt;
    const uint32_t i = ((tid >> tt) << (tt + 1)) | (tid & (hbit - 1));
    const uint32_t k = i | hbit;
    const int t = p.s0 + tt;
    Fr u = get(sm, p.S, i), v = get(sm, p.S, k);
    put(sm, p.S, i, u + v);
    if (t == 0) {  // w^0 = 1 both ways (the inverse's W[n/2] = -1 times v - u)
        put(sm, p.S, k, u - v);
        return;
    }
    const uint64_t j = ((uint64_t)(i & (hbit - 1)) << p.s0) | b.low;
    const int sh = p.log_n - 1 - t;
    if (p.inverse) put(sm, p.S, k, (v - u) * ld(p.W, ((1ull << t) - j) << sh));
    else put(sm, p.S, k, (u - v) * ld(p.W, j << sh));
}

// Stages r + K - 1 down to r (DIF runs from the high bits down) on the 2^K elements q | m 2^r of
// group g (of 2^(S-K)), paired as in dit_stage_k.
template <int K, bool Z>
HD void dif_stage_k(const Pass& p, const Block& b, uint4* sm, uint32_t g, int r) {
    const uint32_t q = spread(g, r, K);
    Fr x[1 << K];
    UNROLL for (int m = 0; m < (1 << K); m++) x[m] = get(sm, p.S, slot<Z>(q | ((uint32_t)m << r)));
    UNROLL for (int st = K - 1; st >= 0; st--) {
        UNROLL for (int m = 0; m < (1 << K); m++) {
            if (m & (1 << st)) continue;
            const uint32_t below = (uint32_t)(m & ((1 << st) - 1)) << r;
            dif_bfly(p, p.s0 + r + st, twiddle_j(p, b, q | below, r + st), x[m], x[m | (1 << st)]);
        }
    }
    UNROLL for (int m = 0; m < (1 << K); m++) put(sm, p.S, slot<Z>(q | ((uint32_t)m << r)), x[m]);
}

// A pass in radix 2^K is steps_k(S) steps between barriers: step i runs stages iK .. iK + K - 1
// (DIT from the low bits up; DIF the same stages from the high bits down, S - iK - 1 first) on
// the block's 2^(S-K) threads, and the l = S mod K stages left over make the last step, in
// radix 2^l, 2^(K-l) groups a thread.
template <int K>
HD int steps_k(int S) { return (S + K - 1) / K; }

template <int K>
HD void dit_step(const Pass& p, const Block& b, uint4* sm, uint32_t tid, int step) {
    const int tt = step * K, l = p.S - tt < K ? p.S - tt : K;
    if (l == K) {
        dit_stage_k<K, (K > 1)>(p, b, sm, tid, tt);
        return;
    }
    for (uint32_t i = 0; i < (1u << (K - l)); i++) {
        if (l == 2) dit_stage_k<2, (K > 1)>(p, b, sm, tid + i * b.T, tt);
        else dit_stage_k<1, (K > 1)>(p, b, sm, tid + i * b.T, tt);
    }
}

template <int K>
HD void dif_step(const Pass& p, const Block& b, uint4* sm, uint32_t tid, int step) {
    const int hi = p.S - step * K, l = hi < K ? hi : K;
    if (l == K) {
        dif_stage_k<K, (K > 1)>(p, b, sm, tid, hi - K);
        return;
    }
    for (uint32_t i = 0; i < (1u << (K - l)); i++) {  // the stages below hi = l
        if (l == 2) dif_stage_k<2, (K > 1)>(p, b, sm, tid + i * b.T, 0);
        else dif_stage_k<1, (K > 1)>(p, b, sm, tid + i * b.T, 0);
    }
}

template <int K = 1>
HD void dif_store(const Pass& p, const Block& b, const uint4* sm, uint32_t tid) {
    const bool last = p.s0 == 0;
    UNROLL for (int h = 0; h < (1 << K); h++) {
        const uint32_t e = tid + h * b.T;
        const uint64_t g = index_of(p, b, e);
        Fr x = get(sm, p.S, slot<(K > 1)>(e));
        if (last && p.lo) x = x * table_value(p, b, bitrev(g, p.log_n));
        st(p.dst + b.row * p.stride, g, x);
    }
}

}  // namespace nttp
