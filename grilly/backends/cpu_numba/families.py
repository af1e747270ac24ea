"""The kernel modules of the CPU backend beyond storage and elementwise; each has KERNELS."""
from . import (activation, attention, conv, dense, indexing, linalg, neighbors, norm, optim, philox,
               plasticity, reductions, segments, snn, softmax, sorting, topk)

MODULES = (reductions, indexing, sorting, topk, linalg, dense, softmax, activation, conv, norm,
           attention, optim, snn, neighbors, philox, plasticity, segments)
