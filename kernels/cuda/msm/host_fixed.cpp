// Host build of fixed_base.cuh: the table entries one after another, and the multiplication's
// (or the pair table's) threads one after another (they share nothing, so the order does not
// matter).
// tests/test_cuda_host_fixed.py drives it.
#include "../ff/host_cuda.cuh"
#include "fixed_base.cuh"

template <class F>
static void host_table(const uint32_t* base, int c, int nwin, uint32_t* table) {
    for (uint32_t e = 0; e < ((uint32_t)nwin << (c - 1)); e++) fixedb::table_entry<F>(base, c, e, table);
}

template <class F>
static void host_mul(const uint32_t* table, int c, int nwin, const uint32_t* scalars, uint64_t n, uint64_t T, uint32_t K,
                     uint32_t* out, uint32_t* scratch) {
    for (uint64_t t = 0; t < T; t++) fixedb::mul_thread<F>(table, c, nwin, scalars, n, t, T, K, out, scratch);
}

template <class F>
static void host_pairs(const uint32_t* points, uint64_t npairs, uint64_t T, uint32_t K, uint32_t* out, uint32_t* scratch) {
    for (uint64_t t = 0; t < T; t++) fixedb::pair_thread<F>(points, npairs, t, T, K, out, scratch);
}

extern "C" {
void g1_table(const uint32_t* base, int c, int nwin, uint32_t* table) { host_table<Fp>(base, c, nwin, table); }
void g2_table(const uint32_t* base, int c, int nwin, uint32_t* table) { host_table<Fp2>(base, c, nwin, table); }
void g1_mul(const uint32_t* table, int c, int nwin, const uint32_t* s, uint64_t n, uint64_t T, uint32_t K, uint32_t* out,
            uint32_t* scratch) { host_mul<Fp>(table, c, nwin, s, n, T, K, out, scratch); }
void g2_mul(const uint32_t* table, int c, int nwin, const uint32_t* s, uint64_t n, uint64_t T, uint32_t K, uint32_t* out,
            uint32_t* scratch) { host_mul<Fp2>(table, c, nwin, s, n, T, K, out, scratch); }
void g1_pairs(const uint32_t* p, uint64_t npairs, uint64_t T, uint32_t K, uint32_t* out, uint32_t* scratch) {
    host_pairs<Fp>(p, npairs, T, K, out, scratch);
}
void g2_pairs(const uint32_t* p, uint64_t npairs, uint64_t T, uint32_t K, uint32_t* out, uint32_t* scratch) {
    host_pairs<Fp2>(p, npairs, T, K, out, scratch);
}
}
