// Radix-2 NTT over Fr, natural order in and out, several stages per launch in shared memory.
//
// Decimation in time over a bit-reversed copy: the first pass gathers x[bitrev(g)] (for the
// inverse, x[(n - bitrev(g)) mod n], since INTT(x)[g] = DFT(x[-i])[g] / n, so one twiddle table
// serves both directions) into the output buffer; later passes work in place. A pass runs up to
// 10 consecutive stages on 2^S elements held in shared memory: the elements whose index differs
// only in bits [s0, s0 + S). Coset shift powers and 1/n are folded into the first pass's load and
// the last pass's store as products of two small power tables (value = lo[i & mask] * hi[i >> bits]).
// Shared memory holds an element as two 16-byte halves (half h of element e at sm[h << S | e]), so
// a butterfly moves its operands with four 16-byte accesses each way instead of sixteen 4-byte
// ones, and consecutive elements of a warp stay on consecutive banks. Stage 0 of the first pass
// multiplies by w^0 = 1 and skips the product.
// ntt_dit and ntt_dif (at the end) run the passes of ntt_pass.cuh, both orders, in place or
// gathering, with the H step's scales and pointwise product folded in (kernels/cuda/hstep.py).
#include "../ff/bls12_381.cuh"
#include "ntt_pass.cuh"

__device__ __forceinline__ Fr load_fr(const uint32_t* p, uint64_t i) {
    const uint4* q = reinterpret_cast<const uint4*>(p + i * 8);
    uint4 a = q[0], b = q[1];
    Fr r;
    r.v[0] = a.x; r.v[1] = a.y; r.v[2] = a.z; r.v[3] = a.w;
    r.v[4] = b.x; r.v[5] = b.y; r.v[6] = b.z; r.v[7] = b.w;
    return r;
}

__device__ __forceinline__ void store_fr(uint32_t* p, uint64_t i, const Fr& r) {
    uint4* q = reinterpret_cast<uint4*>(p + i * 8);
    q[0] = make_uint4(r.v[0], r.v[1], r.v[2], r.v[3]);
    q[1] = make_uint4(r.v[4], r.v[5], r.v[6], r.v[7]);
}

__device__ __forceinline__ Fr ldg_fr(const uint32_t* p, uint64_t i) {
    const uint4* q = reinterpret_cast<const uint4*>(p + i * 8);
    uint4 a = __ldg(q), b = __ldg(q + 1);
    Fr r;
    r.v[0] = a.x; r.v[1] = a.y; r.v[2] = a.z; r.v[3] = a.w;
    r.v[4] = b.x; r.v[5] = b.y; r.v[6] = b.z; r.v[7] = b.w;
    return r;
}

__device__ __forceinline__ void put_sm(uint4* sm, int S, uint32_t e, const Fr& x) {
    sm[e] = make_uint4(x.v[0], x.v[1], x.v[2], x.v[3]);
    sm[(1u << S) | e] = make_uint4(x.v[4], x.v[5], x.v[6], x.v[7]);
}

__device__ __forceinline__ Fr get_sm(const uint4* sm, int S, uint32_t e) {
    uint4 a = sm[e], b = sm[(1u << S) | e];
    Fr r;
    r.v[0] = a.x; r.v[1] = a.y; r.v[2] = a.z; r.v[3] = a.w;
    r.v[4] = b.x; r.v[5] = b.y; r.v[6] = b.z; r.v[7] = b.w;
    return r;
}

__device__ __forceinline__ Fr table_power(const uint32_t* lo, const uint32_t* hi, int bits, uint64_t i) {
    return ldg_fr(lo, i & ((1ull << bits) - 1)) * ldg_fr(hi, i >> bits);
}

extern "C" {

// out[k] = lo[k & mask] * hi[k >> bits] for k < count: twiddle tables and coset power tables.
__global__ void fr_power_table(uint32_t* out, uint64_t count, const uint32_t* lo, const uint32_t* hi, int bits) {
    uint64_t k = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= count) return;
    store_fr(out, k, table_power(lo, hi, bits, k));
}

