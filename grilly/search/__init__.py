"""grilly.search: pairwise distances, k-nearest-neighbour search and a flat index (docs/search.md),
written against the array namespace, so every device runs them."""
from ..array.api import topk
from .distances import METRICS, knn, pairwise_distances
from .flat import METRIC_INNER_PRODUCT, METRIC_L2, IndexFlat
from .idmap import IndexIDMap, read_index, write_index

__all__ = ["METRICS", "METRIC_INNER_PRODUCT", "METRIC_L2", "IndexFlat", "IndexIDMap", "knn",
           "pairwise_distances", "read_index", "topk", "write_index"]
