// G1 (over Fp) instantiation of the MSM and fixed-base kernels, plus the group-independent
// scalar kernels (digits, counting sort, work items) and the GLV split. See msm_core.cuh for the
// pipeline.
// MSM_G1_ACC_BOUNDS (a build define, see module.py) overrides the accumulation kernel's launch
// bounds for measuring variants.
// MSM_G1_ROUNDS_THREADS and MSM_G1_ROUNDS_MINB (build defines) set the rounds kernels' block and
// the fused and finish passes' blocks a multiprocessor: launch bounds (256, 2) by default, which
// give ptxas 128 registers (23 % occupancy, ncu of H's first round); more blocks a multiprocessor
// mean fewer registers and more warps to hide the pass's memory latency behind
// (kernels/cuda/msm_rounds.py reads the block size from the same define). The step-only pass gets
// 768 threads a multiprocessor, (256, 3) by default.
#define MSM_GENERIC_KERNELS
#ifdef MSM_G1_ACC_BOUNDS
#define MSM_ACC_BOUNDS MSM_G1_ACC_BOUNDS
#endif
#ifndef MSM_G1_ROUNDS_THREADS
#define MSM_G1_ROUNDS_THREADS 256
#endif
#ifndef MSM_G1_ROUNDS_MINB
#define MSM_G1_ROUNDS_MINB 2
#endif
#ifndef MSM_ROUNDS_BOUNDS
#define MSM_ROUNDS_BOUNDS __launch_bounds__(MSM_G1_ROUNDS_THREADS, MSM_G1_ROUNDS_MINB)
#endif
#ifndef MSM_ROUNDS_STEP_BOUNDS
#define MSM_ROUNDS_STEP_BOUNDS __launch_bounds__(MSM_G1_ROUNDS_THREADS, (768 + MSM_G1_ROUNDS_THREADS - 1) / MSM_G1_ROUNDS_THREADS)
#endif
#include "msm_core.cuh"
#include "batch_affine.cuh"
#include "rounds.cuh"
#include "fixed_base.cuh"
#include "glv.cuh"
#include "sort2.cuh"

MSM_GROUP_KERNELS(g1, Fp)
MSM_BATCH_KERNEL(g1, Fp)
MSM_ROUNDS_KERNELS(g1, Fp)
BATCH_INVERSE_KERNELS(fp, Fp)
FIXED_BASE_KERNELS(g1, Fp)

// The GLV split (glv.cuh), G1 only, straight from the Montgomery scalars: thread t < N writes
// canon2[t] = s_t mod lambda and canon2[N + t] = s_t div lambda (both zero for t >= n), the rows
// of the points and their images in a table of 2N rows. Tables with images are H's, whose scalars
// are full-length field elements, so no 0/1 split comes first: this is the scalars' one pass.
extern "C" __global__ void g1_glv_dense(const uint32_t* scalars, uint64_t n, uint64_t N, uint32_t* canon2) {
    const uint64_t t = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= N) return;
    uint32_t s1[8], s2[8];
    if (t < n) {
        const Fr s = Fr::load(scalars + t * 8).from_mont();
        glv::split(s.v, s1, s2);
    } else {
        UNROLL for (int i = 0; i < 8; i++) s1[i] = s2[i] = 0;
    }
    // whole 16-byte words out: eight 4-byte stores a row would each touch another sector (and a
    // partial store costs the memory a read)
    uint4* a = reinterpret_cast<uint4*>(canon2 + t * 8);
    uint4* b = reinterpret_cast<uint4*>(canon2 + (N + t) * 8);
    a[0] = make_uint4(s1[0], s1[1], s1[2], s1[3]);
    a[1] = make_uint4(s1[4], s1[5], s1[6], s1[7]);
    b[0] = make_uint4(s2[0], s2[1], s2[2], s2[3]);
    b[1] = make_uint4(s2[4], s2[5], s2[6], s2[7]);
}

// out[i] = (beta x_i, y_i): lambda times each point of a G1 table.
extern "C" __global__ void g1_endo(const uint32_t* points, uint64_t n, uint32_t* out) {
    const uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) glv::endo_point(points + i * G1Affine::WORDS, out + i * G1Affine::WORDS);
}
