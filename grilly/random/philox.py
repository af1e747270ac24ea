"""Philox4x32-10 computed with namespace integer ops (the array layer's grilly.array.random_bits,
which also holds the one-dispatch ``philox_blocks`` kernel the generator draws with)."""
from __future__ import annotations

from ..array.random_bits import philox4x32

__all__ = ["philox4x32"]
