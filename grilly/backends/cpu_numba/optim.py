"""CPU kernels of the optim family: fused optimizer updates (docs/kernels/optim.md).

Each kernel reads the parameter, its gradient and its state once and writes the parameter and
the state in place, in one (parallel above a size threshold) loop, computing in the parameter's
dtype with the operations of the unfused rule in the same order (grilly/array/composites.py),
so float32 results equal the composition's. Hyperparameters come as Python numbers and are cast
to the dtype once per call. A buffer the kernel does not use is passed as None.
"""
from __future__ import annotations

import numpy as np

from . import jit
from .reductions import par, use_threads

# The per-element rules, written once and generated into a serial and a parallel loop (a call
# per element to a shared njit function is not inlined: 5-7x slower). i: the flat index.
_RULES = {
    "sgd": ("p, g, buf, lr, mom, damp1, wd, has_buf, nesterov, maximize, first", """
        gi = g[i]
        if maximize:
            gi = -gi
        pi = p[i]
        if wd != 0:
            gi = wd * pi + gi
        if has_buf:
            bi = gi if first else damp1 * gi + buf[i] * mom
            buf[i] = bi
            gi = mom * bi + gi if nesterov else bi
        p[i] = pi - lr * gi
"""),
    "adam": ("p, g, m, v, vmax, decay, c1, b2, c2, eps, wd, step_size, bc2, decoupled, amsgrad, "
             "maximize", """
        gi = g[i]
        if maximize:
            gi = -gi
        pi = p[i]
        if wd != 0:
            if decoupled:
                pi = pi * decay
            else:
                gi = wd * pi + gi
        mi = m[i]
        mi = c1 * (gi - mi) + mi
        vi = c2 * (gi * gi) + v[i] * b2
        m[i] = mi
        v[i] = vi
        if amsgrad:
            vx = vmax[i]
            if vi > vx or vi != vi:   # np.maximum: NaN wins
                vx = vi
            vmax[i] = vx
            vi = vx
        p[i] = pi - step_size * (mi / (np.sqrt(vi) / bc2 + eps))
"""),
    "rmsprop": ("p, g, sq, ga, buf, lr, alpha, c, eps, wd, mom, centered, has_buf, maximize", """
        gi = g[i]
        if maximize:
            gi = -gi
        pi = p[i]
        if wd != 0:
            gi = wd * pi + gi
        si = c * (gi * gi) + sq[i] * alpha
        sq[i] = si
        if centered:
            gai = ga[i]
            gai = c * (gi - gai) + gai
            ga[i] = gai
            avg = np.sqrt(si - gai * gai) + eps
        else:
            avg = np.sqrt(si) + eps
        if has_buf:
            bi = buf[i] * mom + gi / avg
            buf[i] = bi
            p[i] = pi - lr * bi
        else:
            p[i] = pi - lr * (gi / avg)
"""),
    "adagrad": ("p, g, s, clr, eps, wd, maximize", """
        gi = g[i]
        if maximize:
            gi = -gi
        pi = p[i]
        if wd != 0:
            gi = wd * pi + gi
        si = s[i] + gi * gi
        s[i] = si
        p[i] = pi - clr * (gi / (np.sqrt(si) + eps))
"""),
}

_LOOPS = '''
@njit(**_o)
def s_{rule}({args}):
    for i in range(p.shape[0]):{body}

@njit(parallel=True, **_o)
def p_{rule}({args}):
    for i in prange(p.shape[0]):{body}
'''

_HEADER = '''
import numpy as np
from numba import njit, prange

_o = dict(cache=True, nogil=True, error_model="numpy")
'''


_loaded: dict = {}


def _loops(rule: str) -> tuple:
    """The serial and parallel loops of ``rule`` (one generated module, compiled lazily)."""
    hit = _loaded.get(rule)
    if hit is None:
        src = _HEADER + "".join(_LOOPS.format(rule=r, args=a, body=b)
                                for r, (a, b) in _RULES.items())
        mod = jit.module("optim_steps", src)
        hit = _loaded[rule] = (getattr(mod, f"s_{rule}"), getattr(mod, f"p_{rule}"))
    return hit


# ---- host side: flat views, the dtype's scalars, serial or parallel --------------------------
_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))
# what an unused state slot is bound to (never read or written: its flag is off), per dtype
_UNUSED = {d: np.empty(1, d) for d in _DTYPES}


