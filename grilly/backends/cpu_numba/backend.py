"""The multithreaded Numba CPU backend: one device, ``cpu``."""
from __future__ import annotations

import functools
import threading

import numba
import numpy as np

from ..contract import BINARY_OPS as BINARY, UNARY_OPS as UNARY
from ..base import Backend, Device
from . import elementwise, jit, storage
from .pool import pool

# Numba's workqueue layer cannot run parallel kernels of two threads at once (it aborts the
# process): there, one lock serializes the backend's kernels; TBB and OpenMP need none
_SERIAL = threading.RLock()


def _serial(fn, *args, **kw):
    with _SERIAL:
        return fn(*args, **kw)


class CpuBackend(Backend):
    """Numba kernels over numpy-held host buffers; parallel above a size threshold."""

    name = "cpu"
    priority = 10  # vulkan: 5 + device rank, so a GPU wins and lavapipe (rank 0) does not
    buffer_type = np.ndarray

    def __init__(self):
        self._devices = [Device(self, 0, "host CPU, Numba kernels")]

    def devices(self) -> list[Device]:
        return self._devices

    def kernels(self) -> dict:
        from . import families

        table = dict(storage.KERNELS)
        table.update(elementwise.kernels(UNARY, BINARY))
        for fam in families.MODULES:
            table.update(fam.KERNELS)
        if jit.workqueue_layer():
            table = {name: functools.update_wrapper(functools.partial(_serial, fn), fn)
                     for name, fn in table.items()}
        return table

    def buffer_device(self, buf) -> Device | None:
        """The one cpu device."""
        return self._devices[0]

    def info(self, device: Device) -> dict:
        return {"numba": numba.__version__, "threads": numba.config.NUMBA_NUM_THREADS,
                "pool_bytes": pool.held}
