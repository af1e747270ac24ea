"""Array API: indexing functions."""
__all__: list = []
