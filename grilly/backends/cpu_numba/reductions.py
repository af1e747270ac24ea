"""CPU kernels: reductions."""
KERNELS: dict = {}
