"""grilly.search: pairwise distances, k-nearest-neighbour search and a flat index (docs/search.md),
written against the array namespace, so every device runs them."""
from ..array.api import topk
from .distances import METRICS, knn, pairwise_distances
from .flat import IndexFlat

__all__ = ["METRICS", "IndexFlat", "knn", "pairwise_distances", "topk"]
