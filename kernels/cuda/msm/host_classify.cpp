// Host build of classify.cuh: msm_classify and msm_compact of scalars.cu run tile by tile, a
// tile's threads one after another between the barriers. tests/test_cuda_host_classify.py
// drives it (the tiles' exclusive offsets in between, as kernels/cuda/msm.py computes them).
#include "classify.cuh"

extern "C" {
void host_classify(const uint32_t* scalars, uint64_t n, uint8_t* cls, uint32_t* tile_counts) {
    uint32_t counts[CLASSIFY_THREADS];
    for (uint64_t tile = 0; tile * CLASSIFY_TILE < n; tile++) {
        for (uint32_t t = 0; t < CLASSIFY_THREADS; t++) msmc::classify_thread(scalars, n, cls, tile, t, counts);
        msmc::classify_total(counts, tile, tile_counts);
    }
}

void host_compact(const uint32_t* scalars, const uint8_t* cls, uint64_t n, const uint32_t* tile_off, uint32_t* ones,
                  uint32_t* others, uint32_t* canon) {
    uint32_t counts[CLASSIFY_THREADS];
    for (uint64_t tile = 0; tile * CLASSIFY_TILE < n; tile++) {
        for (uint32_t t = 0; t < CLASSIFY_THREADS; t++) msmc::compact_count(cls, n, tile, t, counts);
        msmc::compact_scan(counts);
        for (uint32_t t = 0; t < CLASSIFY_THREADS; t++)
            msmc::compact_write(scalars, cls, n, tile, t, counts, tile_off, ones, others, canon);
    }
}

void host_classify_pairs(const uint32_t* scalars, uint64_t n, uint8_t* cls, uint32_t* tile_counts) {
    uint32_t counts[CLASSIFY_THREADS];
    for (uint64_t tile = 0; tile * CLASSIFY_TILE < n; tile++) {
        for (uint32_t t = 0; t < CLASSIFY_THREADS; t++) msmc::classify_thread(scalars, n, cls, tile, t, counts);
        for (uint32_t t = 0; t < CLASSIFY_THREADS; t++) msmc::pair_count_thread(cls, n, tile, t, counts);
        msmc::classify_total(counts, tile, tile_counts);
    }
}

void host_compact_pairs(const uint32_t* scalars, const uint8_t* cls, uint64_t n, const uint32_t* tile_off,
                        uint32_t pair_base, uint32_t* ones, uint32_t* others, uint32_t* canon) {
    uint32_t counts[CLASSIFY_THREADS];
    for (uint64_t tile = 0; tile * CLASSIFY_TILE < n; tile++) {
        for (uint32_t t = 0; t < CLASSIFY_THREADS; t++) msmc::compact_count_pairs(cls, n, tile, t, counts);
        msmc::compact_scan(counts);
        for (uint32_t t = 0; t < CLASSIFY_THREADS; t++)
            msmc::compact_write_pairs(scalars, cls, n, tile, t, counts, tile_off, pair_base, ones, others, canon);
    }
}
}
