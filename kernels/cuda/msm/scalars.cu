// The MSM's scalars split into lists of ones and others (classify.cuh), a module of its own: it
// does not depend on the group and compiles in seconds.
#include "classify.cuh"

extern "C" {
// One block a tile (CLASSIFY_TILE scalars): class bytes and the tile's counts of ones and others.
__global__ void __launch_bounds__(CLASSIFY_THREADS) msm_classify(const uint32_t* scalars, uint64_t n, uint8_t* cls,
                                                                 uint32_t* tile_counts) {
    __shared__ uint32_t counts[CLASSIFY_THREADS];
    msmc::classify_thread(scalars, n, cls, blockIdx.x, threadIdx.x, counts);
    __syncthreads();
    if (threadIdx.x == 0) msmc::classify_total(counts, blockIdx.x, tile_counts);
}

// One block a tile: the indices of its ones and others at the tiles' exclusive offsets
// (tile_off), ascending, and the canonical form of every other scalar at its index in canon.
__global__ void __launch_bounds__(CLASSIFY_THREADS) msm_compact(const uint32_t* scalars, const uint8_t* cls, uint64_t n,
                                                                const uint32_t* tile_off, uint32_t* ones, uint32_t* others,
                                                                uint32_t* canon) {
    __shared__ uint32_t counts[CLASSIFY_THREADS];
    msmc::compact_count(cls, n, blockIdx.x, threadIdx.x, counts);
    __syncthreads();
    if (threadIdx.x == 0) msmc::compact_scan(counts);
    __syncthreads();
    msmc::compact_write(scalars, cls, n, blockIdx.x, threadIdx.x, counts, tile_off, ones, others, canon);
}

// As msm_classify, the ones counted as the pairs' list entries (classify.cuh, "pairs").
__global__ void __launch_bounds__(CLASSIFY_THREADS) msm_classify_pairs(const uint32_t* scalars, uint64_t n, uint8_t* cls,
                                                                       uint32_t* tile_counts) {
    __shared__ uint32_t counts[CLASSIFY_THREADS];
    msmc::classify_thread(scalars, n, cls, blockIdx.x, threadIdx.x, counts);
    __syncthreads();  // the odd members' classes, written by the neighbouring threads
    msmc::pair_count_thread(cls, n, blockIdx.x, threadIdx.x, counts);
    __syncthreads();
    if (threadIdx.x == 0) msmc::classify_total(counts, blockIdx.x, tile_counts);
}

// As msm_compact, the ones' list by pairs: pair_base + j for scalars 2j and 2j + 1 both 1.
__global__ void __launch_bounds__(CLASSIFY_THREADS) msm_compact_pairs(const uint32_t* scalars, const uint8_t* cls,
                                                                      uint64_t n, const uint32_t* tile_off,
                                                                      uint32_t pair_base, uint32_t* ones,
                                                                      uint32_t* others, uint32_t* canon) {
    __shared__ uint32_t counts[CLASSIFY_THREADS];
    msmc::compact_count_pairs(cls, n, blockIdx.x, threadIdx.x, counts);
    __syncthreads();
    if (threadIdx.x == 0) msmc::compact_scan(counts);
    __syncthreads();
    msmc::compact_write_pairs(scalars, cls, n, blockIdx.x, threadIdx.x, counts, tile_off, pair_base, ones, others, canon);
}
}
