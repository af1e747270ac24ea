"""The Array API namespace itself: every function, dtype and constant of ``import grilly``
that belongs to the array layer (grilly/__init__.py re-exports it, adding autograd, nn, optim).

Layers above the array layer inside grilly (nn, optim) import this module as ``gp`` rather than
the top-level package they are part of.
"""
from __future__ import annotations

import builtins as _b

from .. import fft, linalg  # noqa: F401  (the extensions, as gp.linalg and gp.fft)
from .array import Array  # noqa: F401
from .core import AxisError  # noqa: F401
from .creation import *  # noqa: F401,F403
from .devices import *  # noqa: F401,F403
from .dtypes import (  # noqa: F401
    DType, bfloat16, bool, can_cast, complex64, complex128, dtype, finfo, float16, float32, float64,
    iinfo,
    int8, int16, int32, int64, isdtype, result_type, uint8, uint16, uint32, uint64,
)
from .einsum import *  # noqa: F401,F403
from .elementwise import *  # noqa: F401,F403
from .host import device_stats, profile_report, reset_peak_memory_stats  # noqa: F401
from .indexing import *  # noqa: F401,F403
from .interop import *  # noqa: F401,F403
from .linear_algebra import *  # noqa: F401,F403
from .manipulation import *  # noqa: F401,F403
from .npyio import *  # noqa: F401,F403
from .numpy_compat import *  # noqa: F401,F403
from .numpy_extra import *  # noqa: F401,F403
from .numpy_stats import *  # noqa: F401,F403
from .searching import *  # noqa: F401,F403
from .sets import *  # noqa: F401,F403
from .sorting import *  # noqa: F401,F403
from .statistical import *  # noqa: F401,F403
from . import torch_methods as _torch_methods  # noqa: F401,E402  (torch.Tensor methods on Array)
from . import torch_dims as _torch_dims  # noqa: F401,E402  (torch's dim= forms: gp.max(x, dim=1))
from . import torch_aliases as _torch_aliases  # noqa: F401,E402  (x.absolute(), x.gt_(y), ...)
from . import torch_methods_extra as _torch_methods_extra  # noqa: F401,E402  (x.unflatten, ...)
from .utility import *  # noqa: F401,F403

# dtype names NumPy and torch agree on (dtype=torch.long, np.double): not byte (NumPy's int8,
# torch's uint8) nor float/int/cfloat (NumPy's were Python's float64/int64/complex128 aliases)
long = longlong = int_ = int64
double, half, single, short, intc, cdouble = float64, float16, float32, int16, int32, complex128
ubyte, ushort, bool_ = uint8, uint16, bool

e = _b.float("2.718281828459045")
pi = _b.float("3.141592653589793")
inf = _b.float("inf")
nan = _b.float("nan")
newaxis = None
del _b

__all__ = sorted([*(n for n in globals() if not n.startswith("_") and n != "annotations"),
                  "__array_namespace_info__"])
