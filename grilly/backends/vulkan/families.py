"""The kernel modules of the Vulkan backend beyond storage and elementwise; each has KERNELS."""
from . import reductions

MODULES = (reductions,)
