"""Surrogate spike functions: the forward is the Heaviside step, spike = 1 where x > 0 (snnTorch's
convention; SpikingJelly spikes at x >= 0, which differs only at exactly 0), and the backward
replaces the step's zero/infinite derivative with a smooth bump (Neftci, Mostafa & Zenke 2019).

Each factory returns a ``Surrogate`` object; calling it on an Array spikes with that backward:

    spk = atan(alpha=2.0)(mem - threshold)

The derivatives (what backward multiplies the incoming gradient by), as in snnTorch/SpikingJelly:
- fast_sigmoid(slope=25):  1 / (slope |x| + 1)^2
- atan(alpha=2):           (alpha / 2) / (1 + (pi/2 alpha x)^2)
- sigmoid(slope=25):       slope s (1 - s), s = sigmoid(slope x)
- triangle(width=1):       max(0, 1 - |x| / width) / width
- straight_through():      1
- triangular(threshold=1): threshold where x < 0, -threshold where x >= 0 (snnTorch's
  ``triangular``, a sign-flipping rule kept for ports; ``triangle`` is the usual bump)

snnTorch's and SpikingJelly's names for the same functions are aliases:
``straight_through_estimator`` (snnTorch), ``ATan(alpha=2)`` and ``Sigmoid(alpha=4)``
(SpikingJelly's classes, with SpikingJelly's defaults). SpikingJelly's ``PiecewiseQuadratic``,
``SoftSign``, ``Erf`` and ``PiecewiseLeakyReLU`` have the derivatives its backward computes
(these run per step, not in the fused kernels). snnTorch's ``heaviside()`` (derivative: the
spike), ``spike_rate_escape(beta, slope)``, ``SFS(slope, B)``, ``LSO(slope)``, ``SSO(mean, variance)``
and ``custom_surrogate(fn)`` (backward ``fn(input_, grad_input, spikes)``) run per step too.
"""
from __future__ import annotations

import math

from ... import random as _random
from ...array import api as gp

from ...array.array import Array
from ...autograd.function import Function

__all__ = ["Surrogate", "fast_sigmoid", "atan", "sigmoid", "triangle", "straight_through",
           "heaviside", "triangular", "straight_through_estimator", "ATan", "Sigmoid",
           "PiecewiseQuadratic", "SoftSign", "Erf", "PiecewiseLeakyReLU", "custom_surrogate",
           "spike_rate_escape", "SFS", "LSO", "SSO", "PiecewiseExp", "SuperSpike",
           "NonzeroSignLogAbs", "SquarewaveFourierSeries", "S2NN", "QPseudoSpike", "LeakyKReLU",
           "FakeNumericalGradient", "LogTailedReLU", "DeterministicPass", "Rect"]


def heaviside(x: Array | None = None):
    """The step without a gradient: 1 where x > 0 else 0, in x's dtype. Called without ``x``,
    snnTorch's ``surrogate.heaviside()``: a Surrogate whose derivative is the spike itself
    (1 where x > 0, else 0)."""
    if x is None:
        return _Heaviside()
    return gp.astype(x > 0, x.dtype)


class _Spike(Function):
    """Heaviside forward; backward ``g * surrogate.grad(x)``."""

    @staticmethod
    def forward(ctx, x, *, sg):
        ctx.save_for_backward(x)
        ctx.sg = sg
        return heaviside(x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * ctx.sg.grad(x)


class Surrogate:
    """A spike function: Heaviside forward, ``grad(x)`` as its backward derivative."""

    name = "surrogate"

    def __call__(self, x: Array) -> Array:
        """Spikes (1 where x > 0) whose gradient is ``grad(x)``."""
        if not isinstance(x, gp.Array) or not gp.isdtype(x.dtype, "real floating"):
            raise TypeError(f"{self.name}: expected a real floating grilly Array, got "
                            f"{getattr(x, 'dtype', type(x).__name__)}")
        return _Spike.apply(x, sg=self)

    def grad(self, x: Array) -> Array:
        """The surrogate derivative at ``x``."""
        raise NotImplementedError(f"{self.name}: subclasses define grad(x)")

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v}" for k, v in vars(self).items())
        return f"{self.name}({args})"


def _positive(v, what: str, op: str) -> float:
    v = float(v)
    if not v > 0:
        raise ValueError(f"{op}: {what} must be > 0, got {v}")
    return v


