"""Array API: interop functions."""
__all__: list = []
