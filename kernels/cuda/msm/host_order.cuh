// Host builds only (msm/host_rounds.cpp, msm/host_sort2.cpp): the i-th of n threads or blocks to
// run when a kernel is played as a loop, in an order picked by `order` (0: first to last, 1: last
// to first, 2: odd ones, then even), so that a result that depended on the order in which a
// kernel's threads or blocks ran would be seen.
#pragma once
#include <cstdint>

static inline uint32_t host_order(uint32_t i, uint32_t n, int order) {
    if (order == 1) return n - 1 - i;
    if (order == 2) {
        const uint32_t odd = n / 2;
        return i < odd ? 2 * i + 1 : 2 * (i - odd);
    }
    return i;
}
