"""CPU kernels: linalg."""
KERNELS: dict = {}