class _FastSigmoid(Surrogate):
    name = "fast_sigmoid"

    def __init__(self, slope: float):
        self.slope = _positive(slope, "slope", self.name)

    def grad(self, x):
        return 1.0 / gp.square(self.slope * gp.abs(x) + 1.0)


class _ATan(Surrogate):
    name = "atan"

    def __init__(self, alpha: float):
        self.alpha = _positive(alpha, "alpha", self.name)

    def grad(self, x):
        return (self.alpha / 2) / (1.0 + gp.square((math.pi / 2 * self.alpha) * x))


class _Sigmoid(Surrogate):
    name = "sigmoid"

    def __init__(self, slope: float):
        self.slope = _positive(slope, "slope", self.name)

    @property
    def alpha(self) -> float:
        """SpikingJelly's name for the slope."""
        return self.slope

    def grad(self, x):
        # s (1 - s) = 1 / (e^(z/2) + e^(-z/2))^2: no overflow to inf/inf for large |z|
        h = (self.slope / 2) * x
        return self.slope / gp.square(gp.exp(h) + gp.exp(-h))


class _Triangle(Surrogate):
    name = "triangle"

    def __init__(self, width: float):
        self.width = _positive(width, "width", self.name)

    def grad(self, x):
        return gp.maximum(1.0 - gp.abs(x) / self.width, 0.0) / self.width


class _StraightThrough(Surrogate):
    name = "straight_through"

    def grad(self, x):
        return gp.ones_like(x)


class _Triangular(Surrogate):
    name = "triangular"

    def __init__(self, threshold: float):
        self.threshold = _positive(threshold, "threshold", self.name)

    def grad(self, x):
        return self.threshold - (2.0 * self.threshold) * gp.astype(x >= 0, x.dtype)


class _PiecewiseQuadratic(Surrogate):
    name = "PiecewiseQuadratic"

    def __init__(self, alpha: float):
        self.alpha = _positive(alpha, "alpha", self.name)

    def grad(self, x):
        a = self.alpha
        return gp.maximum(a - (a * a) * gp.abs(x), 0.0)


class _SoftSign(Surrogate):
    name = "SoftSign"

    def __init__(self, alpha: float):
        self.alpha = _positive(alpha, "alpha", self.name)

    def grad(self, x):
        a = self.alpha
        return 1.0 / ((2.0 * a) * gp.square(1.0 / a + gp.abs(x)))


class _Erf(Surrogate):
    name = "Erf"

    def __init__(self, alpha: float):
        self.alpha = _positive(alpha, "alpha", self.name)

    def grad(self, x):
        a = self.alpha
        return (a / math.sqrt(math.pi)) * gp.exp(-gp.square(a * x))


class _PiecewiseLeakyReLU(Surrogate):
    name = "PiecewiseLeakyReLU"

    def __init__(self, w: float, c: float):
        self.w = _positive(w, "w", self.name)
        self.c = float(c)

    def grad(self, x):
        inside = gp.astype(gp.abs(x) < self.w, x.dtype)
        return self.c + (1.0 / (2.0 * self.w) - self.c) * inside


class _Heaviside(Surrogate):
    name = "heaviside"

    def grad(self, x):
        return gp.astype(x > 0, x.dtype)


class _SpikeRateEscape(Surrogate):
    name = "spike_rate_escape"

    def __init__(self, beta: float, slope: float):
        self.beta, self.slope = float(beta), float(slope)

    def grad(self, x):
        return self.slope * gp.exp(-self.beta * gp.abs(x - 1.0))


class _SparseFastSigmoid(Surrogate):
    name = "SFS"

    def __init__(self, slope: float, B: float):  # noqa: N803  (snnTorch's name)
        self.slope = _positive(slope, "slope", self.name)
        self.B = float(B)

    def grad(self, x):
        return gp.astype(x > self.B, x.dtype) / gp.square(self.slope * gp.abs(x) + 1.0)


class _LeakySpike(Surrogate):
    name = "LSO"

    def __init__(self, slope: float):
        self.slope = float(slope)

    def grad(self, x):
        return gp.where(x > 0, 1.0, self.slope)


