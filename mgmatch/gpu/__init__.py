"""CuPy launch wrappers of the CUDA kernels in ``kernels/``; GPU twins of ``mgmatch.cpu``."""
