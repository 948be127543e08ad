// Host build of rounds.cuh and ff/batch_inverse.cuh: each kernel as a loop over its threads, in
// an order picked by `order` (0: first to last, 1: last to first, 2: odd threads, then even), so
// a pass that depended on its threads' order would be seen. tests/test_cuda_host_rounds.py runs
// kernels/cuda/msm_rounds.py's rounds with these standing in for the device kernels, also built
// with rounds.cuh's build variants (-DROUNDS_PREFETCH=1, ROUNDS_PREFETCH_DIST: the slots' entries
// read ahead).
#include "rounds.cuh"
#include "host_order.cuh"

#define HOST_ROUNDS(G, F, KIND, FIN, STEP)                                                                           \
    void host_##G##_rounds_##KIND(uint32_t nthreads, int order, ROUNDS_HOST_PARAMS) {                                  \
        const RoundsArgs a{points, sorted, start, item, acc, pref, ent, state, prod, partial, ns, NT, r, nvisit, ncont, flags}; \
        for (uint32_t i = 0; i < nthreads; i++) rounds_thread<F, FIN, STEP>(a, host_order(i, nthreads, order));        \
    }
#define ROUNDS_HOST_PARAMS                                                                                           \
    const uint32_t *points, const uint32_t *sorted, const uint32_t *start, const uint32_t *item, uint32_t *acc,      \
        uint32_t *pref, uint32_t *ent, uint8_t *state, uint32_t *prod, uint32_t *partial, uint32_t ns, uint32_t NT, \
        uint32_t r, uint32_t nvisit, uint32_t ncont, uint32_t flags

#define HOST_BINV(NAME, F)                                                                                            \
    void host_##NAME##_binv_up(uint32_t nthreads, int order, const uint32_t* vals, uint32_t* pre, uint32_t M,         \
                               uint32_t T, uint32_t* up) {                                                              \
        for (uint32_t i = 0; i < nthreads; i++) binv_up<F>(vals, pre, M, T, host_order(i, nthreads, order), up);        \
    }                                                                                                                  \
    void host_##NAME##_binv_top(uint32_t nthreads, int order, uint32_t* vals, uint32_t* pre, uint32_t M, uint32_t T) { \
        for (uint32_t i = 0; i < nthreads; i++) binv_top<F>(vals, pre, M, T, host_order(i, nthreads, order));           \
    }                                                                                                                  \
    void host_##NAME##_binv_down(uint32_t nthreads, int order, uint32_t* vals, const uint32_t* pre, uint32_t M,       \
                                 uint32_t T, const uint32_t* up) {                                                      \
        for (uint32_t i = 0; i < nthreads; i++) binv_down<F>(vals, pre, M, T, host_order(i, nthreads, order), up);      \
    }

extern "C" {
// the build variant this library was built with (rounds.cuh's ROUNDS_PREFETCH and
// ROUNDS_PREFETCH_DIST), so a test knows its defines arrived
int host_rounds_variant() { return 100 * ROUNDS_PREFETCH + ROUNDS_PREFETCH_DIST; }
HOST_ROUNDS(g1, Fp, fused, true, true)
HOST_ROUNDS(g1, Fp, step, false, true)
HOST_ROUNDS(g1, Fp, finish, true, false)
HOST_ROUNDS(g2, Fp2, fused, true, true)
HOST_ROUNDS(g2, Fp2, step, false, true)
HOST_ROUNDS(g2, Fp2, finish, true, false)
HOST_BINV(fp, Fp)
HOST_BINV(fp2, Fp2)
}
