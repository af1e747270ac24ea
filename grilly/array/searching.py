"""Array API: searching functions."""
__all__: list = []
