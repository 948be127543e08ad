// Host build of the field and curve headers, for checking the formulas without a GPU.
// tests/test_cuda_host_ff.py compiles this with a plain C++ compiler (after kernels/cuda/source.py
// inlines the includes) and calls these entry points through ctypes.
#include "../ec/xyzz.cuh"
#include "inverse_gcd.cuh"

template <class F>
static void binop(int op, const uint32_t* a, const uint32_t* b, uint32_t* out, int n) {
    for (int i = 0; i < n; i++) {
        F x = F::load(a + i * F::WORDS), y = F::load(b + i * F::WORDS), r;
        switch (op) {
            case 0: r = x + y; break;
            case 1: r = x - y; break;
            case 2: r = x * y; break;
            case 3: r = x.sqr(); break;
            case 4: r = x.inv(); break;
            case 6: r = x.inv_fast(); break;
            // the binary-GCD inversion (inverse_gcd.cuh): SEALTOP_INV_GCD_BITS's limbs, 62-bit, 30-bit
            case 7: r = inv_gcd(x); break;
            case 8: r = inv_gcd_w<gcdinv::Limbs62>(x); break;
            case 9: r = inv_gcd_w<gcdinv::Limbs30>(x); break;
            default: r = x.neg(); break;
        }
        r.store(out + i * F::WORDS);
    }
}

// op 0: a + b (both affine, through XYZZ: mixed add), 1: 2a, 2: a + b via XYZZ + XYZZ,
// 3: a + b + a (repeated points through the accumulator).
template <class F>
static void curveop(int op, const uint32_t* a, const uint32_t* b, uint32_t* out, int n) {
    const int W = Affine<F>::WORDS;
    for (int i = 0; i < n; i++) {
        Affine<F> p = Affine<F>::load(a + i * W), q = Affine<F>::load(b + i * W);
        Xyzz<F> acc = Xyzz<F>::from_affine(p);
        if (op == 0) acc.add(q);
        else if (op == 1) acc = acc.dbl();
        else if (op == 2) acc.add(Xyzz<F>::from_affine(q));
        else { acc.add(q); acc.add(p); }
        acc.to_affine().store(out + i * W);
    }
}

extern "C" {
void fr_binop(int op, const uint32_t* a, const uint32_t* b, uint32_t* out, int n) { binop<Fr>(op, a, b, out, n); }
void fp_binop(int op, const uint32_t* a, const uint32_t* b, uint32_t* out, int n) { binop<Fp>(op, a, b, out, n); }
void fp2_binop(int op, const uint32_t* a, const uint32_t* b, uint32_t* out, int n) { binop<Fp2>(op, a, b, out, n); }
void g1_op(int op, const uint32_t* a, const uint32_t* b, uint32_t* out, int n) { curveop<Fp>(op, a, b, out, n); }
void g2_op(int op, const uint32_t* a, const uint32_t* b, uint32_t* out, int n) { curveop<Fp2>(op, a, b, out, n); }
}