def _run(op: str, state: list, p: np.ndarray, g: np.ndarray, scalars: tuple,
         flags: tuple) -> None:
    """Run one update over flat views of ``p``, ``g`` and ``state`` (None: an unused slot).
    A strided parameter or state buffer is updated through a contiguous copy written back
    (parameters and optimizer state are contiguous in practice; gradients may be broadcasts)."""
    dt = p.dtype
    if dt not in _DTYPES:
        raise TypeError(f"{op}: the cpu kernel takes float32 or float64 buffers, got {p.dtype}")
    if g.dtype != dt or g.shape != p.shape:   # (g first, then the state, as before)
        raise ValueError(f"{op}: every buffer must have the parameter's shape {p.shape} and "
                         f"dtype {p.dtype}, got {g.shape} {g.dtype}")
    # one pass over the buffers: checked, made contiguous where strided, flattened (this runs
    # for every parameter of every step)
    shape, unused = p.shape, _UNUSED[dt]
    flat, back = [], None
    for b in (p, *state):
        if b is None:
            flat.append(unused)
            continue
        if b.dtype != dt or b.shape != shape:
            raise ValueError(f"{op}: every buffer must have the parameter's shape {p.shape} and "
                             f"dtype {p.dtype}, got {b.shape} {b.dtype}")
        if not b.flags.c_contiguous:
            w = np.ascontiguousarray(b)
            back = [(b, w)] if back is None else back + [(b, w)]   # written back below
            b = w
        flat.append(b.reshape(-1))
    gf = np.ascontiguousarray(g).reshape(-1)
    # (the scalars cast by map, in C: a comprehension costs a frame)
    args = (flat[0], gf, *flat[1:], *map(dt.type, scalars), *flags)
    n = p.size
    serial, parallel = _loops(op[:-5])
    if use_threads(n):
        par(parallel, n, n * p.itemsize * (2 + 2 * len(state)), *args)
    else:
        serial(*args)
    if back is not None:
        for b, w in back:
            np.copyto(b, w)


def sgd_step(p, g, buf, lr, momentum, dampening, weight_decay, nesterov, maximize,
             first) -> None:
    """SGD (momentum, dampening, Nesterov, L2 decay) in one pass, in place."""
    _run("sgd_step", [buf], p, g, (lr, momentum, 1.0 - dampening, weight_decay),
         (buf is not None, bool(nesterov), bool(maximize), bool(first)))


def adam_step(p, g, m, v, vmax, lr, beta1, beta2, eps, weight_decay, decoupled, maximize,
              step_size, bc2_sqrt) -> None:
    """Adam/AdamW (amsgrad when ``vmax`` is given) in one pass, in place."""
    _run("adam_step", [m, v, vmax], p, g,
         (1.0 - lr * weight_decay, 1.0 - beta1, beta2, 1.0 - beta2, eps, weight_decay,
          step_size, bc2_sqrt),
         (bool(decoupled), vmax is not None, bool(maximize)))


def rmsprop_step(p, g, square_avg, grad_avg, buf, lr, alpha, eps, weight_decay, momentum,
                 maximize) -> None:
    """RMSprop (centered when ``grad_avg`` is given, momentum when ``buf`` is) in one pass."""
    _run("rmsprop_step", [square_avg, grad_avg, buf], p, g,
         (lr, alpha, 1.0 - alpha, eps, weight_decay, momentum),
         (grad_avg is not None, buf is not None, bool(maximize)))


def adagrad_step(p, g, state_sum, clr, eps, weight_decay, maximize) -> None:
    """Adagrad (L2 decay; ``clr`` the decayed learning rate) in one pass, in place."""
    _run("adagrad_step", [state_sum], p, g, (clr, eps, weight_decay),
         (bool(maximize),))


# the serial and parallel loops of amp_unscale: one body
_UNSCALE_BODY = """
    bad = 0
    for i in {loop}(g.shape[0]):
        v = g[i]
        bad += 0 if np.isfinite(v) else 1
        g[i] = v * inv
    return bad
"""
_UNSCALE = (_HEADER + "\n@njit(**_o)\ndef s_unscale(g, inv):" + _UNSCALE_BODY.format(loop="range")
            + "\n@njit(parallel=True, **_o)\ndef p_unscale(g, inv):"
            + _UNSCALE_BODY.format(loop="prange"))


def amp_unscale(g: np.ndarray, found: np.ndarray, inv_scale: float) -> None:
    """GradScaler's unscale of one gradient in one pass: count its infs and NaNs (``found``
    becomes 1 if any) while multiplying it by ``inv_scale`` in place."""
    if g.dtype not in _DTYPES:
        raise TypeError(f"amp_unscale: the cpu kernel takes float32 or float64, got {g.dtype}")
    hit = _loaded.get("unscale")
    if hit is None:
        mod = jit.module("amp_unscale", _UNSCALE)
        hit = _loaded["unscale"] = (mod.s_unscale, mod.p_unscale)
    work = g if g.flags.c_contiguous else np.ascontiguousarray(g)
    flat, n = work.reshape(-1), g.size
    inv = g.dtype.type(inv_scale)
    bad = par(hit[1], n, 2 * n * g.itemsize, flat, inv) if use_threads(n) else hit[0](flat, inv)
    if work is not g:
        np.copyto(g, work)
    if bad:
        found[()] = 1


KERNELS = {"sgd_step": sgd_step, "adam_step": adam_step, "rmsprop_step": rmsprop_step,
           "adagrad_step": adagrad_step, "amp_unscale": amp_unscale}
