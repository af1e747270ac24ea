"""CPU kernels: sorting."""
KERNELS: dict = {}
