// Host build of abc_rows.cuh: abc_rows_short and abc_rows_long of abc_eval.cu run block by block,
// a block's threads one after another between the barrier. tests/test_cuda_host_abc.py drives it.
#include "abc_rows.cuh"

static abcr::Matrix matrix(const uint32_t* rowptr, const int32_t* cols, const unsigned short* cidx, const uint32_t* coefs,
                           const uint8_t* bits, const uint8_t* general, const uint32_t* z) {
    const abcr::Matrix m = {rowptr, cols, cidx, coefs, bits, general, z};
    return m;
}

extern "C" {
void host_rows_short(const uint32_t* rowptr, const int32_t* cols, const unsigned short* cidx, const uint32_t* coefs,
                     const uint8_t* bits, const uint8_t* general, const uint32_t* z, uint32_t* out, uint64_t rows,
                     uint32_t long_len) {
    const abcr::Matrix m = matrix(rowptr, cols, cidx, coefs, bits, general, z);
    for (uint64_t r = 0; r < rows; r++) abcr::short_row(m, r, long_len, out);
}

void host_rows_long(const uint32_t* rowptr, const int32_t* cols, const unsigned short* cidx, const uint32_t* coefs,
                    const uint8_t* bits, const uint8_t* general, const uint32_t* z, uint32_t* out,
                    const uint32_t* long_rows, uint64_t nlong) {
    const abcr::Matrix m = matrix(rowptr, cols, cidx, coefs, bits, general, z);
    uint4 part[2 * ABC_LONG_THREADS];
    for (uint64_t b = 0; b * ABC_LONG_ROWS_PER_BLOCK < nlong; b++) {
        for (uint32_t t = 0; t < ABC_LONG_THREADS; t++) abcr::long_partial(m, long_rows, nlong, b, t, part);
        for (uint32_t t = 0; t < ABC_LONG_THREADS; t++) abcr::long_total(long_rows, nlong, b, t, part, out);
    }
}
}
