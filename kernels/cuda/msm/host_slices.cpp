// Host build of slices.cuh: the window-slice kernel played as a loop over its threads in an order
// picked by `order` (host_order.cuh). tests/test_cuda_host_slices.py runs one level and two
// against arkworks.
#include "slices.cuh"
#include "host_order.cuh"

extern "C" {
void host_g1_slices(uint32_t nthreads, int order, const uint32_t* rows, const uint32_t* count, const uint32_t* item_off,
                    uint32_t L, uint32_t half, uint32_t nseg, uint32_t flags, uint32_t scale, uint32_t ostride,
                    uint32_t* out, uint32_t* out_s) {
    for (uint32_t i = 0; i < nthreads; i++)
        slice_sum<Fp>(host_order(i, nthreads, order), rows, count, item_off, L, half, nseg, flags, scale, ostride, out, out_s);
}
}
