// Host build of the NTT passes of ntt_pass.cuh: each launch of ntt.cu's ntt_dit / ntt_dif run
// block by block, a block's threads one after another between the barriers (the phases touch
// disjoint shared-memory slots within a stage, so the order inside a phase does not matter).
// tests/test_cuda_host_ntt.py builds it with a C++ compiler and drives it with the plan of
// kernels/cuda/hstep.py, the same launches poly.py makes on the GPU.
#include <vector>
#include "ntt_pass.cuh"

static void run(const nttp::Pass& p, int rows, bool dif) {
    const uint64_t blocks = (1ull << p.log_n) >> p.S;
    std::vector<uint4> sm(2u << p.S);
    for (uint64_t by = 0; by < (uint64_t)rows; by++) {
        for (uint64_t bx = 0; bx < blocks; bx++) {
            const nttp::Block b = nttp::block_of(p, bx, by);
            for (uint32_t t = 0; t < b.T; t++) (dif ? nttp::dif_load<1> : nttp::dit_load<1>)(p, b, sm.data(), t);
            for (int s = 0; s < p.S; s++) {
                const int tt = dif ? p.S - 1 - s : s;
                for (uint32_t t = 0; t < b.T; t++) (dif ? nttp::dif_stage : nttp::dit_stage)(p, b, sm.data(), t, tt);
            }
            for (uint32_t t = 0; t < b.T; t++) (dif ? nttp::dif_store<1> : nttp::dit_store<1>)(p, b, sm.data(), t);
        }
    }
}

// The radix-2^K kernels (ntt.cu's ntt_dit4 / ntt_dif4, K = 2, and ntt_dit8 / ntt_dif8, K = 3):
// 2^(S-K) threads a block, one step of K stages between barriers.
template <int K>
static void run_k(const nttp::Pass& p, int rows, bool dif) {
    const uint64_t blocks = (1ull << p.log_n) >> p.S;
    std::vector<uint4> sm(2u << p.S);
    for (uint64_t by = 0; by < (uint64_t)rows; by++) {
        for (uint64_t bx = 0; bx < blocks; bx++) {
            const nttp::Block b = nttp::block_of(p, bx, by, K);
            for (uint32_t t = 0; t < b.T; t++) (dif ? nttp::dif_load<K> : nttp::dit_load<K>)(p, b, sm.data(), t);
            for (int st = 0; st < nttp::steps_k<K>(p.S); st++)
                for (uint32_t t = 0; t < b.T; t++) (dif ? nttp::dif_step<K> : nttp::dit_step<K>)(p, b, sm.data(), t, st);
            for (uint32_t t = 0; t < b.T; t++) (dif ? nttp::dif_store<K> : nttp::dit_store<K>)(p, b, sm.data(), t);
        }
    }
}

extern "C" {
void host_ntt_dit(int rows, const uint32_t* src, const uint32_t* src2, uint32_t* dst, uint64_t stride, const uint32_t* W,
                  int log_n, int s0, int S, int gather, const uint32_t* lo, const uint32_t* hi, uint64_t hi_stride,
                  int tab_bits, const uint32_t* sub) {
    const nttp::Pass p = {src, src2, dst, stride, W, log_n, s0, S, gather, 0, lo, hi, hi_stride, tab_bits, sub};
    run(p, rows, false);
}

void host_ntt_dif(int rows, uint32_t* data, uint64_t stride, const uint32_t* W, int log_n, int s0, int S, int inverse,
                  const uint32_t* lo, const uint32_t* hi, uint64_t hi_stride, int tab_bits) {
    const nttp::Pass p = {data, 0, data, stride, W, log_n, s0, S, 0, inverse, lo, hi, hi_stride, tab_bits, 0};
    run(p, rows, true);
}

#define HOST_NTT_RADIX(R, K)                                                                                      \
    void host_ntt_dit##R(int rows, const uint32_t* src, const uint32_t* src2, uint32_t* dst, uint64_t stride,         \
                         const uint32_t* W, int log_n, int s0, int S, int gather, const uint32_t* lo,                 \
                         const uint32_t* hi, uint64_t hi_stride, int tab_bits, const uint32_t* sub) {                 \
        const nttp::Pass p = {src, src2, dst, stride, W, log_n, s0, S, gather, 0, lo, hi, hi_stride, tab_bits, sub}; \
        run_k<K>(p, rows, false);                                                                                 \
    }                                                                                                             \
    void host_ntt_dif##R(int rows, uint32_t* data, uint64_t stride, const uint32_t* W, int log_n, int s0, int S,     \
                         int inverse, const uint32_t* lo, const uint32_t* hi, uint64_t hi_stride, int tab_bits) {      \
        const nttp::Pass p = {data, 0, data, stride, W, log_n, s0, S, 0, inverse, lo, hi, hi_stride, tab_bits, 0};  \
        run_k<K>(p, rows, true);                                                                                  \
    }
HOST_NTT_RADIX(4, 2)
HOST_NTT_RADIX(8, 3)
}
