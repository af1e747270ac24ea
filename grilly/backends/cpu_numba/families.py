"""The kernel modules of the CPU backend beyond storage and elementwise; each has KERNELS."""
from . import conv, indexing, linalg, reductions, snn, softmax, sorting

MODULES = (reductions, indexing, sorting, linalg, softmax, conv, snn)