class _StochasticSpike(Surrogate):
    name = "SSO"

    def __init__(self, mean: float, variance: float):
        self.mean, self.variance = float(mean), float(variance)

    def grad(self, x):
        # below threshold: fresh uniform noise per element and backward, from gp.random's
        # default generator (snnTorch draws torch.rand_like)
        # (float32 draws for the half dtypes, which gp.random does not draw in)
        d = gp.float64 if x.dtype == gp.float64 else gp.float32
        u = _random.default_generator.random(x.shape, dtype=d, device=x.device)
        noise = gp.astype((u - 0.5 + self.mean) * self.variance, x.dtype)
        return gp.where(x > 0, gp.ones_like(x), noise)


class _CustomSpike(Function):
    """Heaviside forward; backward ``fn(x, g, spikes)`` (snnTorch's CustomSurrogate)."""

    @staticmethod
    def forward(ctx, x, *, fn):
        out = heaviside(x)
        ctx.save_for_backward(x, out)
        ctx.fn = fn
        return out

    @staticmethod
    def backward(ctx, g):
        x, out = ctx.saved_tensors
        return ctx.fn(x, g, out)


class _Custom(Surrogate):
    name = "custom_surrogate"

    def __init__(self, fn):
        if not callable(fn):
            raise TypeError(f"custom_surrogate: custom_surrogate_function must be callable "
                            f"(input_, grad_input, spikes) -> grad, got {type(fn).__name__}")
        self.fn = fn

    def __call__(self, x: Array) -> Array:
        """Spikes (1 where x > 0) whose gradient is ``fn(x, grad_output, spikes)``."""
        if not isinstance(x, gp.Array) or not gp.isdtype(x.dtype, "real floating"):
            raise TypeError(f"{self.name}: expected a real floating grilly Array, got "
                            f"{getattr(x, 'dtype', type(x).__name__)}")
        return _CustomSpike.apply(x, fn=self.fn)

    def grad(self, x):
        # the user's function needs the incoming gradient and the spikes: see __call__
        raise NotImplementedError("custom_surrogate: the derivative is fn(x, grad, spikes), "
                                  "applied by calling the surrogate")


def custom_surrogate(custom_surrogate_function) -> Surrogate:
    """snnTorch's ``surrogate.custom_surrogate(fn)``: Heaviside spikes whose backward returns
    ``fn(input_, grad_input, spikes)`` (grilly Arrays; fn computes the input's gradient)."""
    return _Custom(custom_surrogate_function)


def spike_rate_escape(beta: float = 1.0, slope: float = 25.0) -> Surrogate:
    """snnTorch's ``surrogate.spike_rate_escape``: derivative slope exp(-beta |x - 1|)."""
    return _SpikeRateEscape(beta, slope)


def SFS(slope: float = 25.0, B: float = 1.0) -> Surrogate:  # noqa: N802, N803  (snnTorch's)
    """snnTorch's ``surrogate.SFS`` (sparse fast sigmoid): derivative 1 / (slope |x| + 1)^2
    where x > B, else 0."""
    return _SparseFastSigmoid(slope, B)


def LSO(slope: float = 0.1) -> Surrogate:  # noqa: N802  (snnTorch's)
    """snnTorch's ``surrogate.LSO`` (leaky spike operator): derivative 1 where x > 0, else
    ``slope`` (snnTorch 1.0's factory fails when called; this is its LeakySpikeOperator)."""
    return _LeakySpike(slope)


def SSO(mean: float = 0.0, variance: float = 0.2) -> Surrogate:  # noqa: N802  (snnTorch's)
    """snnTorch's ``surrogate.SSO`` (stochastic spike operator): derivative 1 where x > 0,
    else (U - 1/2 + mean) variance with U ~ Uniform[0, 1) drawn anew on every backward."""
    return _StochasticSpike(mean, variance)


def fast_sigmoid(slope: float = 25.0) -> Surrogate:
    """Heaviside spike with derivative 1 / (slope |x| + 1)^2 (snnTorch's fast_sigmoid)."""
    return _FastSigmoid(slope)


def atan(alpha: float = 2.0) -> Surrogate:
    """Heaviside spike with derivative (alpha/2) / (1 + (pi/2 alpha x)^2) (snnTorch's default)."""
    return _ATan(alpha)


def sigmoid(slope: float = 25.0) -> Surrogate:
    """Heaviside spike with the logistic derivative slope s (1 - s), s = sigmoid(slope x)."""
    return _Sigmoid(slope)


