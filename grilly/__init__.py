"""grilly: an Array API namespace on pluggable backends (Numba CPU, Vulkan GPU)."""
from __future__ import annotations

__version__ = "0.1.0"
__array_api_version__ = "2025.12"

from .array.dtypes import (  # noqa: F401
    DType, bool, int8, int16, int32, int64, uint8, uint16, uint32, uint64, float16, float32,
    float64, complex64, complex128, result_type, can_cast, isdtype, finfo, iinfo,
)
from .array.array import Array  # noqa: F401
from .array.core import AxisError  # noqa: F401
from .array.creation import *  # noqa: F401,F403
from .array.elementwise import *  # noqa: F401,F403
from .array.manipulation import *  # noqa: F401,F403
from .array.indexing import *  # noqa: F401,F403
from .array.searching import *  # noqa: F401,F403
from .array.sets import *  # noqa: F401,F403
from .array.sorting import *  # noqa: F401,F403
from .array.statistical import *  # noqa: F401,F403
from .array.utility import *  # noqa: F401,F403
from .array.linear_algebra import *  # noqa: F401,F403
from .array.interop import *  # noqa: F401,F403
from .array.devices import *  # noqa: F401,F403
from . import backends, linalg, fft  # noqa: F401,E402

import builtins as _b

e = _b.float("2.718281828459045")
pi = _b.float("3.141592653589793")
inf = _b.float("inf")
nan = _b.float("nan")
newaxis = None
del _b

from . import autograd, random, nn, optim  # noqa: E402,F401

autograd.install(globals())

from .compute import Compute, SNNCompute, VulkanCompute  # noqa: E402,F401  (the seed API)


def __getattr__(name: str):
    # probed on first use, so importing grilly never starts a Vulkan instance
    if name in ("VULKAN_AVAILABLE", "VULKAN_UNAVAILABLE_REASON"):
        from .backends import vulkan

        return vulkan.VULKAN_AVAILABLE if name == "VULKAN_AVAILABLE" else vulkan.UNAVAILABLE_REASON
    raise AttributeError(f"module 'grilly' has no attribute {name!r}")
