"""Spiking neural networks written once against the grilly namespace (every device): neuron
layers, surrogate-gradient spike functions, encoders, readouts and losses, and STDP/Hebbian
plasticity. See docs/snn.md for the update equations."""
import sys as _sys

from . import backprop, base, functional, layer, learning, monitor, norse_compat, spikegen  # noqa: F401
from . import surrogate, utils  # noqa: F401
from .layer_online import OTTTLIFNode, SLTTLIFNode  # noqa: F401
from .containers import *  # noqa: F401,F403
from .encoding import *  # noqa: F401,F403
from . import nir_io  # noqa: F401
from .nir_io import NIRGraphModule, export_to_nir, import_from_nir  # noqa: F401
from .loss import *  # noqa: F401,F403
from .neurons import *  # noqa: F401,F403
from .plasticity import *  # noqa: F401,F403
from .sj_neurons import *  # noqa: F401,F403
from .sj_psn import *  # noqa: F401,F403
from .sj_glif import *  # noqa: F401,F403
from .snntorch_compat import *  # noqa: F401,F403
from .snntorch_lstm import *  # noqa: F401,F403
from .snntorch_new import *  # noqa: F401,F403

from . import containers as _c, encoding as _e, loss as _lo, neurons as _n, plasticity as _p
from . import sj_glif as _glif, sj_neurons as _sj, sj_psn as _psn, snntorch_compat as _st
from . import snntorch_lstm as _sl, snntorch_new as _stn

# Norse's API under its own names (LIF, LI, ... differ from grilly's): grilly.nn.snn.norse;
# its AdEx neurons and population encoding (norse_adex), LSNN and refractory neurons
# (norse_lsnn), Izhikevich (norse_izhikevich), LIFEx and IAF (norse_lifex), CobaLIF, LIFMC and
# Tsodyks-Markram (norse_coba), Lift and the small helpers (norse_misc), the correlation and
# STDP sensors and STDP (norse_stdp), RecurrentSequential, LConv2d and the spike-time decoder
# (norse_layers) and the receptive fields (norse_receptive), which build on norse_compat's
# helpers, join norse_compat's names here, so no module imports another both ways
from . import norse_adex as _na  # noqa: E402
from . import norse_izhikevich as _ni, norse_lifex as _nx, norse_lsnn as _nl  # noqa: E402
from . import norse_coba as _nc, norse_misc as _nm  # noqa: E402
from . import norse_layers as _nly, norse_stdp as _ns  # noqa: E402
from . import norse_receptive as _nrf  # noqa: E402
for _m in (_na, _nl, _ni, _nx, _nc, _nm, _ns, _nly, _nrf):
    for _name in _m.__all__:
        setattr(norse_compat, _name, getattr(_m, _name))
    norse_compat.__all__ = [*norse_compat.__all__, *_m.__all__]
del _name, _m, _ni, _nl, _nx, _nc, _nm, _ns, _nly, _nrf
norse = norse_compat
_sys.modules[__name__ + ".norse"] = norse_compat
# Norse's ``norse.torch.functional.lif_step`` / ``norse.torch.module.LIFCell`` spellings: the
# same flat namespace (``from grilly.nn.snn.norse.functional import lif_step`` works too)
for _sub in ("functional", "module"):
    setattr(norse_compat, _sub, norse_compat)
    _sys.modules[__name__ + ".norse." + _sub] = norse_compat
del _sub
# snnTorch's `from snntorch.export_nir import export_to_nir` / `snntorch.import_nir`
export_nir = import_nir = nir_io
_sys.modules[__name__ + ".export_nir"] = nir_io
_sys.modules[__name__ + ".import_nir"] = nir_io

__all__ = ["backprop", "base", "functional", "layer", "learning", "monitor", "norse",
           "norse_compat", "nir_io", "export_nir", "import_nir", "export_to_nir",
           "import_from_nir", "NIRGraphModule", "spikegen", "surrogate", "utils", "OTTTLIFNode",
           "SLTTLIFNode", *_c.__all__, *_e.__all__, *_lo.__all__, *_n.__all__, *_p.__all__,
           *_sj.__all__, *_psn.__all__, *_glif.__all__, *_st.__all__, *_sl.__all__, *_stn.__all__]
del _c, _e, _lo, _n, _p, _sj, _psn, _glif, _st, _sl, _stn

# snnTorch neurons without a grilly equivalent (none at present): a clear error rather than a
# bare AttributeError
_MISSING: dict = {}


def __getattr__(name):
    if name in _MISSING:
        raise AttributeError(f"grilly.nn.snn has no {name}: {_MISSING[name]}; see docs/snn.md")
    raise AttributeError(f"module 'grilly.nn.snn' has no attribute {name!r}")
