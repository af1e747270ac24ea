"""CPU kernels: fft."""
KERNELS: dict = {}
