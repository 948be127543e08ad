// G2 (over Fp2) instantiation of the MSM and fixed-base kernels; a module of its own so that it
// compiles in parallel with G1. See msm_core.cuh for the pipeline. The batch-affine
// accumulation (batch_affine.cuh) gets one block a multiprocessor: its Fp2 state needs the
// registers.
// MSM_G2_ACC_BOUNDS (a build define, see module.py) gives the XYZZ accumulation launch bounds,
// none by default (219 registers: two blocks of 128 a multiprocessor). __launch_bounds__(128, 3)
// fits three in 168 registers, 56 bytes spilled (ptxas 13.0), and was slower on an H100: G2's
// MSM at 2^24 411.3 ms against 396.4.
#ifdef MSM_G2_ACC_BOUNDS
#define MSM_ACC_BOUNDS MSM_G2_ACC_BOUNDS
#else
#define MSM_ACC_BOUNDS
#endif
#define MSM_BATCH_BOUNDS __launch_bounds__(MSM_BATCH_THREADS, 1)
#define MSM_ROUNDS_BOUNDS __launch_bounds__(128, 1)
#define MSM_ROUNDS_STEP_BOUNDS __launch_bounds__(128, 2)
#include "msm_core.cuh"
#include "batch_affine.cuh"
#include "rounds.cuh"
#include "fixed_base.cuh"

MSM_GROUP_KERNELS(g2, Fp2)
MSM_BATCH_KERNEL(g2, Fp2)
MSM_ROUNDS_KERNELS(g2, Fp2)
BATCH_INVERSE_KERNELS(fp2, Fp2)
FIXED_BASE_KERNELS(g2, Fp2)
