// What the batch-affine bucket accumulations (batch_affine.cuh, rounds.cuh) share: a sorted
// entry's point, read one coordinate at a time (entry v: point index in bits 0..30, bit 31 set for
// a negative digit), and the second half of an affine addition once the inverse of the batch's
// product is known. Plain HD code (host_cuda.cuh supplies __ldg and uint4 to the host build).
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

// The accumulator (x1, y1) += entry v's point, the addition's denominator d's inverse unwound
// from the running inverse: 1/d = inv * pref() (pref: the product of the denominators before d,
// read only once d is known, which keeps the callers' register pressure where it was), then
// inv *= d for the denominators before it. add: x2 - x1 over y2 - y1; else a doubling, 2 y1 over
// 3 x1^2 (x2 = x1).
template <class F, class Pref>
HD void finish_affine(F& x1, F& y1, const uint32_t* points, uint32_t v, bool add, Pref pref, F& inv) {
    const F x2 = entry_coord<F>(points, v, 0);
    F d, num;
    if (add) {
        d = x2 - x1;
        num = entry_coord<F>(points, v, 1) - y1;
    } else {
        d = y1.dbl();
        const F xx = x1.sqr();
        num = xx.dbl() + xx;
    }
    const F dinv = inv * pref();
    inv = inv * d;
    const F lam = num * dinv;
    const F x3 = lam.sqr() - x1 - x2;  // a doubling has x2 = x1
    y1 = lam * (x1 - x3) - y1;
    x1 = x3;
}
