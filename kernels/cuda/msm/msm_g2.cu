// G2 (over Fp2) instantiation of the MSM and fixed-base kernels; a module of its own so that it
// compiles in parallel with G1. See msm_core.cuh for the pipeline.
#define MSM_ACC_BOUNDS
#include "msm_core.cuh"

MSM_GROUP_KERNELS(g2, Fp2)
