"""Reverse-mode automatic differentiation written against the grilly namespace."""


def install(namespace: dict) -> None:
    """Wrap the namespace's differentiable functions so they record a tape (see tape.py)."""
