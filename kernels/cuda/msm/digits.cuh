// Signed c-bit digits of a 256-bit scalar (eight little-endian 32-bit words), the one recoding
// that the MSM (msm_core.cuh: histogram, scatter, per-window passes) and the fixed-base
// multiplication (fixed_base.cuh) share, so a bucket counted is the bucket filled and a table
// entry picked is the digit meant. Plain HD functions: tests/test_cuda_host_digits.py builds this
// header for the host and checks the digits against Python integers.
//
// signed_digit: d = bits + carry; if d > 2^(c-1) then d -= 2^c and carry 1. With
// nwin = ceil(256 / c) windows no carry is left over for a scalar below 2^255, and a digit's
// magnitude is at most 2^(c-1), so a window needs 2^(c-1) buckets or table entries.
#pragma once
#include "../ff/common.cuh"

HD uint32_t scalar_bits(const uint32_t s[8], int off, int c) {
    int limb = off >> 5, sh = off & 31;
    if (limb >= 8) return 0;
    uint32_t v = s[limb] >> sh;
    if (sh + c > 32 && limb + 1 < 8) v |= s[limb + 1] << (32 - sh);
    return v & ((1u << c) - 1);
}

// The digit's magnitude; *neg its sign, *carry the carry into the next window.
HD uint32_t signed_digit(uint32_t bits, int c, uint32_t* carry, uint32_t* neg) {
    const uint32_t half = 1u << (c - 1), full = 1u << c;
    const uint32_t raw = bits + *carry;
    *neg = *carry = raw > half;
    return *neg ? full - raw : raw;
}

// Window w's digit alone: the carry into it recomputed from the lower windows' bits, exactly as
// a loop over the windows produces it.
HD uint32_t window_digit(const uint32_t s[8], int c, int w, uint32_t* neg) {
    uint32_t carry = 0;
    for (int i = 0; i < w; i++) signed_digit(scalar_bits(s, i * c, c), c, &carry, neg);
    return signed_digit(scalar_bits(s, w * c, c), c, &carry, neg);
}
