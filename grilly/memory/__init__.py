"""Memory modules and neural population codes (docs/memory.md): key-value memory, episodic
memory, associative (modern Hopfield) recall, context aggregation; place, grid and time cells.
Written once against the array API (every device); reads are differentiable."""
from .associative import AssociativeMemory
from .capsule import CapsuleConfig, CapsuleTransformer
from .cells import GridCells, PlaceCells, TimeCells
from .episodic import EpisodicMemory
from .kv import ContextAggregator, KeyValueMemory

__all__ = ["AssociativeMemory", "CapsuleConfig", "CapsuleTransformer", "ContextAggregator",
           "EpisodicMemory", "GridCells", "KeyValueMemory", "PlaceCells", "TimeCells"]
