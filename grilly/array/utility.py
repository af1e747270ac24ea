"""Array API: utility functions."""
__all__: list = []
