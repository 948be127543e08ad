"""CPU backend: numba kernels over the shared storage layout (Montgomery, little-endian u64 limbs)."""