def triangle(width: float = 1.0) -> Surrogate:
    """Heaviside spike with the triangular derivative max(0, 1 - |x|/width) / width."""
    return _Triangle(width)


def straight_through() -> Surrogate:
    """Heaviside spike whose backward passes the gradient unchanged."""
    return _StraightThrough()


def triangular(threshold: float = 1.0) -> Surrogate:
    """snnTorch's ``triangular``: Heaviside spike whose backward multiplies the gradient by
    ``threshold`` where x < 0 and by ``-threshold`` where x >= 0 (as snnTorch 1.0 computes it;
    for the usual triangular bump use ``triangle``)."""
    return _Triangular(threshold)


def straight_through_estimator() -> Surrogate:
    """snnTorch's name for ``straight_through()``."""
    return _StraightThrough()


def ATan(alpha: float = 2.0, spiking: bool = True) -> Surrogate:  # noqa: N802  (SpikingJelly's)
    """SpikingJelly's ``surrogate.ATan(alpha=2)``: the same function as ``atan(alpha)``."""
    _spiking(spiking, "ATan")
    return _ATan(alpha)


def Sigmoid(alpha: float = 4.0, spiking: bool = True) -> Surrogate:  # noqa: N802  (SpikingJelly's)
    """SpikingJelly's ``surrogate.Sigmoid(alpha=4)`` (its default slope): ``sigmoid(alpha)``."""
    _spiking(spiking, "Sigmoid")
    return _Sigmoid(alpha)


def PiecewiseQuadratic(alpha: float = 1.0, spiking: bool = True) -> Surrogate:  # noqa: N802
    """SpikingJelly's ``surrogate.PiecewiseQuadratic``: derivative max(alpha - alpha^2 |x|, 0)."""
    _spiking(spiking, "PiecewiseQuadratic")
    return _PiecewiseQuadratic(alpha)


def SoftSign(alpha: float = 2.0, spiking: bool = True) -> Surrogate:  # noqa: N802
    """SpikingJelly's ``surrogate.SoftSign``: derivative 1 / (2 alpha (1/alpha + |x|)^2)."""
    _spiking(spiking, "SoftSign")
    return _SoftSign(alpha)


def Erf(alpha: float = 2.0, spiking: bool = True) -> Surrogate:  # noqa: N802
    """SpikingJelly's ``surrogate.Erf``: derivative alpha / sqrt(pi) exp(-(alpha x)^2)."""
    _spiking(spiking, "Erf")
    return _Erf(alpha)


def PiecewiseLeakyReLU(w: float = 1.0, c: float = 0.01,  # noqa: N802
                       spiking: bool = True) -> Surrogate:
    """SpikingJelly's ``surrogate.PiecewiseLeakyReLU``: derivative 1/(2w) where |x| < w, else c."""
    _spiking(spiking, "PiecewiseLeakyReLU")
    return _PiecewiseLeakyReLU(w, c)


class _SJAlpha(Surrogate):
    """SpikingJelly surrogates of one positive ``alpha``: ``grad`` from ``_d(x, alpha)``."""

    def __init__(self, alpha: float):
        self.alpha = _positive(alpha, "alpha", self.name)


class _PiecewiseExp(_SJAlpha):
    name = "PiecewiseExp"

    def grad(self, x):
        return (self.alpha / 2.0) * gp.exp(-self.alpha * gp.abs(x))


class _SuperSpike(_SJAlpha):
    name = "SuperSpike"

    def grad(self, x):
        return self.alpha / gp.square(gp.abs(x) + 1.0)


class _NonzeroSignLogAbs(_SJAlpha):
    name = "NonzeroSignLogAbs"

    def grad(self, x):
        return 1.0 / (1.0 / self.alpha + gp.abs(x))


class _Rect(_SJAlpha):
    name = "Rect"

    def grad(self, x):
        return self.alpha * gp.astype(gp.abs(x) < 0.5 / self.alpha, x.dtype)


class _QPseudoSpike(Surrogate):
    name = "QPseudoSpike"

    def __init__(self, alpha: float):
        self.alpha = float(alpha)
        if not self.alpha > 1:
            raise ValueError(f"{self.name}: alpha must be > 1 (the q of q-PseudoSpike), got "
                             f"{self.alpha}")

    def grad(self, x):
        return gp.pow(1.0 + (2.0 / (self.alpha - 1.0)) * gp.abs(x), -self.alpha)


