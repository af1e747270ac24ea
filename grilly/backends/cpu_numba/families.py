"""The kernel modules of the CPU backend beyond storage and elementwise; each has KERNELS."""
from . import (conv, dense, indexing, linalg, neighbors, optim, philox, plasticity, reductions, snn,
               softmax, sorting, topk)

MODULES = (reductions, indexing, sorting, topk, linalg, dense, softmax, conv, optim, snn,
           neighbors, philox, plasticity)
