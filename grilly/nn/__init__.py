"""PyTorch-style neural network modules written against the grilly namespace.

``Parameter(x)`` marks the Array ``x`` itself (requires_grad=True, remembered in a weak
registry so ``isinstance(x, nn.Parameter)`` works) and returns it: grilly.Array has slots and
is not subclassed. See docs/nn.md."""
from . import functional, init, utils  # noqa: F401
from ._random import manual_seed  # noqa: F401
from .attention import *  # noqa: F401,F403
from .conv_rnn_extra import *  # noqa: F401,F403
from .extra_losses import *  # noqa: F401,F403
from .extra_layers import *  # noqa: F401,F403
from .layers import *  # noqa: F401,F403
from .loss import *  # noqa: F401,F403
from .module import *  # noqa: F401,F403
from .norm_pool import *  # noqa: F401,F403
from .parameter import *  # noqa: F401,F403
from .rnn import *  # noqa: F401,F403
from .sparse_misc import *  # noqa: F401,F403
from .transformer import *  # noqa: F401,F403
from .serialization import load, save  # noqa: F401
from . import snn  # noqa: F401,E402  (after the layers it builds on)

from . import attention as _a, layers as _l, loss as _lo, module as _m, parameter as _p, rnn as _r
from . import conv_rnn_extra as _cr, extra_layers as _xly, extra_losses as _xl
from . import norm_pool as _nrm, transformer as _t
from . import sparse_misc as _sm

__all__ = ["functional", "init", "utils", "snn", "manual_seed", "save", "load",
           *_a.__all__, *_l.__all__, *_lo.__all__, *_m.__all__, *_p.__all__, *_r.__all__,
           *_cr.__all__, *_xly.__all__, *_xl.__all__, *_nrm.__all__, *_t.__all__,
           *_sm.__all__]
del _a, _cr, _l, _lo, _m, _nrm, _p, _r, _sm, _t, _xl, _xly
