"""The kernel modules of the Vulkan backend beyond storage and elementwise; each has KERNELS."""
from . import (attention, conv, fft, indexing, interop, linalg, neighbors, norm, optim,
               ownership, philox, plasticity, reductions, segments, snn, softmax, sorting)

MODULES = (reductions, linalg, indexing, sorting, softmax, conv, norm, interop, optim, snn,
           neighbors, philox, plasticity, attention, ownership, segments, fft)