class _SquarewaveFourierSeries(Surrogate):
    name = "SquarewaveFourierSeries"

    def __init__(self, n: int, T_period: float):  # noqa: N803  (SpikingJelly's name)
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"{self.name}: n must be an int >= 1, got {n!r}")
        self.n, self.T_period = n, _positive(T_period, "T_period", self.name)

    def grad(self, x):
        # the derivative of the series' first n - 1 odd harmonics (SpikingJelly's sum)
        w = 2.0 * math.pi / self.T_period
        d = gp.zeros_like(x)
        for i in range(1, self.n):
            d = d + gp.cos(((2 * i - 1) * w) * x)
        return d * (4.0 / self.T_period)


class _S2NN(Surrogate):
    name = "S2NN"

    def __init__(self, alpha: float, beta: float):
        self.alpha = _positive(alpha, "alpha", self.name)
        self.beta = float(beta)

    def grad(self, x):
        neg = x < 0
        h = (self.alpha / 2) * x
        left = self.alpha / gp.square(gp.exp(h) + gp.exp(-h))
        # beta / (x + 1) only where x >= 0 (kept finite elsewhere: x + 1 may be 0 there)
        right = self.beta / gp.where(neg, gp.ones_like(x), x + 1.0)
        return gp.where(neg, left, right)


class _LeakyKReLU(Surrogate):
    name = "LeakyKReLU"

    def __init__(self, leak: float, k: float):
        self.leak, self.k = float(leak), float(k)

    def grad(self, x):
        return gp.where(x >= 0, gp.full_like(x, self.k), gp.full_like(x, self.leak))


class _FakeNumericalGradient(_SJAlpha):
    name = "FakeNumericalGradient"

    def grad(self, x):
        # sign(x) / x clamped at alpha from above: 1 / |x|, and alpha at x = 0 (1/0 = inf)
        safe = gp.where(x == 0, gp.ones_like(x), gp.abs(x))
        return gp.where(x == 0, gp.full_like(x, self.alpha),
                        gp.minimum(1.0 / safe, self.alpha))


class _LogTailedReLU(Surrogate):
    name = "LogTailedReLU"

    def __init__(self, alpha: float):
        self.alpha = float(alpha)

    def grad(self, x):
        big = x > 1.0
        tail = 1.0 / gp.where(big, x, gp.ones_like(x))
        return gp.where(x <= 0, gp.full_like(x, self.alpha), tail)


def _spiking(spiking, op: str) -> None:
    # SpikingJelly's spiking=False forward is the primitive (a smooth activation, no spikes)
    if spiking is not True:
        raise NotImplementedError(f"{op}: spiking={spiking!r} (the primitive function's forward) "
                                  "is not supported; spiking=True only")


def PiecewiseExp(alpha: float = 1.0, spiking: bool = True) -> Surrogate:  # noqa: N802
    """SpikingJelly's ``surrogate.PiecewiseExp``: derivative alpha/2 exp(-alpha |x|)."""
    _spiking(spiking, "PiecewiseExp")
    return _PiecewiseExp(alpha)


def SuperSpike(alpha: float = 1.0, spiking: bool = True) -> Surrogate:  # noqa: N802
    """SpikingJelly's ``surrogate.SuperSpike``: derivative alpha / (|x| + 1)^2."""
    _spiking(spiking, "SuperSpike")
    return _SuperSpike(alpha)


def NonzeroSignLogAbs(alpha: float = 1.0, spiking: bool = True) -> Surrogate:  # noqa: N802
    """SpikingJelly's ``surrogate.NonzeroSignLogAbs``: derivative 1 / (1/alpha + |x|)."""
    _spiking(spiking, "NonzeroSignLogAbs")
    return _NonzeroSignLogAbs(alpha)


def SquarewaveFourierSeries(n: int = 2, T_period: float = 8.0,  # noqa: N802, N803
                            spiking: bool = True) -> Surrogate:
    """SpikingJelly's ``surrogate.SquarewaveFourierSeries``: derivative 4/T sum_{i<n}
    cos((2i - 1) 2 pi x / T)."""
    _spiking(spiking, "SquarewaveFourierSeries")
    return _SquarewaveFourierSeries(n, T_period)


