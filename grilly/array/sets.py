"""Array API: sets functions."""
__all__: list = []
