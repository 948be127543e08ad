// PTX carry-chain primitives for multi-word arithmetic on the GPU.
//
// Each wrapper is one PTX instruction. The ".cc" forms write the carry flag and the "c" forms read
// it, so a chain (add_cc, addc_cc, ..., addc) must run without another flag-setting instruction
// in between: every wrapper is `asm volatile`, which keeps the compiler from reordering them
// against each other, and the compiler itself emits no ".cc" instructions for ordinary code.
// The portable C++ formulas in mont.cuh stay the reference (host self-test, SEALTOP_PTX_FF=0).
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

#undef SEALTOP_PTX2
#undef SEALTOP_PTX3
}  // namespace ptx
#endif
