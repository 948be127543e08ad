// Multiplication-rate probe of sppark's BLS12-381 field types (fp_t, fr_t), built beside sealtop's
// own probe (scripts/gpu_check.py) so both are measured in the same run with the same shape:
// 132 SMs x 8 blocks of 256 threads, each thread a chain of `iters` dependent products x = x * y,
// the result stored so the chain cannot be elided, CUDA events, median of 5 after a warm-up.
// Build (device machine; sppark and blst sources from ../shared/peers/sppark):
//   nvcc -std=c++17 -O3 -arch=sm_90 -DFEATURE_BLS12_381 -I SPPARK -I BLST/src sppark_ff_probe.cu -o probe
// Prints one line per field: "sppark <name>_mul_chain: <rate> G mul/s (<ms> ms)".
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdio>
#include <cstdint>
#include <vector>

#include <ff/bls12-381.hpp>

template <int WORDS>
__global__ void chain(const uint32_t* a, uint32_t* out, int iters) {
#ifdef __CUDA_ARCH__
    typedef typename std::conditional<WORDS == 12, bls12_381::fp_t, bls12_381::fr_t>::type F;
    uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    F x = *reinterpret_cast<const F*>(a + (i & 1023) * WORDS), y = x;
    for (int k = 0; k < iters; k++) x = x * y;
    *reinterpret_cast<F*>(out + i * WORDS) = x;
#endif
}

static int check(cudaError_t e, const char* what) {
    if (e != cudaSuccess) {
        fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
        return 1;
    }
    return 0;
}

template <int WORDS>
static int probe(const char* name, int sms) {
    const int block = 256, iters = 2000;
    const uint64_t threads = (uint64_t)sms * 8 * block;
    std::vector<uint32_t> host(1024 * WORDS);
    uint32_t s = 12345;
    for (auto& w : host) { s = s * 1664525u + 1013904223u; w = s; }
    for (int i = 0; i < 1024; i++) host[i * WORDS + WORDS - 1] &= 0x0fffffffu;  // below the modulus
    uint32_t *a = nullptr, *out = nullptr;
    if (check(cudaMalloc(&a, host.size() * 4), "malloc") || check(cudaMalloc(&out, threads * WORDS * 4), "malloc")) return 1;
    cudaMemcpy(a, host.data(), host.size() * 4, cudaMemcpyHostToDevice);
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    std::vector<float> ms;
    for (int r = 0; r < 6; r++) {
        cudaEventRecord(e0);
        chain<WORDS><<<threads / block, block>>>(a, out, iters);
        cudaEventRecord(e1);
        if (check(cudaEventSynchronize(e1), name) || check(cudaGetLastError(), name)) return 1;
        float t;
        cudaEventElapsedTime(&t, e0, e1);
        if (r) ms.push_back(t);  // the first run is the warm-up
    }
    std::sort(ms.begin(), ms.end());
    float med = ms[ms.size() / 2];
    printf("sppark %s_mul_chain: %.1f G mul/s (%.2f ms)\n", name, threads * (double)iters / (med / 1e3) / 1e9, med);
    cudaFree(a);
    cudaFree(out);
    return 0;
}

int main() {
    cudaDeviceProp p;
    if (check(cudaGetDeviceProperties(&p, 0), "device")) return 1;
    printf("device %s, %d SMs\n", p.name, p.multiProcessorCount);
    return probe<8>("fr", p.multiProcessorCount) | probe<12>("fp", p.multiProcessorCount);
}
