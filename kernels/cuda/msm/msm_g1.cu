// G1 (over Fp) instantiation of the MSM and fixed-base kernels, plus the group-independent
// scalar kernels (digits, counting sort, work items). See msm_core.cuh for the pipeline.
#define MSM_GENERIC_KERNELS
#include "msm_core.cuh"

MSM_GROUP_KERNELS(g1, Fp)
