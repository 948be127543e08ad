"""Field and curve arithmetic for BLS12-381: numba (cpu/) and CuPy RawKernels (cuda/) behind one Backend interface."""

import os

# numba's OpenMP workers spin while idle by default; with several worker processes sharing
# cores (and on small machines) that costs ~10 ms per parallel region. Set before numba's
# threading layer loads; an operator's own setting wins.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
