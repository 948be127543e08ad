// Host build of glv.cuh: the split of each scalar and the endomorphism of each point, one after
// another. tests/test_cuda_host_glv.py drives it.
#include "glv.cuh"

extern "C" {
void host_glv_split(const uint32_t* s, uint64_t n, uint32_t* s1, uint32_t* s2) {
    for (uint64_t i = 0; i < n; i++) glv::split(s + 8 * i, s1 + 8 * i, s2 + 8 * i);
}
void host_endo(const uint32_t* points, uint64_t n, uint32_t* out) {
    for (uint64_t i = 0; i < n; i++) glv::endo_point(points + 24 * i, out + 24 * i);
}
}
