"""The kit's tests; each takes the ``device`` fixture and is tagged with the kernels it runs."""
