// PTX carry-chain primitives for multi-word arithmetic on the GPU.
//
// Each wrapper is one PTX instruction. The ".cc" forms write the carry flag and the "c" forms read
// it, so a chain (add_cc, addc_cc, ..., addc) must run without another flag-setting instruction
// in between: every wrapper is `asm volatile`, which keeps the compiler from reordering them
// against each other, and the compiler itself emits no ".cc" instructions for ordinary code.
//
// SEALTOP_PTX_FF=1 on the host (the self-test, tests/test_cuda_host_ff.py) builds the same
// wrappers as plain C++ over one carry flag, so the exact instruction sequences of mont.cuh's
// PTX path are checked against Python integers without a GPU. The portable C++ formulas in
// mont.cuh (SEALTOP_PTX_FF=0) stay the independent second implementation.
#pragma once
#include "common.cuh"

#ifndef SEALTOP_PTX_FF
#if defined(__CUDA_ARCH__)
#define SEALTOP_PTX_FF 1
#else
#define SEALTOP_PTX_FF 0
#endif
#endif

#if SEALTOP_PTX_FF
namespace ptx {

#if defined(__CUDA_ARCH__)
#define SEALTOP_PTX2(name, op)                                                   \
    __device__ __forceinline__ uint32_t name(uint32_t a, uint32_t b) {           \
        uint32_t r;                                                              \
        asm volatile(op " %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));              \
        return r;                                                                \
    }
#define SEALTOP_PTX3(name, op)                                                   \
    __device__ __forceinline__ uint32_t name(uint32_t a, uint32_t b, uint32_t c) { \
        uint32_t r;                                                              \
        asm volatile(op " %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(c));  \
        return r;                                                                \
    }

SEALTOP_PTX2(add_cc, "add.cc.u32")
SEALTOP_PTX2(addc_cc, "addc.cc.u32")
SEALTOP_PTX2(addc, "addc.u32")
SEALTOP_PTX2(sub_cc, "sub.cc.u32")
SEALTOP_PTX2(subc_cc, "subc.cc.u32")
SEALTOP_PTX2(subc, "subc.u32")
SEALTOP_PTX3(mad_lo_cc, "mad.lo.cc.u32")
SEALTOP_PTX3(madc_lo_cc, "madc.lo.cc.u32")
SEALTOP_PTX3(mad_hi_cc, "mad.hi.cc.u32")
SEALTOP_PTX3(madc_hi_cc, "madc.hi.cc.u32")
SEALTOP_PTX3(madc_hi, "madc.hi.u32")
SEALTOP_PTX3(madc_lo, "madc.lo.u32")

#undef SEALTOP_PTX2
#undef SEALTOP_PTX3
#else
// Host model: the carry flag of one thread. `cc` forms write it, `c` forms read it, as in PTX
// (a borrow is the flag's complement for sub: PTX's sub.cc sets CC.CF to the borrow).
static uint32_t cf;
inline uint32_t put(uint64_t s) { cf = (uint32_t)(s >> 32) & 1; return (uint32_t)s; }
inline uint32_t add_cc(uint32_t a, uint32_t b) { return put((uint64_t)a + b); }
inline uint32_t addc_cc(uint32_t a, uint32_t b) { return put((uint64_t)a + b + cf); }
inline uint32_t addc(uint32_t a, uint32_t b) { return (uint32_t)((uint64_t)a + b + cf); }
inline uint32_t sub_cc(uint32_t a, uint32_t b) { uint64_t d = (uint64_t)a - b; cf = (uint32_t)(d >> 63); return (uint32_t)d; }
inline uint32_t subc_cc(uint32_t a, uint32_t b) { uint64_t d = (uint64_t)a - b - cf; cf = (uint32_t)(d >> 63); return (uint32_t)d; }
inline uint32_t subc(uint32_t a, uint32_t b) { return (uint32_t)((uint64_t)a - b - cf); }
inline uint32_t lo(uint32_t a, uint32_t b) { return (uint32_t)((uint64_t)a * b); }
inline uint32_t hi(uint32_t a, uint32_t b) { return (uint32_t)(((uint64_t)a * b) >> 32); }
inline uint32_t mad_lo_cc(uint32_t a, uint32_t b, uint32_t c) { return put((uint64_t)lo(a, b) + c); }
inline uint32_t madc_lo_cc(uint32_t a, uint32_t b, uint32_t c) { return put((uint64_t)lo(a, b) + c + cf); }
inline uint32_t mad_hi_cc(uint32_t a, uint32_t b, uint32_t c) { return put((uint64_t)hi(a, b) + c); }
inline uint32_t madc_hi_cc(uint32_t a, uint32_t b, uint32_t c) { return put((uint64_t)hi(a, b) + c + cf); }
inline uint32_t madc_hi(uint32_t a, uint32_t b, uint32_t c) { return (uint32_t)((uint64_t)hi(a, b) + c + cf); }
inline uint32_t madc_lo(uint32_t a, uint32_t b, uint32_t c) { return (uint32_t)((uint64_t)lo(a, b) + c + cf); }
#endif
}  // namespace ptx
#endif
