"""Array API: sorting functions."""
__all__: list = []
