// Batch inversion of M field elements by Montgomery's trick, in levels (kernels/cuda/batch_inverse.py
// plans and launches them).
//
// Why: a Fermat inversion is a chain of ~490 dependent multiplications (Mont::inv_fast), so a GPU
// inverts many values at once by multiplying them together, inverting the product and unwinding:
// 3 multiplications per value plus one inversion per chain. Levels keep every kernel a plain
// streaming kernel: on an "up" level thread t of T multiplies values t, t + T, t + 2T, ... (a warp
// reads neighbouring rows), keeps each value's exclusive prefix product in pre[] and writes its
// chain's product to the next level; the top level's threads each invert their own chain's product
// by Fermat and unwind it; each "down" level then unwinds its chains from the inverses of their
// products. Zeros are skipped (counted as one) and stay zero, so every value maps to its Fermat
// power x^(p-2), as Mont::inv does.
// Values are rows of F::WORDS words (row i at a + i * F::WORDS).
#pragma once
#include "bls12_381.cuh"
#include "inverse_gcd.cuh"

// SEALTOP_BINV_GCD (a build define): 1, the default, makes the top level invert each chain's
// product by a binary GCD (inverse_gcd.cuh's inv_gcd) instead of Fermat's inv_fast (0; ~490
// dependent multiplications). The top level's latency is paid once per call, and the MSM's rounds
// call it every round: on an H100 (2026-12-05, scripts/gpu_check.py, one build each) G1 2^24 took
// 109.7 ms against 117.1-117.2 with Fermat, 2^27 (runs, rounds of 288) 672.6 against 818.0-821.4,
// H's 2^27 GLV split 608.1 against 639.9-642.5. Bit for bit the same values
// (tests/test_cuda_host_inverse.py).
#ifndef SEALTOP_BINV_GCD
#define SEALTOP_BINV_GCD 1
#endif

template <class F>
HD F binv_load(const uint32_t* a, uint64_t i) { return F::load(a + i * F::WORDS); }
template <class F>
HD void binv_store(uint32_t* a, uint64_t i, const F& v) { v.store(a + i * F::WORDS); }

// Thread t of T, an up level: pre[i] = the product of the chain's values before i, up[t] = the
// product of all of them.
template <class F>
HD void binv_up(const uint32_t* vals, uint32_t* pre, uint32_t M, uint32_t T, uint32_t t, uint32_t* up) {
    if (t >= T) return;
    F c = F::one();
    for (uint32_t i = t; i < M; i += T) {
        binv_store(pre, i, c);
        const F v = binv_load<F>(vals, i);
        if (!v.is_zero()) c = c * v;
    }
    binv_store(up, t, c);
}

// Unwind thread t's chain (values t, t + T, ... < M) from inv = 1 / (the chain's product): each
// non-zero value is replaced by its inverse, last first.
template <class F>
HD void binv_unwind(uint32_t* vals, const uint32_t* pre, uint32_t M, uint32_t T, uint32_t t, F inv) {
    if (t >= M) return;
    for (uint32_t i = t + (M - 1 - t) / T * T;; i -= T) {
        const F v = binv_load<F>(vals, i);
        if (!v.is_zero()) {
            binv_store(vals, i, inv * binv_load<F>(pre, i));
            inv = inv * v;
        }
        if (i == t) break;
    }
}

// Thread t of T, a down level: up[t] now holds the inverse of its chain's product.
template <class F>
HD void binv_down(uint32_t* vals, const uint32_t* pre, uint32_t M, uint32_t T, uint32_t t, const uint32_t* up) {
    if (t >= T) return;
    binv_unwind<F>(vals, pre, M, T, t, binv_load<F>(up, t));
}

// Thread t of T, the top level: its chain up, one inversion (Fermat, or a GCD: SEALTOP_BINV_GCD),
// its chain down.
template <class F>
HD void binv_top(uint32_t* vals, uint32_t* pre, uint32_t M, uint32_t T, uint32_t t) {
    if (t >= T || t >= M) return;
    F c = F::one();
    for (uint32_t i = t; i < M; i += T) {
        binv_store(pre, i, c);
        const F v = binv_load<F>(vals, i);
        if (!v.is_zero()) c = c * v;
    }
#if SEALTOP_BINV_GCD
    binv_unwind<F>(vals, pre, M, T, t, inv_gcd(c));
#else
    binv_unwind<F>(vals, pre, M, T, t, c.inv_fast());
#endif
}

#ifdef __CUDACC__
#define BATCH_INVERSE_KERNELS(NAME, F)                                                                                    \
    extern "C" __global__ void NAME##_binv_up(const uint32_t* vals, uint32_t* pre, uint32_t M, uint32_t T, uint32_t* up) { \
        binv_up<F>(vals, pre, M, T, blockIdx.x * blockDim.x + threadIdx.x, up);                                          \
    }                                                                                                                      \
    extern "C" __global__ void NAME##_binv_top(uint32_t* vals, uint32_t* pre, uint32_t M, uint32_t T) {                   \
        binv_top<F>(vals, pre, M, T, blockIdx.x * blockDim.x + threadIdx.x);                                             \
    }                                                                                                                      \
    extern "C" __global__ void NAME##_binv_down(uint32_t* vals, const uint32_t* pre, uint32_t M, uint32_t T,              \
                                                const uint32_t* up) {                                                      \
        binv_down<F>(vals, pre, M, T, blockIdx.x * blockDim.x + threadIdx.x, up);                                        \
    }
#endif
