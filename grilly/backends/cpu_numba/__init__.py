"""The multithreaded Numba CPU backend."""
