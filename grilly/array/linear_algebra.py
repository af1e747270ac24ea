"""Array API: linear_algebra functions."""
__all__: list = []
