"""grilly: an Array API namespace on pluggable backends (Numba CPU, Vulkan GPU)."""
from __future__ import annotations

__version__ = "0.1.0"
__array_api_version__ = "2025.12"

import sys as _sys

from .array.api import *  # noqa: F401,F403  (the Array API namespace)
from .array.api import e, inf, nan, newaxis, pi  # noqa: F401
from .array.api import bool, linalg, fft  # noqa: F401
from .array import dispatch as _dispatch  # noqa: E402
from . import backends  # noqa: F401,E402
from .array import composites  # noqa: F401,E402  (fills the array layer's composite registry)

from . import autograd, random, nn, optim, search  # noqa: E402,F401
# (torch.optim.swa_utils's place; grilly.optim cannot import it: it needs grilly.nn, which
# imports grilly.optim)
from .optim import swa_utils as _swa_utils  # noqa: E402,F401
from . import special  # noqa: E402,F401  (torch.special, scipy.special)
from . import distributions  # noqa: E402,F401

autograd.install(globals())
_dispatch.set_namespace(_sys.modules[__name__])   # what Array.__array_namespace__ returns

from .compute import Compute, SNNCompute, VulkanCompute  # noqa: E402,F401  (the seed API)
from . import learning  # noqa: E402,F401
from . import memory  # noqa: E402,F401
from .memory import CapsuleConfig, CapsuleTransformer  # noqa: E402,F401  (the seed API)
from . import amp  # noqa: E402,F401
from . import utils  # noqa: E402,F401
from . import jit  # noqa: E402,F401  (a module, and the seed's @grilly.jit decorator)
from . import func  # noqa: E402,F401  (torch.func: grad, vjp, jacrev, vmap, ...)
from . import functional  # noqa: E402,F401  (grilly.functional is grilly.nn.functional)
from .amp import autocast  # noqa: E402,F401
from .learning import Learning, VulkanLearning  # noqa: E402,F401  (the seed API)
from .torch_functions import *  # noqa: E402,F401,F403  (torch.tensor, cat, save, load, ...)
from .torch_toplevel import *  # noqa: E402,F401,F403  (torch.index_select, cdist, conv2d, ...)
from .signal_windows import *  # noqa: E402,F401,F403  (torch.hann_window..., numpy.kaiser)


def __getattr__(name: str):
    # probed on first use, so importing grilly never starts a Vulkan instance
    if name in ("VULKAN_AVAILABLE", "VULKAN_UNAVAILABLE_REASON"):
        from .backends import vulkan

        return vulkan.VULKAN_AVAILABLE if name == "VULKAN_AVAILABLE" else vulkan.UNAVAILABLE_REASON
    raise AttributeError(f"module 'grilly' has no attribute {name!r}")