__global__ void ntt_pass(const uint32_t* src, uint32_t* dst, uint64_t batch_stride, const uint32_t* W,
                         int log_n, int s0, int S, int first, int inverse,
                         const uint32_t* pre_lo, const uint32_t* pre_hi,
                         const uint32_t* post_lo, const uint32_t* post_hi, int tab_bits) {
    extern __shared__ uint4 sm[];  // half h (words 4h .. 4h + 3) of element e at sm[h << S | e]
    const uint32_t T = 1u << (S - 1);
    const uint32_t tid = threadIdx.x;
    const uint64_t n = 1ull << log_n;
    const uint64_t b = blockIdx.x;
    const uint64_t low = b & ((1ull << s0) - 1);
    const uint64_t high = b >> s0;
    const uint64_t base = (uint64_t)blockIdx.y * batch_stride;
    src += base;
    dst += base;

    UNROLL for (int h = 0; h < 2; h++) {
        uint32_t e = tid + h * T;
        uint64_t g = (high << (s0 + S)) | ((uint64_t)e << s0) | low;
        uint64_t from = g;
        if (first) {
            from = (uint64_t)(__brevll(g) >> (64 - log_n));
            if (inverse) from = (n - from) & (n - 1);
        }
        Fr x = load_fr(src, from);
        if (pre_lo != 0) x = x * table_power(pre_lo, pre_hi, tab_bits, from);
        put_sm(sm, S, e, x);
    }

    for (int tt = 0; tt < S; tt++) {
        __syncthreads();
        uint32_t hbit = 1u << tt;
        uint32_t i = ((tid >> tt) << (tt + 1)) | (tid & (hbit - 1));
        uint32_t k = i | hbit;
        uint64_t j = ((uint64_t)(i & (hbit - 1)) << s0) | low;
        int t = s0 + tt;
        Fr u = get_sm(sm, S, i), v = get_sm(sm, S, k);
        if (t != 0) v = v * ldg_fr(W, j << (log_n - 1 - t));  // t is the same for the whole block
        put_sm(sm, S, i, u + v);
        put_sm(sm, S, k, u - v);
    }
    __syncthreads();

    UNROLL for (int h = 0; h < 2; h++) {
        uint32_t e = tid + h * T;
        uint64_t g = (high << (s0 + S)) | ((uint64_t)e << s0) | low;
        Fr x = get_sm(sm, S, e);
        if (post_lo != 0) x = x * table_power(post_lo, post_hi, tab_bits, g);
        store_fr(dst, g, x);
    }
}

// The passes of ntt_pass.cuh (the fused H step of kernels/cuda/poly.py): one block per 2^S
// elements of one batch row (blockIdx.y), the phases between barriers.
__global__ void ntt_dit(const uint32_t* src, const uint32_t* src2, uint32_t* dst, uint64_t stride, const uint32_t* W,
                        int log_n, int s0, int S, int gather, const uint32_t* lo, const uint32_t* hi,
                        uint64_t hi_stride, int tab_bits, const uint32_t* sub) {
    extern __shared__ uint4 sm[];
    const nttp::Pass p = {src, src2, dst, stride, W, log_n, s0, S, gather, 0, lo, hi, hi_stride, tab_bits, sub};
    const nttp::Block b = nttp::block_of(p, blockIdx.x, blockIdx.y);
    nttp::dit_load(p, b, sm, threadIdx.x);
    for (int tt = 0; tt < S; tt++) {
        __syncthreads();
        nttp::dit_stage(p, b, sm, threadIdx.x, tt);
    }
    __syncthreads();
    nttp::dit_store(p, b, sm, threadIdx.x);
}

