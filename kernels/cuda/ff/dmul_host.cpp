// Host build of dmul.cuh for tests/test_cuda_host_dmul.py: the FP64 product and mont.cuh's
// product side by side, over the same inputs, called through ctypes.
#include "dmul.cuh"

extern "C" {
// out[i] = a[i] * b[i] by Mont<Fp>::operator* (which 0), dmul48::mul_school (1),
// dmul48::mul_karatsuba (2), dmul48::sqr of a[i] (3), Mont<Fp>::sqr of a[i] (4),
// dmul48::mul_hybrid (5), dmul48::sqr_hybrid of a[i] (6); 12 words each.
void fp_mul_pair(int which, const uint32_t* a, const uint32_t* b, uint32_t* out, int n) {
    for (int i = 0; i < n; i++) {
        const Fp x = Fp::load(a + 12 * i), y = Fp::load(b + 12 * i);
        Fp r;
        switch (which) {
            case 0: r = x * y; break;
            case 1: r = dmul48::mul_school(x, y); break;
            case 2: r = dmul48::mul_karatsuba(x, y); break;
            case 3: r = dmul48::sqr(x); break;
            case 5: r = dmul48::mul_hybrid(x, y); break;
            case 6: r = dmul48::sqr_hybrid(x); break;
            default: r = x.sqr(); break;
        }
        r.store(out + 12 * i);
    }
}
}
