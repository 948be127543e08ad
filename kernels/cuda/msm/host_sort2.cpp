// Host build of sort2.cuh: msm_sort2_bin, msm_sort2_place and msm_sort2_place_flat run block by block, each phase's
// threads one after another between the barriers, blocks and threads in an order picked by
// `order` (0: first to last, 1: last to first, 2: odd ones, then even), so that a result that
// depended on the order of the reservations or of the shared atomics would be seen.
// tests/test_cuda_host_sort2.py drives it through kernels/cuda/msm_sort2.py.
#include "sort2.cuh"
#include "host_order.cuh"

extern "C" {
void host_msm_sort2_bin(uint32_t blocks, uint32_t threads, int order, const uint32_t* canon, const uint32_t* idx, uint32_t m,
                        int c, int w0, uint32_t nw, const uint32_t* wnb, const uint32_t* wplan, uint32_t* fill,
                        uint32_t* stage, uint64_t stride, uint32_t* count, uint32_t* overflow) {
    if (threads != SORT2_THREADS) return;  // the kernel's block is fixed: a wrong launch leaves no entries
    static sort2::BinShared s;
    static sort2::BinLane lanes[SORT2_THREADS];
    for (uint32_t bi = 0; bi < blocks; bi++) {
        const uint32_t blk = host_order(bi, blocks, order), g = blk % nw, tile = blk / nw;
        const sort2::BinArgs a = sort2::bin_args(canon, idx, m, c, w0, g, wnb, wplan, fill, stage, stride, count, overflow);
        for (uint32_t t = 0; t < SORT2_THREADS; t++) sort2::bin_clear(a, s, host_order(t, SORT2_THREADS, order));
        for (uint32_t t = 0; t < SORT2_THREADS; t++) {
            const uint32_t tid = host_order(t, SORT2_THREADS, order);
            sort2::bin_digits(a, s, tile, tid, lanes[tid]);
        }
        for (uint32_t t = 0; t < SORT2_THREADS; t++) sort2::bin_reserve(a, s, host_order(t, SORT2_THREADS, order));
        int i = 0;
        for (uint32_t d = 1; d < SORT2_THREADS; d <<= 1, i++)
            for (uint32_t t = 0; t < SORT2_THREADS; t++) sort2::bin_scan_step(s, host_order(t, SORT2_THREADS, order), d, i);
        for (uint32_t t = 0; t < SORT2_THREADS; t++) sort2::bin_group(a, s, lanes[host_order(t, SORT2_THREADS, order)]);
        for (uint32_t t = 0; t < SORT2_THREADS; t++) sort2::bin_write(a, s, host_order(t, SORT2_THREADS, order));
    }
}

void host_msm_sort2_place(uint32_t blocks, uint32_t threads, int order, const uint32_t* stage, const uint32_t* fill,
                          uint32_t bincap, uint32_t fb, uint32_t nb, uint32_t wbase, uint32_t wcap, uint32_t* count,
                          uint32_t* sorted, uint32_t* overflow) {
    if (fb > 13 || (1u << fb) > SORT2_FINE_MAX) return;  // the kernel's shared counters
    const sort2::PlaceArgs a{stage, fill, bincap, fb, nb, wbase, wcap, count, sorted, overflow, blocks, 1};
    static uint32_t cnt[SORT2_FINE_MAX];
    for (uint32_t bi = 0; bi < blocks; bi++) {
        const uint32_t bin = host_order(bi, blocks, order);
        for (uint32_t t = 0; t < threads; t++) sort2::place_clear(a, cnt, host_order(t, threads, order), threads);
        for (uint32_t t = 0; t < threads; t++) sort2::place_entries(a, cnt, bin, host_order(t, threads, order), threads);
        for (uint32_t t = 0; t < threads; t++) sort2::place_counts(a, cnt, bin, host_order(t, threads, order), threads);
    }
}

void host_msm_sort2_place_flat(uint32_t blocks, uint32_t threads, int order, const uint32_t* stage, const uint32_t* fill,
                               uint32_t bincap, uint32_t nbins, uint32_t stripes, uint32_t nb, uint32_t wbase, uint32_t wcap,
                               uint32_t* count, uint32_t* sorted, uint32_t* overflow) {
    const sort2::PlaceArgs a{stage, fill, bincap, 0, nb, wbase, wcap, count, sorted, overflow, nbins, stripes};
    for (uint32_t bi = 0; bi < blocks; bi++) {
        const uint32_t blk = host_order(bi, blocks, order);
        for (uint32_t t = 0; t < threads; t++) sort2::place_flat(a, blk, host_order(t, threads, order), threads);
    }
}
}
