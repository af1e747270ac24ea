"""Array API: manipulation functions."""
__all__: list = []
