// Host stand-ins for the CUDA built-ins that the kernels' phase functions use (ntt/ntt_pass.cuh,
// msm/classify.cuh, abc/abc_rows.cuh), so that their host builds run the same code; nothing
// under NVRTC. A header of its own, so the sources of the modules that do not include it (and
// with them CuPy's cache keys) stay as they were.
#pragma once
#include "common.cuh"

#ifndef __CUDACC__
struct uint4 { uint32_t x, y, z, w; };
inline uint4 make_uint4(uint32_t x, uint32_t y, uint32_t z, uint32_t w) { uint4 r = {x, y, z, w}; return r; }
inline uint4 __ldg(const uint4* p) { return *p; }
inline uint64_t __brevll(uint64_t x) {
    uint64_t r = 0;
    for (int i = 0; i < 64; i++) r |= ((x >> i) & 1ull) << (63 - i);
    return r;
}
#endif
