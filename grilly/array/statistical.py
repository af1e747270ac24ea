"""Array API: statistical functions."""
__all__: list = []
