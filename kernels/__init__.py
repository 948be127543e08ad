"""Field and curve arithmetic for BLS12-381: numba (cpu/) and CuPy RawKernels (cuda/) behind one Backend interface."""
