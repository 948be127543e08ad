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
