"""GPU backend: CUDA sources loaded with cupy.RawModule."""
