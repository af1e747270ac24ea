"""``torch.nn.utils`` spellings: gradient clipping and norms (``clip_grad``), flattening
parameters to one vector and back (``convert_parameters``), ``rnn`` (padded and packed
sequences), ``parametrize`` / ``parametrizations``, the legacy ``weight_norm`` and
``spectral_norm`` hooks, conv/linear + BatchNorm ``fusion``, ``stateless.functional_call``,
``skip_init`` and ``prune``. See docs/nn.md ("nn.utils")."""
from __future__ import annotations

from . import (clip_grad, convert_parameters, fusion, init, parametrizations, parametrize, prune,
               rnn, stateless)
from .clip_grad import (clip_grad_norm, clip_grad_norm_, clip_grad_value_, clip_grads_with_norm_,
                        get_total_norm)
from .convert_parameters import parameters_to_vector, vector_to_parameters
from .fusion import (fuse_conv_bn_eval, fuse_conv_bn_weights, fuse_linear_bn_eval,
                     fuse_linear_bn_weights)
from .init import skip_init
from .spectral_norm import remove_spectral_norm, spectral_norm
from .weight_norm import remove_weight_norm, weight_norm

__all__ = ["clip_grad", "clip_grad_norm", "clip_grad_norm_", "clip_grad_value_",
           "clip_grads_with_norm_", "convert_parameters", "fuse_conv_bn_eval",
           "fuse_conv_bn_weights", "fuse_linear_bn_eval", "fuse_linear_bn_weights", "fusion",
           "get_total_norm", "init", "parameters_to_vector", "parametrizations", "parametrize",
           "prune",
           "remove_spectral_norm", "remove_weight_norm", "rnn", "skip_init", "spectral_norm",
           "stateless", "vector_to_parameters", "weight_norm"]