def S2NN(alpha: float = 4.0, beta: float = 1.0, spiking: bool = True) -> Surrogate:  # noqa: N802
    """SpikingJelly's ``surrogate.S2NN``: derivative alpha s (1 - s) (s = sigmoid(alpha x))
    for x < 0, beta / (x + 1) for x >= 0."""
    _spiking(spiking, "S2NN")
    return _S2NN(alpha, beta)


def QPseudoSpike(alpha: float = 2.0, spiking: bool = True) -> Surrogate:  # noqa: N802
    """SpikingJelly's ``surrogate.QPseudoSpike``: derivative (1 + 2|x| / (alpha - 1))^-alpha."""
    _spiking(spiking, "QPseudoSpike")
    return _QPseudoSpike(alpha)


def LeakyKReLU(leak: float = 0.0, k: float = 1.0, spiking: bool = True) -> Surrogate:  # noqa: N802
    """SpikingJelly's ``surrogate.LeakyKReLU``: derivative k for x >= 0, leak for x < 0."""
    _spiking(spiking, "LeakyKReLU")
    return _LeakyKReLU(leak, k)


def FakeNumericalGradient(alpha: float = 0.3) -> Surrogate:  # noqa: N802
    """SpikingJelly's ``surrogate.FakeNumericalGradient``: derivative min(1 / |x|, alpha)."""
    return _FakeNumericalGradient(alpha)


def LogTailedReLU(alpha: float = 0.0, spiking: bool = True) -> Surrogate:  # noqa: N802
    """SpikingJelly's ``surrogate.LogTailedReLU``: derivative alpha for x <= 0, 1 up to x = 1,
    1 / x beyond."""
    _spiking(spiking, "LogTailedReLU")
    return _LogTailedReLU(alpha)


def DeterministicPass(spiking: bool = True) -> Surrogate:  # noqa: N802
    """SpikingJelly's ``surrogate.DeterministicPass``: the straight-through estimator."""
    _spiking(spiking, "DeterministicPass")
    return _StraightThrough()


def Rect(alpha: float = 1.0, spiking: bool = True) -> Surrogate:  # noqa: N802
    """SpikingJelly's ``surrogate.Rect``: derivative alpha where |x| < 0.5 / alpha, else 0."""
    _spiking(spiking, "Rect")
    return _Rect(alpha)


_FACTORIES = (fast_sigmoid, atan, sigmoid, triangle, straight_through, triangular,
              straight_through_estimator, ATan, Sigmoid, PiecewiseQuadratic, SoftSign, Erf,
              PiecewiseLeakyReLU, custom_surrogate, spike_rate_escape, SFS, LSO, SSO, PiecewiseExp,
              SuperSpike, NonzeroSignLogAbs, SquarewaveFourierSeries, S2NN, QPseudoSpike,
              LeakyKReLU, FakeNumericalGradient, LogTailedReLU, DeterministicPass, Rect)


def check_surrogate(surrogate, op: str):
    """``surrogate`` if it can be a layer's spike function; a TypeError naming ``op`` for a
    factory passed uncalled (``surrogate=atan``) or another library's surrogate (snnTorch's
    and SpikingJelly's run on torch tensors, not on grilly Arrays)."""
    if any(surrogate is f for f in _FACTORIES):
        raise TypeError(f"{op}: surrogate={surrogate.__name__} is the factory; call it for a "
                        f"surrogate, e.g. surrogate={surrogate.__name__}()")
    if isinstance(surrogate, Surrogate):
        return surrogate
    mod = (getattr(type(surrogate), "__module__", "") or "").split(".")[0]
    fmod = (getattr(surrogate, "__module__", "") or "").split(".")[0]
    if {mod, fmod} & {"torch", "snntorch", "spikingjelly", "norse"}:
        raise TypeError(f"{op}: surrogate is a {mod if mod != 'builtins' else fmod} spike "
                        "function (it runs on torch tensors); use grilly.nn.snn.surrogate's "
                        "(atan, fast_sigmoid, sigmoid, triangle, straight_through, triangular, "
                        "ATan, Sigmoid, ...)")
    if not callable(surrogate):
        raise TypeError(f"{op}: surrogate must be a Surrogate (or a callable spike function), "
                        f"got {type(surrogate).__name__}")
    return surrogate
