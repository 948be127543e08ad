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
            for (uint32_t t = 0; t < b.T; t++) (dif ? nttp::dif_load<2> : nttp::dit_load<2>)(p, b, sm.data(), t);
            for (int s = 0; s < p.S; s++) {
                const int tt = dif ? p.S - 1 - s : s;
                for (uint32_t t = 0; t < b.T; t++) (dif ? nttp::dif_stage : nttp::dit_stage)(p, b, sm.data(), t, tt);
            }
            for (uint32_t t = 0; t < b.T; t++) (dif ? nttp::dif_store<2> : nttp::dit_store<2>)(p, b, sm.data(), t);
        }
    }
}

// The radix-4 kernels (ntt.cu's ntt_dit4 / ntt_dif4): 2^(S-2) threads a block, the stages in pairs.
static void run4(const nttp::Pass& p, int rows, bool dif) {
    const uint64_t blocks = (1ull << p.log_n) >> p.S;
    std::vector<uint4> sm(2u << p.S);
    for (uint64_t by = 0; by < (uint64_t)rows; by++) {
        for (uint64_t bx = 0; bx < blocks; bx++) {
            const nttp::Block b = nttp::block_of(p, bx, by, 4);
            for (uint32_t t = 0; t < b.T; t++) (dif ? nttp::dif_load<4> : nttp::dit_load<4>)(p, b, sm.data(), t);
            if (dif) {
                int tt = p.S - 1;
                for (; tt >= 1; tt -= 2)
                    for (uint32_t t = 0; t < b.T; t++) nttp::dif_stage4(p, b, sm.data(), t, tt - 1);
                if (tt == 0)
                    for (uint32_t t = 0; t < b.T; t++) {
                        nttp::dif_stage(p, b, sm.data(), t, 0);
                        nttp::dif_stage(p, b, sm.data(), t + b.T, 0);
                    }
            } else {
                int tt = 0;
                for (; tt + 1 < p.S; tt += 2)
                    for (uint32_t t = 0; t < b.T; t++) nttp::dit_stage4(p, b, sm.data(), t, tt);
                if (tt < p.S)
                    for (uint32_t t = 0; t < b.T; t++) {
                        nttp::dit_stage(p, b, sm.data(), t, tt);
                        nttp::dit_stage(p, b, sm.data(), t + b.T, tt);
                    }
            }
            for (uint32_t t = 0; t < b.T; t++) (dif ? nttp::dif_store<4> : nttp::dit_store<4>)(p, b, sm.data(), t);
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

void host_ntt_dit4(int rows, const uint32_t* src, const uint32_t* src2, uint32_t* dst, uint64_t stride, const uint32_t* W,
                   int log_n, int s0, int S, int gather, const uint32_t* lo, const uint32_t* hi, uint64_t hi_stride,
                   int tab_bits, const uint32_t* sub) {
    const nttp::Pass p = {src, src2, dst, stride, W, log_n, s0, S, gather, 0, lo, hi, hi_stride, tab_bits, sub};
    run4(p, rows, false);
}

void host_ntt_dif4(int rows, uint32_t* data, uint64_t stride, const uint32_t* W, int log_n, int s0, int S, int inverse,
                   const uint32_t* lo, const uint32_t* hi, uint64_t hi_stride, int tab_bits) {
    const nttp::Pass p = {data, 0, data, stride, W, log_n, s0, S, 0, inverse, lo, hi, hi_stride, tab_bits, 0};
    run4(p, rows, true);
}
}
