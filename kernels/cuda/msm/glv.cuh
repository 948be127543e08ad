// The GLV split of G1 scalars (kernels/constants.py: GLV_LAMBDA, FP_BETA): s = s1 + lambda s2 with
// s1 = s mod lambda and s2 = s div lambda, both below 2^128 since r = lambda^2 + lambda + 1, and
// lambda P = (beta x, y). An MSM of m full-length scalars becomes one of 2m half-length scalars
// over P and its image: ceil(129 / c) windows instead of ceil(256 / c), so 2 * 6 = 12 bucket
// additions a point at c = 22 against 13 at c = 20, and the sort moves 12 entries a point
// instead of 13 (kernels/cuda/msm.py: msm's endo argument).
// Plain HD functions: tests/test_cuda_host_glv.py builds them for the host against Python ints.
#pragma once
#include "../ff/bls12_381.cuh"

namespace glv {

HD bool geq_lambda(const uint32_t r[8]) {
    for (int k = 7; k >= 4; k--)
        if (r[k]) return true;
    for (int k = 3; k >= 0; k--) {
        if (r[k] != GLV_LAMBDA_W[k]) return r[k] > GLV_LAMBDA_W[k];
    }
    return true;
}

// out (NA + NB words) = a (NA words) * b (NB words), schoolbook.
template <int NA, int NB>
HD void mul_words(const uint32_t* a, const uint32_t* b, uint32_t* out) {
    for (int k = 0; k < NA + NB; k++) out[k] = 0;
    for (int i = 0; i < NA; i++) {
        uint64_t carry = 0;
        for (int j = 0; j < NB; j++) {
            const uint64_t t = (uint64_t)a[i] * b[j] + out[i + j] + carry;
            out[i + j] = (uint32_t)t;
            carry = t >> 32;
        }
        out[i + NB] = (uint32_t)carry;
    }
}

// s (canonical, eight 32-bit words, below r) -> s1, s2 (eight words each, the top four zero).
// q = floor(s * MU / 2^256) with MU = floor(2^256 / lambda) is s div lambda or one less (s * MU
// / 2^256 > s / lambda - s / 2^256 > s / lambda - 1), so at most one correction.
HD void split(const uint32_t s[8], uint32_t s1[8], uint32_t s2[8]) {
    uint32_t prod[13];
    mul_words<8, 5>(s, GLV_MU_W, prod);
    uint32_t q[4] = {prod[8], prod[9], prod[10], prod[11]};  // prod[12] is 0: q <= lambda + 1 < 2^128
    // rem = s - q * lambda (no borrow out: q * lambda <= s)
    uint32_t ql[8];
    mul_words<4, 4>(q, GLV_LAMBDA_W, ql);
    uint32_t rem[8];
    uint64_t borrow = 0;
    for (int k = 0; k < 8; k++) {
        const uint64_t d = (uint64_t)s[k] - ql[k] - borrow;
        rem[k] = (uint32_t)d;
        borrow = (d >> 32) & 1;
    }
    while (geq_lambda(rem)) {
        borrow = 0;
        for (int k = 0; k < 8; k++) {
            const uint64_t d = (uint64_t)rem[k] - (k < 4 ? GLV_LAMBDA_W[k] : 0u) - borrow;
            rem[k] = (uint32_t)d;
            borrow = (d >> 32) & 1;
        }
        uint64_t c = 1;
        for (int k = 0; k < 4; k++) {
            c += q[k];
            q[k] = (uint32_t)c;
            c >>= 32;
        }
    }
    for (int k = 0; k < 8; k++) {
        s1[k] = rem[k];
        s2[k] = k < 4 ? q[k] : 0u;
    }
}

// (x, y) -> (beta x, y), affine G1; infinity (all zeros) stays infinity.
HD void endo_point(const uint32_t* in, uint32_t* out) {
    Fp beta;
    for (int k = 0; k < Fp::N; k++) beta.v[k] = FP_BETA_M[k];
    (Fp::load(in) * beta).store(out);
    Fp::load(in + Fp::WORDS).store(out + Fp::WORDS);
}

}  // namespace glv
