"""CPU twins of the CUDA kernels (Numba ``njit``), same signatures and semantics."""
