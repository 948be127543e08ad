// Portable basics shared by every CUDA source of sealtop.
//
// The same headers compile two ways:
//   * under NVRTC (cupy.RawModule) for the GPU, where __CUDACC__ is defined;
//   * under a plain C++ compiler for the host self-test (tests/test_cuda_host_ff.py), where the
//     CUDA qualifiers below expand to nothing. That lets the field and curve formulas be checked
//     against Python integers on a machine without a GPU.
// NVRTC has no standard headers, so the fixed-width types are declared here.
#pragma once

#ifdef __CUDACC__
#define HD __device__ __forceinline__
#define HD_NOINLINE __device__ __noinline__
#define CONSTANT __constant__
#define UNROLL _Pragma("unroll")
#else
#include <stdint.h>
#define HD inline
#define HD_NOINLINE inline
#define CONSTANT static const
#define UNROLL
#endif

#if defined(__CUDACC_RTC__)
typedef unsigned int uint32_t;
typedef unsigned long long uint64_t;
typedef int int32_t;
typedef long long int64_t;
typedef unsigned char uint8_t;
#elif defined(__CUDACC__)
#include <stdint.h>
#endif

#ifndef __CUDACC__
// Host stand-ins for the CUDA built-ins the kernels' phase functions use (ntt_pass.cuh,
// msm/classify.cuh), so their host builds run the same code.
struct uint4 { uint32_t x, y, z, w; };
inline uint4 make_uint4(uint32_t x, uint32_t y, uint32_t z, uint32_t w) { uint4 r = {x, y, z, w}; return r; }
inline uint4 __ldg(const uint4* p) { return *p; }
inline uint64_t __brevll(uint64_t x) {
    uint64_t r = 0;
    for (int i = 0; i < 64; i++) r |= ((x >> i) & 1ull) << (63 - i);
    return r;
}
#endif
