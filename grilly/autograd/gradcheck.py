"""Check VJP rules against central finite differences (float64, on the host's numbers)."""
from __future__ import annotations

import numpy as np

from ..array.array import Array
from ..array.creation import asarray
from . import mode
from .tape import grad

__all__ = ["gradcheck"]


def _outputs(out) -> list:
    return [out] if isinstance(out, Array) else [o for o in out if isinstance(o, Array)]


def gradcheck(fn, inputs, *, eps: float = 1e-6, atol: float = 1e-6, rtol: float = 1e-4,
              seed: int = 0, raise_exception: bool = True) -> bool:
    """Compare the reverse-mode gradient of ``sum(v * fn(*inputs))`` (v random) with central
    differences, element by element of every float input; True when they agree."""
    inputs = tuple(inputs)
    diff = [i for i, x in enumerate(inputs) if isinstance(x, Array) and x.dtype.kind == "f"]
    if not diff:
        raise ValueError("gradcheck: no floating-point Array among the inputs")
    rng = np.random.default_rng(seed)
    leaves = list(inputs)
    for i in diff:
        x = inputs[i]
        leaves[i] = asarray(np.asarray(x), device=x.device)
        leaves[i].requires_grad = True
    with mode.enable_grad():
        outs = _outputs(fn(*leaves))
    vs = [asarray(rng.standard_normal(o.shape).astype(np.asarray(o).dtype), device=o.device)
          for o in outs]
    used = [o for o in outs if o.requires_grad]
    if not used:
        raise ValueError("gradcheck: fn's output does not depend on the inputs")
    gos = [v for o, v in zip(outs, vs) if o.requires_grad]
    analytic = grad(used, [leaves[i] for i in diff], grad_outputs=gos, allow_unused=True)

    def proj(args) -> float:
        with mode.no_grad():
            os_ = _outputs(fn(*args))
        return sum(float(np.sum(np.asarray(o) * np.asarray(v))) for o, v in zip(os_, vs))

    for k, i in enumerate(diff):
        x = np.asarray(inputs[i])
        num = np.zeros(x.shape)
        flat = x.reshape(-1)
        for j in range(flat.size):
            args = list(inputs)
            for sgn in (1.0, -1.0):
                xp = flat.copy()
                xp[j] += sgn * eps
                args[i] = asarray(xp.reshape(x.shape), device=inputs[i].device)
                num.reshape(-1)[j] += sgn * proj(args)
        num /= 2 * eps
        a = np.zeros(x.shape) if analytic[k] is None else np.asarray(analytic[k])
        if not np.allclose(a, num, rtol=rtol, atol=atol, equal_nan=True):
            if raise_exception:
                raise AssertionError(f"gradcheck: input {i}: analytic {a.ravel()[:8]} vs "
                                     f"numerical {num.ravel()[:8]} (max abs diff "
                                     f"{np.max(np.abs(a - num)):.3g})")
            return False
    return True
