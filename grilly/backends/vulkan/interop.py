"""Zero-copy host access for DLPack export (docs/vulkan.md, "DLPack").

Array memory is host-visible, coherent and persistently mapped (memory.py), so once pending
work is flushed a buffer's bytes can be handed out as a numpy view: the ``host_view`` kernel.
The view keeps the allocation alive, so the block is neither recycled by the pool nor unmapped
while anything (a numpy array, a DLPack capsule) still references the export.
"""
from __future__ import annotations

import numpy as np

from .memory import Buffer


class _Mapped:
    """Exposes a mapped view through ``__array_interface__`` while holding its allocation."""

    __slots__ = ("__array_interface__", "alloc", "view")

    def __init__(self, view: np.ndarray, alloc) -> None:
        self.view, self.alloc = view, alloc
        self.__array_interface__ = view.__array_interface__


def host_view(buf: Buffer) -> np.ndarray | None:
    """Sync point: ``buf``'s mapped memory as a writable numpy view, or None when unmapped."""
    if buf.alloc.chunk.host is None:
        return None
    buf.ctx.recorder.flush()  # device writes must land before the host reads
    out = np.asarray(_Mapped(buf.host_view(), buf.alloc))
    # the array interface spells a dtype numpy does not know (ml_dtypes' bfloat16) as raw
    # bytes ("|V2"): view it back as the buffer's dtype
    return out if out.dtype == buf.dtype.np else out.view(buf.dtype.np)


KERNELS = {"host_view": host_view}
