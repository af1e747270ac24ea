"""Counter-based random numbers, identical on every backend."""