__global__ void ntt_dif(uint32_t* data, uint64_t stride, const uint32_t* W, int log_n, int s0, int S, int inverse,
                        const uint32_t* lo, const uint32_t* hi, uint64_t hi_stride, int tab_bits) {
    extern __shared__ uint4 sm[];
    const nttp::Pass p = {data, 0, data, stride, W, log_n, s0, S, 0, inverse, lo, hi, hi_stride, tab_bits, 0};
    const nttp::Block b = nttp::block_of(p, blockIdx.x, blockIdx.y);
    nttp::dif_load(p, b, sm, threadIdx.x);
    for (int tt = S - 1; tt >= 0; tt--) {
        __syncthreads();
        nttp::dif_stage(p, b, sm, threadIdx.x, tt);
    }
    __syncthreads();
    nttp::dif_store(p, b, sm, threadIdx.x);
}

}  // extern "C"

// The same passes in radix 2^K (ntt_pass.cuh): 2^(S-K) threads a block, 2^K elements each, K
// stages between barriers (the S mod K left over in a smaller radix). S >= K.
template <int K>
__device__ __forceinline__ void dit_k(const uint32_t* src, const uint32_t* src2, uint32_t* dst, uint64_t stride,
                                      const uint32_t* W, int log_n, int s0, int S, int gather, const uint32_t* lo,
                                      const uint32_t* hi, uint64_t hi_stride, int tab_bits, const uint32_t* sub) {
    extern __shared__ uint4 sm[];
    const nttp::Pass p = {src, src2, dst, stride, W, log_n, s0, S, gather, 0, lo, hi, hi_stride, tab_bits, sub};
    const nttp::Block b = nttp::block_of(p, blockIdx.x, blockIdx.y, K);
    nttp::dit_load<K>(p, b, sm, threadIdx.x);
    for (int st = 0; st < nttp::steps_k<K>(S); st++) {
        __syncthreads();
        nttp::dit_step<K>(p, b, sm, threadIdx.x, st);
    }
    __syncthreads();
    nttp::dit_store<K>(p, b, sm, threadIdx.x);
}
template <int K>
__device__ __forceinline__ void dif_k(uint32_t* data, uint64_t stride, const uint32_t* W, int log_n, int s0, int S,
                                      int inverse, const uint32_t* lo, const uint32_t* hi, uint64_t hi_stride,
                                      int tab_bits) {
    extern __shared__ uint4 sm[];
    const nttp::Pass p = {data, 0, data, stride, W, log_n, s0, S, 0, inverse, lo, hi, hi_stride, tab_bits, 0};
    const nttp::Block b = nttp::block_of(p, blockIdx.x, blockIdx.y, K);
    nttp::dif_load<K>(p, b, sm, threadIdx.x);
    for (int st = 0; st < nttp::steps_k<K>(S); st++) {
        __syncthreads();
        nttp::dif_step<K>(p, b, sm, threadIdx.x, st);
    }
    __syncthreads();
    nttp::dif_store<K>(p, b, sm, threadIdx.x);
}
#define NTT_RADIX_KERNELS(R, K)                                                                                   \
    __global__ void ntt_dit##R(const uint32_t* src, const uint32_t* src2, uint32_t* dst, uint64_t stride,          \
                               const uint32_t* W, int log_n, int s0, int S, int gather, const uint32_t* lo,         \
                               const uint32_t* hi, uint64_t hi_stride, int tab_bits, const uint32_t* sub) {        \
        dit_k<K>(src, src2, dst, stride, W, log_n, s0, S, gather, lo, hi, hi_stride, tab_bits, sub);              \
    }                                                                                                             \
    __global__ void ntt_dif##R(uint32_t* data, uint64_t stride, const uint32_t* W, int log_n, int s0, int S,     \
                               int inverse, const uint32_t* lo, const uint32_t* hi, uint64_t hi_stride,            \
                               int tab_bits) {                                                                    \
        dif_k<K>(data, stride, W, log_n, s0, S, inverse, lo, hi, hi_stride, tab_bits);                             \
    }
extern "C" {
NTT_RADIX_KERNELS(4, 2)
NTT_RADIX_KERNELS(8, 3)
}  // extern "C"
