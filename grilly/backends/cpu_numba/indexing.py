"""CPU kernels: indexing."""
KERNELS: dict = {}
