// A sorted entry's point, one coordinate at a time: what the bucket accumulations (batch_affine.cuh,
// rounds.cuh) read for an entry v of the sort (point index in bits 0..30, bit 31 set for a
// negative digit). Plain HD code (host_cuda.cuh supplies __ldg and uint4 to the host build).
#pragma once
#include "../ff/bls12_381.cuh"
#include "../ff/host_cuda.cuh"

// One coordinate (0: x, 1: y) of point (v & 0x7fffffff), y negated when bit 31 is set; 16-byte
// loads (rows are 96 or 192 bytes, so 16-byte aligned).
template <class F>
HD F entry_coord(const uint32_t* points, uint32_t v, int which) {
    uint32_t w[F::WORDS];
    const uint4* q = reinterpret_cast<const uint4*>(points + (uint64_t)(v & 0x7fffffffu) * (2 * F::WORDS) + which * F::WORDS);
    UNROLL for (int i = 0; i < F::WORDS / 4; i++) {
        const uint4 t = __ldg(q + i);
        w[4 * i] = t.x; w[4 * i + 1] = t.y; w[4 * i + 2] = t.z; w[4 * i + 3] = t.w;
    }
    const F r = F::load(w);
    return (which == 1 && (v >> 31)) ? r.neg() : r;
}
