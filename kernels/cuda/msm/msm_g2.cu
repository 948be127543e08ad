// G2 (over Fp2) instantiation of the MSM and fixed-base kernels; a module of its own so that it
// compiles in parallel with G1. See msm_core.cuh for the pipeline. The batch-affine
// accumulation (batch_affine.cuh) gets one block a multiprocessor: its Fp2 state needs the
// registers.
#define MSM_ACC_BOUNDS
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
