// G1 (over Fp) instantiation of the MSM and fixed-base kernels, plus the group-independent
// scalar kernels (digits, counting sort, work items). See msm_core.cuh for the pipeline.
// MSM_G1_ACC_BOUNDS (a build define, see module.py) overrides the accumulation kernel's launch
// bounds for measuring variants.
#define MSM_GENERIC_KERNELS
#ifdef MSM_G1_ACC_BOUNDS
#define MSM_ACC_BOUNDS MSM_G1_ACC_BOUNDS
#endif
#include "msm_core.cuh"
#include "batch_affine.cuh"
#include "fixed_base.cuh"

MSM_GROUP_KERNELS(g1, Fp)
MSM_BATCH_KERNEL(g1, Fp)
FIXED_BASE_KERNELS(g1, Fp)
