// Rows of A z, B z, C z split by length (the "split" way of kernels/cuda/abc.py): a row of at
// most `long_len` nonzeros is one thread's, a longer one a warp's. With one thread per row, a warp
// takes as long as its longest row: on porep `medium` that is 6.7 (A) and 12.2 (C) times the mean
// work (the packing rows, sums of up to 255 bits, among rows of 1 to 3 nonzeros), so the long rows
// go to a kernel where a warp's lanes share a row and then add up their partial sums. Values are
// written with 16-byte stores. Written as per-thread phases (as ntt_pass.cuh) so that, built for
// the host, tests/test_cuda_host_abc.py runs the same code block by block.
#pragma once
#include "../ff/bls12_381.cuh"
#include "../ff/host_cuda.cuh"

#define ABC_LONG_THREADS 256
#define ABC_LONG_ROWS_PER_BLOCK (ABC_LONG_THREADS / 32)

namespace abcr {

HD unsigned bit(const uint8_t* m, uint64_t i) { return (m[i >> 3] >> (i & 7)) & 1u; }

HD Fr load16(const uint32_t* p) {
    const uint4* q = reinterpret_cast<const uint4*>(p);
    const uint4 a = q[0], b = q[1];
    Fr r;
    r.v[0] = a.x; r.v[1] = a.y; r.v[2] = a.z; r.v[3] = a.w;
    r.v[4] = b.x; r.v[5] = b.y; r.v[6] = b.z; r.v[7] = b.w;
    return r;
}

HD void store16(uint32_t* p, const Fr& r) {
    uint4* q = reinterpret_cast<uint4*>(p);
    q[0] = make_uint4(r.v[0], r.v[1], r.v[2], r.v[3]);
    q[1] = make_uint4(r.v[4], r.v[5], r.v[6], r.v[7]);
}

struct Matrix {
    const uint32_t* rowptr;
    const int32_t* cols;
    const unsigned short* cidx;
    const uint32_t* coefs;
    const uint8_t* bits;
    const uint8_t* general;
    const uint32_t* z;
};

// acc += coef * z[col] for nonzeros k = from, from + step, ... < to: a 0/1 entry adds its
// coefficient or nothing; a general one is added, subtracted or multiplied (coefficient index 0
// is +1, 1 is -1).
HD Fr terms(const Matrix& m, uint32_t from, uint32_t to, uint32_t step) {
    Fr acc = Fr::zero();
    for (uint32_t k = from; k < to; k += step) {
        const uint64_t col = (uint32_t)m.cols[k];
        const unsigned ci = m.cidx[k];
        if (bit(m.general, col)) {
            const Fr v = load16(m.z + col * 8);
            if (ci == 0) acc = acc + v;
            else if (ci == 1) acc = acc - v;
            else acc = acc + load16(m.coefs + (uint64_t)ci * 8) * v;
        } else if (bit(m.bits, col)) {
            acc = acc + load16(m.coefs + (uint64_t)ci * 8);
        }
    }
    return acc;
}

// Thread r of the short kernel: row r unless it is longer than long_len (the long kernel's).
HD void short_row(const Matrix& m, uint64_t r, uint32_t long_len, uint32_t* out) {
    const uint32_t begin = m.rowptr[r], end = m.rowptr[r + 1];
    if (end - begin > long_len) return;
    store16(out + r * 8, terms(m, begin, end, 1));
}

// Phase 1 of the long kernel: lane `lane` of the warp for long row `slot` of the block's
// (long_rows[block * ROWS_PER_BLOCK + warp]) leaves its partial sum in part[tid].
HD void long_partial(const Matrix& m, const uint32_t* long_rows, uint64_t nlong, uint64_t block, uint32_t tid, uint4* part) {
    const uint64_t j = block * ABC_LONG_ROWS_PER_BLOCK + tid / 32;
    Fr acc = Fr::zero();
    if (j < nlong) {
        const uint32_t r = long_rows[j];
        acc = terms(m, m.rowptr[r] + tid % 32, m.rowptr[r + 1], 32);
    }
    part[2 * tid] = make_uint4(acc.v[0], acc.v[1], acc.v[2], acc.v[3]);
    part[2 * tid + 1] = make_uint4(acc.v[4], acc.v[5], acc.v[6], acc.v[7]);
}

// Phase 2 (lane 0 of each warp): the row's value, the sum of its lanes' partial sums.
HD void long_total(const uint32_t* long_rows, uint64_t nlong, uint64_t block, uint32_t tid, const uint4* part, uint32_t* out) {
    const uint64_t j = block * ABC_LONG_ROWS_PER_BLOCK + tid / 32;
    if (tid % 32 != 0 || j >= nlong) return;
    Fr acc = Fr::zero();
    for (uint32_t l = 0; l < 32; l++) acc = acc + load16(reinterpret_cast<const uint32_t*>(part + 2 * (tid + l)));
    store16(out + (uint64_t)long_rows[j] * 8, acc);
}

}  // namespace abcr
