"""Helpers the Norse-oracle test files share: grilly and torch arrays from one numpy value,
and comparisons of values and (nested) state tuples."""
import numpy as np
import torch

import grilly as gp

STOL = dict(rtol=1e-5, atol=2e-5)   # states: float32, Norse's and the kernels' rounding
GTOL = dict(rtol=1e-4, atol=1e-5)   # gradients, summed over steps in float32


def _np(a):
    return np.asarray(a.to_device("cpu"))


def _g(a, device, grad=False):
    x = gp.asarray(np.asarray(a, dtype=np.float32), device=device)
    return x.requires_grad_() if grad else x


def _t(a, grad=False):
    return torch.tensor(np.asarray(a, dtype=np.float32), requires_grad=grad)


def _same(mine, ref, tol=STOL):
    np.testing.assert_allclose(_np(mine), ref.detach().numpy(), **tol)


def _states_same(sg, st, tol=STOL):
    """Every field of a (possibly nested) state named tuple."""
    assert type(sg)._fields == type(st)._fields
    for a, b in zip(sg, st):
        if isinstance(b, tuple):
            _states_same(a, b, tol)
        else:
            _same(a, b, tol)
