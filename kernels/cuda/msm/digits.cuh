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

// Window w's digit alone, as a loop over the windows produces it, with no loop over the windows
// and no array indexed at run time (a per-window sort kernel would otherwise keep its scalars in
// local memory): the carry into window w is 1 exactly when s mod 2^(wc) exceeds
// M_w = sum_{i<w} 2^(ic + c - 1), since each lower signed digit is at most 2^(c-1) (by induction
// over the windows: a window whose bits exceed 2^(c-1) carries whatever came in, one that equals
// it carries what came in, one below it does not). What depends on (c, w) alone is worked out
// once (WindowDigits), so a kernel recoding many scalars for one window pays it once.
// tests/test_cuda_host_digits.py checks it against the loop.
struct WindowDigits {
    int c, limb, sh;
    uint32_t below[8];  // the bits of word j below w c
    uint32_t m[8];      // the words of M_w

    HD WindowDigits(int c_, int w) : c(c_), limb(w * c_ >> 5), sh(w * c_ & 31) {
        const int off = w * c;
        UNROLL for (int j = 0; j < 8; j++) {
            below[j] = 32 * j + 32 <= off ? ~0u : 32 * j >= off ? 0u : (1u << (off - 32 * j)) - 1;
            m[j] = 0;
        }
        for (int i = 0; i < w; i++) {
            const int pos = i * c + c - 1;
            UNROLL for (int j = 0; j < 8; j++) m[j] |= (pos >> 5) == j ? 1u << (pos & 31) : 0u;
        }
    }

    // s's digit magnitude in this window; *neg its sign.
    HD uint32_t digit(const uint32_t s[8], uint32_t* neg) const {
        uint32_t lo = 0, hi = 0;
        int gt = 0, lt = 0;  // s mod 2^(wc) against M_w, from the top word down
        UNROLL for (int j = 7; j >= 0; j--) {
            // masks, not selects: ptxas turns a chain of selects into s[limb], an array indexed at
            // run time, and puts the caller's scalars in local memory
            lo |= s[j] & (j == limb ? ~0u : 0u);
            hi |= s[j] & (j == limb + 1 ? ~0u : 0u);
            const uint32_t a = s[j] & below[j];
            if (!gt && !lt) {
                gt = a > m[j];
                lt = a < m[j];
            }
        }
        const uint32_t bits = limb < 8 ? ((sh ? (lo >> sh) | (hi << (32 - sh)) : lo) & ((1u << c) - 1)) : 0u;
        uint32_t carry = gt;
        return signed_digit(bits, c, &carry, neg);
    }
};

HD uint32_t window_digit(const uint32_t s[8], int c, int w, uint32_t* neg) {
    return WindowDigits(c, w).digit(s, neg);
}
