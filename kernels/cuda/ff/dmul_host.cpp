// Host build of dmul.cuh for tests/test_cuda_host_dmul.py: the FP64 product and mont.cuh's
// product side by side, over the same inputs, called through ctypes.
#include "dmul.cuh"

extern "C" {
// out[i] = a[i] * b[i] by dmul48::mul (which 1) or Mont<Fp>::operator* (which 0); 12 words each.
void fp_mul_pair(int which, const uint32_t* a, const uint32_t* b, uint32_t* out, int n) {
    for (int i = 0; i < n; i++) {
        const Fp x = Fp::load(a + 12 * i), y = Fp::load(b + 12 * i);
        (which ? dmul48::mul(x, y) : x * y).store(out + 12 * i);
    }
}
}
