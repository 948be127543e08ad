// The MSM's scalars split by value in two passes, as lists (the "list" way of kernels/cuda/msm.py):
//   classify  one class byte per scalar, read off its Montgomery words (0: all zero, 1: exactly
//             R mod r, 2: anything else), and per tile of TILE scalars the count of ones and of
//             others; no multiplication (a PoRep witness is about 99.9% 0/1);
//   compact   from the tiles' exclusive offsets, the indices of the ones and of the others in
//             ascending order, and the canonical integer of each other scalar beside its index
//             (canon[k] for others[k]: the only from-Montgomery products, read by Pippenger's
//             sort; m rows, not n, and read in order).
// A scalar whose words are not exactly 0 or R (a non-canonical form of 0 or 1) is an "other":
// Pippenger then sums it by its canonical value, so the result does not depend on the class.
// Written as per-thread phases between barriers (like ntt_pass.cuh) so that, built for the host,
// tests/test_cuda_host_classify.py runs the same code block by block.
#pragma once
#include "../ff/bls12_381.cuh"
#include "../ff/host_cuda.cuh"

#define CLASSIFY_THREADS 256
#define CLASSIFY_PER 16
#define CLASSIFY_TILE (CLASSIFY_THREADS * CLASSIFY_PER)

namespace msmc {

HD uint32_t class_of(const uint32_t* s) {
    const uint4* q = reinterpret_cast<const uint4*>(s);
    const uint4 a = q[0], b = q[1];
    const uint32_t w[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
    uint32_t any = 0, not_one = 0;
    UNROLL for (int k = 0; k < 8; k++) {
        any |= w[k];
        not_one |= w[k] ^ FrParams::one(k);
    }
    return any == 0 ? 0u : (not_one == 0 ? 1u : 2u);
}

// Phase 1 of classify: thread tid of tile `tile` classes the tile's elements tile * TILE + tid
// + j * THREADS (j < PER: consecutive threads read consecutive scalars), writes their class
// bytes and leaves its counts of ones and others in counts[tid] = ones | others << 16.
HD void classify_thread(const uint32_t* scalars, uint64_t n, uint8_t* cls, uint64_t tile, uint32_t tid, uint32_t* counts) {
    uint32_t ones = 0, others = 0;
    for (int j = 0; j < CLASSIFY_PER; j++) {
        const uint64_t i = tile * CLASSIFY_TILE + tid + (uint64_t)j * CLASSIFY_THREADS;
        if (i >= n) break;
        const uint32_t c = class_of(scalars + i * 8);
        cls[i] = (uint8_t)c;
        ones += c == 1;
        others += c == 2;
    }
    counts[tid] = ones | (others << 16);
}

// Phase 2 of classify (thread 0): the tile's totals.
HD void classify_total(const uint32_t* counts, uint64_t tile, uint32_t* tile_counts) {
    uint32_t ones = 0, others = 0;
    for (int t = 0; t < CLASSIFY_THREADS; t++) {
        ones += counts[t] & 0xffffu;
        others += counts[t] >> 16;
    }
    tile_counts[2 * tile] = ones;
    tile_counts[2 * tile + 1] = others;
}

// Phase 1 of compact: thread tid takes the tile's CLASSIFY_PER consecutive elements from
// tile * TILE + tid * PER and counts its ones and others into counts[tid].
HD void compact_count(const uint8_t* cls, uint64_t n, uint64_t tile, uint32_t tid, uint32_t* counts) {
    uint32_t ones = 0, others = 0;
    const uint64_t i0 = tile * CLASSIFY_TILE + (uint64_t)tid * CLASSIFY_PER;
    for (int j = 0; j < CLASSIFY_PER; j++) {
        if (i0 + j >= n) break;
        ones += cls[i0 + j] == 1;
        others += cls[i0 + j] == 2;
    }
    counts[tid] = ones | (others << 16);
}

// Phase 2 of compact (thread 0): counts[] becomes its exclusive prefix sums, per kind.
HD void compact_scan(uint32_t* counts) {
    uint32_t acc = 0;
    for (int t = 0; t < CLASSIFY_THREADS; t++) {
        const uint32_t c = counts[t];
        counts[t] = acc;
        acc += c;  // both halves stay below 2^16: a tile holds 4096 elements
    }
}

// Phase 3 of compact: the thread writes its indices at the tile's offsets plus its prefix, and
// the canonical value of each other scalar at its slot in the others' list.
HD void compact_write(const uint32_t* scalars, const uint8_t* cls, uint64_t n, uint64_t tile, uint32_t tid,
                      const uint32_t* counts, const uint32_t* tile_off, uint32_t* ones, uint32_t* others, uint32_t* canon) {
    uint32_t o1 = tile_off[2 * tile] + (counts[tid] & 0xffffu);
    uint32_t o2 = tile_off[2 * tile + 1] + (counts[tid] >> 16);
    const uint64_t i0 = tile * CLASSIFY_TILE + (uint64_t)tid * CLASSIFY_PER;
    for (int j = 0; j < CLASSIFY_PER; j++) {
        const uint64_t i = i0 + j;
        if (i >= n) break;
        const uint8_t c = cls[i];
        if (c == 1) ones[o1++] = (uint32_t)i;
        if (c == 2) {
            Fr::load(scalars + i * 8).from_mont().store(canon + (uint64_t)o2 * 8);
            others[o2++] = (uint32_t)i;
        }
    }
}

// ---- pairs -----------------------------------------------------------------------------------
// With a pair table (the query's points followed by P_2j + P_(2j+1) for every j, from row
// pair_base: kernels/cuda/pairs.py), scalars 2j and 2j+1 that are both 0 or 1 take one entry of
// the ones' list between them: 2j, 2j + 1 or pair_base + j, or none for two zeros. A pair
// holding an other lists its 0/1 member alone. The pair is counted and written by whoever holds
// its even member: classify's thread (whose elements are strided) after a barrier reads the odd
// member's class from cls; compact's thread holds whole pairs (CLASSIFY_PER is even).

// The ones' list entries of the pair whose even member is i (classes c0, c1; c1 = 0 past n).
HD uint32_t pair_entries(uint32_t c0, uint32_t c1) {
    return (c0 < 2 && c1 < 2) ? (uint32_t)((c0 | c1) != 0) : (uint32_t)(c0 == 1) + (uint32_t)(c1 == 1);
}

// Phase 2 of classify with pairs (after classify_thread and a barrier): the thread's count of
// ones becomes the count of list entries of the pairs whose even member it holds.
HD void pair_count_thread(const uint8_t* cls, uint64_t n, uint64_t tile, uint32_t tid, uint32_t* counts) {
    uint32_t entries = 0;
    for (int j = 0; j < CLASSIFY_PER; j++) {
        const uint64_t i = tile * CLASSIFY_TILE + tid + (uint64_t)j * CLASSIFY_THREADS;
        if (i >= n) break;
        if (i & 1) continue;
        entries += pair_entries(cls[i], i + 1 < n ? cls[i + 1] : 0u);
    }
    counts[tid] = entries | (counts[tid] & 0xffff0000u);
}

// Phase 1 of compact with pairs: as compact_count, the ones counted as list entries.
HD void compact_count_pairs(const uint8_t* cls, uint64_t n, uint64_t tile, uint32_t tid, uint32_t* counts) {
    uint32_t entries = 0, others = 0;
    const uint64_t i0 = tile * CLASSIFY_TILE + (uint64_t)tid * CLASSIFY_PER;
    for (int j = 0; j < CLASSIFY_PER; j += 2) {
        if (i0 + j >= n) break;
        const uint32_t c0 = cls[i0 + j], c1 = i0 + j + 1 < n ? cls[i0 + j + 1] : 0u;
        entries += pair_entries(c0, c1);
        others += (c0 == 2) + (c1 == 2);
    }
    counts[tid] = entries | (others << 16);
}

// Phase 3 of compact with pairs: the list entries (ascending by pair) and the others as before.
HD void compact_write_pairs(const uint32_t* scalars, const uint8_t* cls, uint64_t n, uint64_t tile, uint32_t tid,
                            const uint32_t* counts, const uint32_t* tile_off, uint32_t pair_base, uint32_t* ones,
                            uint32_t* others, uint32_t* canon) {
    uint32_t o1 = tile_off[2 * tile] + (counts[tid] & 0xffffu);
    uint32_t o2 = tile_off[2 * tile + 1] + (counts[tid] >> 16);
    const uint64_t i0 = tile * CLASSIFY_TILE + (uint64_t)tid * CLASSIFY_PER;
    for (int j = 0; j < CLASSIFY_PER; j += 2) {
        const uint64_t i = i0 + j;
        if (i >= n) break;
        const uint32_t c0 = cls[i], c1 = i + 1 < n ? cls[i + 1] : 0u;
        if (c0 < 2 && c1 < 2) {
            if (c0 && c1) ones[o1++] = pair_base + (uint32_t)(i >> 1);
            else if (c0) ones[o1++] = (uint32_t)i;
            else if (c1) ones[o1++] = (uint32_t)(i + 1);
            continue;
        }
        for (int h = 0; h < 2 && i + h < n; h++) {
            const uint32_t c = h ? c1 : c0;
            if (c == 1) ones[o1++] = (uint32_t)(i + h);
            if (c == 2) {
                Fr::load(scalars + (i + h) * 8).from_mont().store(canon + (uint64_t)o2 * 8);
                others[o2++] = (uint32_t)(i + h);
            }
        }
    }
}

}  // namespace msmc
