// Elementwise field kernels over design.md's storage layout: the Fr vector operations of the
// Backend interface, plus Fp and Fp2 operations used to check the arithmetic on the device.
// op codes: 0 add, 1 sub, 2 mul, 3 sqr, 4 inverse (0 -> 0), 5 neg, 6 from Montgomery, 7 to Montgomery.
#include "bls12_381.cuh"
#include "dmul.cuh"

template <class F>
__device__ __forceinline__ void field_binop(int op, const uint32_t* a, const uint32_t* b, uint32_t* out, uint64_t n) {
    uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    F x = F::load(a + i * F::WORDS);
    F r;
    switch (op) {
        case 0: r = x + F::load(b + i * F::WORDS); break;
        case 1: r = x - F::load(b + i * F::WORDS); break;
        case 2: r = x * F::load(b + i * F::WORDS); break;
        case 3: r = x.sqr(); break;
        case 4: r = x.inv(); break;
        case 5: r = x.neg(); break;
        default: r = x; break;
    }
    r.store(out + i * F::WORDS);
}

template <class F>
__device__ __forceinline__ void mont_convert(int to_mont, const uint32_t* a, uint32_t* out, uint64_t n) {
    uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    F x = F::load(a + i * F::WORDS);
    (to_mont ? x.to_mont() : x.from_mont()).store(out + i * F::WORDS);
}

extern "C" {
__global__ void fr_binop(int op, const uint32_t* a, const uint32_t* b, uint32_t* out, uint64_t n) { field_binop<Fr>(op, a, b, out, n); }
__global__ void fp_binop(int op, const uint32_t* a, const uint32_t* b, uint32_t* out, uint64_t n) { field_binop<Fp>(op, a, b, out, n); }
__global__ void fp2_binop(int op, const uint32_t* a, const uint32_t* b, uint32_t* out, uint64_t n) { field_binop<Fp2>(op, a, b, out, n); }
__global__ void fr_convert(int to_mont, const uint32_t* a, uint32_t* out, uint64_t n) { mont_convert<Fr>(to_mont, a, out, n); }
__global__ void fp_convert(int to_mont, const uint32_t* a, uint32_t* out, uint64_t n) { mont_convert<Fp>(to_mont, a, out, n); }

// Fr multiply-throughput probe: each thread runs a chain of `iters` dependent multiplications.
__global__ void fr_mul_chain(const uint32_t* a, uint32_t* out, int iters) {
    uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    Fr x = Fr::load(a + (i & 1023) * 8), y = x;
    for (int k = 0; k < iters; k++) x = x * y;
    x.store(out + i * 8);
}
__global__ void fp_mul_chain(const uint32_t* a, uint32_t* out, int iters) {
    uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    Fp x = Fp::load(a + (i & 1023) * 12), y = x;
    for (int k = 0; k < iters; k++) x = x * y;
    x.store(out + i * 12);
}
// y's words made opaque (an empty asm that "changes" them; no instruction), so that the compiler
// cannot hoist the conversion of the loop-invariant operand y out of a dmul48 chain: each product
// then pays for both operands' conversions, as a product of two fresh values does (operator*
// has nothing of the kind to hoist).
#ifndef SEALTOP_DMUL_BLOCKS
#define SEALTOP_DMUL_BLOCKS 2  // __launch_bounds__(256, this) on the dmul48 chains: registers <= 65536 / (256 this)
#endif
#define DMUL_BOUNDS __launch_bounds__(256, SEALTOP_DMUL_BLOCKS)
__device__ __forceinline__ void opaque(Fp& y) {
    UNROLL for (int j = 0; j < 12; j++) asm volatile("" : "+r"(y.v[j]));
}
// The same chain through dmul.cuh's FP64-pipe products (dmul48::mul, Karatsuba; mul_school;
// mul_hybrid): one chain a thread, as fp_mul_chain, so the rates compare like for like; their
// outputs must equal fp_mul_chain's.
#define DMUL_CHAIN(NAME, MUL)                                                                    \
    __global__ void DMUL_BOUNDS NAME(const uint32_t* a, uint32_t* out, int iters) {               \
        uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;                            \
        Fp x = Fp::load(a + (i & 1023) * 12), y = x;                                             \
        for (int k = 0; k < iters; k++) {                                                        \
            opaque(y);                                                                           \
            x = MUL(x, y);                                                                       \
        }                                                                                        \
        x.store(out + i * 12);                                                                   \
    }
DMUL_CHAIN(fp_dmul_chain, dmul48::mul)
DMUL_CHAIN(fp_dmul_school_chain, dmul48::mul_school)
DMUL_CHAIN(fp_dmul_hybrid_chain, dmul48::mul_hybrid)

// Squaring chains: Mont<Fp>::sqr, dmul48::sqr and dmul48::sqr_hybrid (outputs equal).
#define SQR_CHAIN(NAME, BOUNDS, SQR)                                                             \
    __global__ void BOUNDS NAME(const uint32_t* a, uint32_t* out, int iters) {                    \
        uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;                            \
        Fp x = Fp::load(a + (i & 1023) * 12);                                                    \
        for (int k = 0; k < iters; k++) x = SQR(x);                                              \
        x.store(out + i * 12);                                                                   \
    }
__device__ __forceinline__ Fp mont_sqr(const Fp& x) { return x.sqr(); }
SQR_CHAIN(fp_sqr_chain, , mont_sqr)
SQR_CHAIN(fp_dsqr_chain, DMUL_BOUNDS, dmul48::sqr)
SQR_CHAIN(fp_dsqr_hybrid_chain, DMUL_BOUNDS, dmul48::sqr_hybrid)
// Both products at once: two independent chains a thread, one on the IMAD pipe (operator*) and
// one on the FP64 pipe (dmul48::mul), counted as 2 * iters products a thread. Whether the two
// pipes overlap shows as a rate above both single-product chains. The chains end equal; a
// mismatch poisons word 0, so the output still has to equal fp_mul_chain's.
__global__ void DMUL_BOUNDS fp_mix_chain(const uint32_t* a, uint32_t* out, int iters) {
    uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    Fp x = Fp::load(a + (i & 1023) * 12), y = x, z = x;
    for (int k = 0; k < iters; k++) {
        opaque(y);
        x = x * y;
        z = dmul48::mul(z, y);
    }
    if (!x.eq(z)) z.v[0] ^= 0xdeadbeefu;
    z.store(out + i * 12);
}
// dmul48's products elementwise (tests/test_cuda_dmul.py): op 0 mul (Karatsuba), 1 mul_school,
// 2 mul_hybrid, 3 sqr of a, 4 sqr_hybrid of a.
__global__ void fp_dmul(int op, const uint32_t* a, const uint32_t* b, uint32_t* out, uint64_t n) {
    uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const Fp x = Fp::load(a + i * 12), y = Fp::load(b + i * 12);
    Fp r;
    switch (op) {
        case 0: r = dmul48::mul(x, y); break;
        case 1: r = dmul48::mul_school(x, y); break;
        case 2: r = dmul48::mul_hybrid(x, y); break;
        case 3: r = dmul48::sqr(x); break;
        default: r = dmul48::sqr_hybrid(x); break;
    }
    r.store(out + i * 12);
}
}
