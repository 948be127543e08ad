// Sparse matrix-vector products over Fr from a compact resident form, for a = A·z, b = B·z,
// c = C·z on the device. The layout (engine/groth16/compact.py builds it):
//   rowptr uint32[rows + 1], cols int32[nnz], cidx uint16[nnz] (index into coefs),
//   coefs Fr[k] (Montgomery, 8 words each; entry 0 is +1 and entry 1 is -1);
// the vector arrives as two bitmaps over its n entries (bits: the value of a 0/1 entry;
// general: the entry is neither 0 nor 1) plus the general entries' indices and values, and is
// expanded into the full z here (the MSMs read z anyway). A 0/1 entry adds its coefficient or
// nothing; a general one is added, subtracted or multiplied. Sums of canonical field values do
// not depend on the order of the terms, so the result is the CPU reference's bit for bit.
#include "../ff/bls12_381.cuh"
#include "abc_rows.cuh"

__device__ __forceinline__ unsigned bit_at(const uint8_t* m, uint64_t i) {
    return (m[i >> 3] >> (i & 7)) & 1u;
}

extern "C" {
// z[i] = 1 where the value bit is set, else 0 (general entries are written by abc_scatter after).
__global__ void abc_expand(const uint8_t* bits, uint32_t* z, uint64_t n) {
    uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    (bit_at(bits, i) ? Fr::one() : Fr::zero()).store(z + i * 8);
}

// z[gidx[j]] = gval[j] for the g general entries.
__global__ void abc_scatter(const int32_t* gidx, const uint32_t* gval, uint32_t* z, uint64_t g) {
    uint64_t j = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= g) return;
    uint32_t* dst = z + (uint64_t)gidx[j] * 8;
    UNROLL for (int w = 0; w < 8; w++) dst[w] = gval[j * 8 + w];
}

// out[r] = sum over the row's nonzeros of coef * z[col], one thread per row.
__global__ void abc_rows(const uint32_t* rowptr, const int32_t* cols, const unsigned short* cidx,
                         const uint32_t* coefs, const uint8_t* bits, const uint8_t* general,
                         const uint32_t* z, uint32_t* out, uint64_t rows) {
    uint64_t r = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    Fr acc = Fr::zero();
    for (uint32_t k = rowptr[r], end = rowptr[r + 1]; k < end; k++) {
        uint64_t col = (uint32_t)cols[k];
        unsigned ci = cidx[k];
        if (bit_at(general, col)) {
            Fr v = Fr::load(z + col * 8);
            if (ci == 0) acc = acc + v;
            else if (ci == 1) acc = acc - v;
            else acc = acc + Fr::load(coefs + (uint64_t)ci * 8) * v;
        } else if (bit_at(bits, col)) {
            acc = acc + Fr::load(coefs + (uint64_t)ci * 8);
        }
    }
    acc.store(out + r * 8);
}

// The "split" way (abc_rows.cuh): rows of at most long_len nonzeros, one thread each (longer
// rows are left to abc_rows_long), values written with 16-byte stores.
__global__ void abc_rows_short(const uint32_t* rowptr, const int32_t* cols, const unsigned short* cidx,
                               const uint32_t* coefs, const uint8_t* bits, const uint8_t* general,
                               const uint32_t* z, uint32_t* out, uint64_t rows, uint32_t long_len) {
    uint64_t r = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    const abcr::Matrix m = {rowptr, cols, cidx, coefs, bits, general, z};
    abcr::short_row(m, r, long_len, out);
}

// The rows longer than long_len (their numbers in long_rows), one warp each.
__global__ void __launch_bounds__(ABC_LONG_THREADS) abc_rows_long(const uint32_t* rowptr, const int32_t* cols,
                               const unsigned short* cidx, const uint32_t* coefs, const uint8_t* bits,
                               const uint8_t* general, const uint32_t* z, uint32_t* out,
                               const uint32_t* long_rows, uint64_t nlong) {
    __shared__ uint4 part[2 * ABC_LONG_THREADS];
    const abcr::Matrix m = {rowptr, cols, cidx, coefs, bits, general, z};
    abcr::long_partial(m, long_rows, nlong, blockIdx.x, threadIdx.x, part);
    __syncthreads();
    abcr::long_total(long_rows, nlong, blockIdx.x, threadIdx.x, part, out);
}

// abc_expand with 16-byte stores.
__global__ void abc_expand16(const uint8_t* bits, uint32_t* z, uint64_t n) {
    uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    abcr::store16(z + i * 8, abcr::bit(bits, i) ? Fr::one() : Fr::zero());
}
}
