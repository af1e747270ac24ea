"""Norse 1.1's receptive fields (``norse.torch.functional.receptive_field`` and
``norse.torch.module.receptive_field``) on grilly Arrays: Lindeberg's scale-space kernels, a
normalized anisotropic Gaussian of a given scale, angle and ratio and its scale-normalized
directional derivatives, as convolution weights (``SpatialReceptiveField2d`` and its sampled and
per-kernel parameterized forms), and ``TemporalReceptiveField`` (leaky integrators at several
time scales). The names are re-exported by ``grilly.nn.snn.norse``.

A field with parameters (scale s, angle phi, ratio r, dx, dy) on a size x size grid over
[-domain, domain]^2 (x along the columns, y along the rows, Norse's ``meshgrid(indexing="xy")``):

    C = s R(phi) diag(r^2, 1/r^2) R(phi)^T;  k = exp(-p^T C^-1 p / 2) / sum(...)
    D_theta k = cos(theta) d_rows k + sin(theta) d_cols k   (``torch.gradient``'s differences)
    field = (|s| D_phi)^dx then (|s| D_{phi + pi/2})^dy, interleaved as Norse applies them.
"""
from __future__ import annotations

import math
import numbers
from typing import Callable, NamedTuple

import numpy as np

from ...array import api as gp
from ...array.array import Array
from .. import functional as NF
from ..module import Module
from ..parameter import Parameter
from .checks import _check_input
from .norse_compat import LIBoxCell, LIBoxParameters

__all__ = ["gaussian_kernel", "covariance_matrix", "derive_kernel", "calculate_normalization",
           "derive_spatial_receptive_field_single", "derive_spatial_receptive_field",
           "spatial_receptive_field", "spatial_parameters",
           "spatial_receptive_fields_with_derivatives", "temporal_scale_distribution",
           "SpatialReceptiveField2d", "SampledSpatialReceptiveField2d",
           "ParameterizedSpatialReceptiveField2d", "TemporalReceptiveField"]


# ---- helpers ---------------------------------------------------------------------------------

def _size(size, op: str) -> int:
    if isinstance(size, bool) or not isinstance(size, numbers.Integral) or size < 2:
        # torch.gradient needs two samples per axis
        raise ValueError(f"{op}: size must be an int >= 2, got {size!r}")
    return int(size)


def _real(v, op: str, name: str) -> float:
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        raise TypeError(f"{op}: {name} must be a real number, got {type(v).__name__}")
    return float(v)


def _like(v, ref: Array | None, op: str, name: str) -> Array:
    """``v`` (a number or a real floating Array) as an Array on ``ref``'s device and dtype
    (float32 without a reference, Norse's default)."""
    if isinstance(v, Array):
        return _check_input(v, op, name)
    _real(v, op, name)
    if ref is None:
        return gp.asarray(v, dtype=gp.float32)
    return gp.asarray(v, dtype=ref.dtype, device=ref.device)


def _first_array(*vs) -> Array | None:
    return next((v for v in vs if isinstance(v, Array)), None)


def _order(v, op: str, name: str) -> int:
    """A derivative order as Norse reads it (``int()``, truncating); negative is an error."""
    try:
        k = int(v)
    except (TypeError, ValueError):
        raise TypeError(f"{op}: {name} must be a number, got {type(v).__name__}") from None
    if k < 0:
        raise ValueError(f"{op}: {name} must be >= 0, got {v!r}")
    return k


def _grid(size: int, domain: float, ref: Array) -> tuple:
    """(x, y), each (size, size): x varies along the columns, y along the rows."""
    a = gp.linspace(-domain, domain, size, dtype=ref.dtype, device=ref.device)
    return gp.reshape(a, (1, size)), gp.reshape(a, (size, 1))


def _derive(k: Array, angle: Array) -> Array:
    """Norse's ``derive_kernel`` on the last two axes of k: cos(angle) times the difference
    along the rows plus sin(angle) times the one along the columns."""
    nd = k.ndim
    return (gp.gradient(k, axis=nd - 2) * gp.cos(angle)
            + gp.gradient(k, axis=nd - 1) * gp.sin(angle))


# ---- functional ------------------------------------------------------------------------------

def gaussian_kernel(size: int, c: Array, domain: float = 8) -> Array:
    """Norse's ``gaussian_kernel``: the (size, size) density of N(0, c) for a 2x2 covariance
    ``c``, sampled on [-domain, domain]^2 (not normalized to sum 1)."""
    op = "gaussian_kernel"
    size, domain = _size(size, op), _real(domain, op, "domain")
    c = _check_input(c, op, "c")
    if tuple(c.shape) != (2, 2):
        raise ValueError(f"{op}: c must be a 2x2 covariance matrix, got shape {tuple(c.shape)}")
    x, y = _grid(size, domain, c)
    det = c[0, 0] * c[1, 1] - c[0, 1] * c[1, 0]
    # p^T C^-1 p with C^-1 = [[c11, -c01], [-c10, c00]] / det (both off-diagonals, as Norse's
    # einsum uses the inverse as given)
    q = (c[1, 1] * x * x - (c[0, 1] + c[1, 0]) * x * y + c[0, 0] * y * y) / det
    return gp.exp(-0.5 * q) / (2 * math.pi * gp.sqrt(det))


def covariance_matrix(sigma1, sigma2, phi) -> Array:
    """Norse's ``covariance_matrix``: the 2x2 covariance with standard deviations sigma1 along
    the major axis at angle phi and sigma2 across it."""
    op = "covariance_matrix"
    ref = _first_array(sigma1, sigma2, phi)
    s1, s2, phi = (_like(v, ref, op, n) for v, n in ((sigma1, "sigma1"), (sigma2, "sigma2"),
                                                      (phi, "phi")))
    for v, n in ((s1, "sigma1"), (s2, "sigma2"), (phi, "phi")):
        if v.ndim != 0:
            raise ValueError(f"{op}: {n} must be a number or a 0-d Array, got shape "
                             f"{tuple(v.shape)}")
    l1, l2, co, si = s1 * s1, s2 * s2, gp.cos(phi), gp.sin(phi)
    cxy = (l1 - l2) * co * si
    return gp.reshape(gp.stack([l1 * co * co + l2 * si * si, cxy, cxy,
                                l1 * si * si + l2 * co * co]), (2, 2))


def derive_kernel(kernel: Array, angle) -> Array:
    """Norse's ``derive_kernel``: the directional derivative of a kernel at ``angle`` (radians),
    cos(angle) d/d(axis 0) + sin(angle) d/d(axis 1), with ``torch.gradient``'s differences."""
    op = "derive_kernel"
    kernel = _check_input(kernel, op, "kernel")
    if kernel.ndim < 2 or min(kernel.shape[-2:]) < 2:
        raise ValueError(f"{op}: kernel must be at least 2x2, got shape {tuple(kernel.shape)}")
    return _derive(kernel, _like(angle, kernel, op, "angle"))


def calculate_normalization(dx: int, scale, gamma: float = 1):
    """Norse's ``calculate_normalization`` (Lindeberg's scale normalization of the dx-th
    derivative): scale^(dx (1 - gamma)) (scale^2)^(gamma / 2)."""
    t = scale ** 2
    return scale ** (dx * (1 - gamma)) * t ** (gamma / 2)


def derive_spatial_receptive_field_single(field: Array, scale, angle, dx: int,
                                          dy: int) -> Array:
    """Norse's ``derive_spatial_receptive_field_single``: dx derivatives at ``angle`` and dy at
    angle + pi/2, alternating, each scale-normalized (times |scale|)."""
    op = "derive_spatial_receptive_field_single"
    field = _check_input(field, op, "field")
    angle = _like(angle, field, op, "angle")
    dx, dy = _order(dx, op, "dx"), _order(dy, op, "dy")
    while dx > 0 or dy > 0:
        if dx > 0:
            field = _derive(field, angle) * calculate_normalization(1, scale, 1)
            dx -= 1
        if dy > 0:
            field = _derive(field, angle + math.pi / 2) * calculate_normalization(1, scale, 1)
            dy -= 1
    return field


def derive_spatial_receptive_field(field: Array, scale, angle, derivatives: list) -> Array:
    """Norse's ``derive_spatial_receptive_field``: the field derived for each (dx, dy) of
    ``derivatives``, stacked (len(derivatives), size, size)."""
    return gp.stack([derive_spatial_receptive_field_single(field, scale, angle, dx, dy)
                     for dx, dy in derivatives])


def _fields(scale: Array, angle: Array, ratio: Array, dxs: list, dys: list, size: int,
            domain: float) -> Array:
    """The (n, size, size) fields of n parameter sets at once (scale, angle, ratio: (n,))."""
    n = scale.shape[0]
    s, phi, r = (gp.reshape(v, (n, 1, 1)) for v in (scale, angle, ratio))
    l1, l2, co, si = r * r, (1.0 / r) * (1.0 / r), gp.cos(phi), gp.sin(phi)
    cxx = (l1 * co * co + l2 * si * si) * s
    cxy = (l1 - l2) * co * si * s
    cyy = (l1 * si * si + l2 * co * co) * s
    x, y = _grid(size, domain, scale)
    q = (cyy * x * x - 2.0 * cxy * x * y + cxx * y * y) / (cxx * cyy - cxy * cxy)
    # Norse's 1 / (2 pi sqrt(det C)) cancels in the normalization to sum 1
    k = gp.exp(-0.5 * q)
    k = k / gp.sum(k, axis=(1, 2), keepdims=True)
    norm = gp.abs(s)   # calculate_normalization(1, s, 1) = (s^2)^(1/2)
    for step in range(max([0, *dxs, *dys])):
        # Norse's loop: an x derivative, then a y one, while each has orders left
        for orders, theta in ((dxs, phi), (dys, phi + math.pi / 2)):
            todo = [o > step for o in orders]
            if not any(todo):
                continue
            d = _derive(k, theta) * norm
            k = d if all(todo) else gp.where(
                gp.asarray(np.asarray(todo).reshape(n, 1, 1), device=k.device), d, k)
    return k


def spatial_receptive_field(scale, angle, ratio, size: int, dx: int = 0, dy: int = 0,
                            domain: float = 10) -> Array:
    """Norse's ``spatial_receptive_field``: one (size, size) field of a scale, angle (radians)
    and ratio (eccentricity), normalized to sum 1 before its dx / dy derivatives."""
    op = "spatial_receptive_field"
    size, domain = _size(size, op), _real(domain, op, "domain")
    ref = _first_array(scale, angle, ratio)
    vs = []
    for v, name in ((scale, "scale"), (angle, "angle"), (ratio, "ratio")):
        v = _like(v, ref, op, name)
        if v.ndim != 0:
            raise ValueError(f"{op}: {name} must be a number or a 0-d Array, got shape "
                             f"{tuple(v.shape)}")
        vs.append(gp.reshape(v, (1,)))
    return _fields(*vs, [_order(dx, op, "dx")], [_order(dy, op, "dy")], size, domain)[0]


def _derivative_list(derivatives, op: str) -> list:
    """Norse's ``_extract_derivatives``: an int d, every (x, y) with x, y <= d (only (0, 0) for
    0), or a list of (dx, dy) pairs."""
    if isinstance(derivatives, numbers.Integral) and not isinstance(derivatives, bool):
        d = _order(derivatives, op, "derivatives")
        return [(x, y) for x in range(d + 1) for y in range(d + 1)]
    if isinstance(derivatives, (list, tuple)) and derivatives and all(
            isinstance(p, (list, tuple)) and len(p) == 2 for p in derivatives):
        return [(_order(a, op, "derivatives"), _order(b, op, "derivatives"))
                for a, b in derivatives]
    raise ValueError(f"{op}: derivatives must be an int or a list of (dx, dy) pairs, got "
                     f"{derivatives!r}")


def _vector(v, op: str, name: str) -> Array:
    v = _check_input(v, op, name)
    if v.ndim != 1 or v.shape[0] == 0:
        raise ValueError(f"{op}: {name} must be a non-empty 1-d Array, got shape "
                         f"{tuple(v.shape)}")
    return v


def _product(a: Array, b: Array, c: Array) -> Array:
    """torch.cartesian_prod of three vectors: (len a * len b * len c, 3), c varying fastest."""
    shape = (a.shape[0], b.shape[0], c.shape[0])
    cols = [gp.reshape(gp.broadcast_to(gp.reshape(v, sh), shape), (-1,))
            for v, sh in ((a, (-1, 1, 1)), (b, (1, -1, 1)), (c, (1, 1, -1)))]
    return gp.stack(cols, axis=1)


def spatial_parameters(scales: Array, angles: Array, ratios: Array, derivatives,
                       include_replicas: bool = False) -> Array:
    """Norse's ``spatial_parameters``: the (n, 5) rows (scale, angle, ratio, dx, dy) of every
    combination (each (scale, angle, ratio) with every derivative); without
    ``include_replicas``, the ratios other than 1 come first, then those equal to 1."""
    op = "spatial_parameters"
    scales, angles, ratios = (_vector(v, op, n) for v, n in ((scales, "scales"),
                                                             (angles, "angles"),
                                                             (ratios, "ratios")))
    derivs = _derivative_list(derivatives, op)
    one = np.asarray(ratios.detach().tolist()) == 1
    if include_replicas or not one.any() or one.all():
        params = _product(scales, angles, ratios)
    else:
        parts = []
        for sel in (~one, one):
            idx = gp.asarray(np.nonzero(sel)[0], device=ratios.device)
            parts.append(_product(scales, angles, gp.take(ratios, idx)))
        params = gp.concat(parts)
    n, nd = params.shape[0], len(derivs)
    params = gp.reshape(gp.broadcast_to(gp.reshape(params, (n, 1, 3)), (n, nd, 3)),
                        (n * nd, 3))
    d = gp.asarray(np.tile(np.asarray(derivs, dtype=np.float64), (n, 1)), dtype=params.dtype,
                   device=params.device)
    return gp.concat([params, d], axis=1)


def _rows(combinations: Array, op: str) -> tuple:
    """(scale, angle, ratio) columns and the derivative orders of (n, 5) parameter rows."""
    c = _check_input(combinations, op, "combinations")
    if c.ndim != 2 or c.shape[1] != 5 or c.shape[0] == 0:
        raise ValueError(f"{op}: the parameters must be (n, 5) rows (scale, angle, ratio, dx, "
                         f"dy), got shape {tuple(c.shape)}")
    orders = c[:, 3:].detach().tolist()
    dxs = [_order(a, op, "dx") for a, _ in orders]
    dys = [_order(b, op, "dy") for _, b in orders]
    return c[:, 0], c[:, 1], c[:, 2], dxs, dys


def spatial_receptive_fields_with_derivatives(combinations: Array, size: int,
                                              domain: float = 1) -> Array:
    """Norse's ``spatial_receptive_fields_with_derivatives``: the (n, size, size) fields of (n, 5)
    rows (scale, angle, ratio, dx, dy), as ``spatial_receptive_field`` of each row."""
    op = "spatial_receptive_fields_with_derivatives"
    size, domain = _size(size, op), _real(domain, op, "domain")
    return _fields(*_rows(combinations, op), size, domain)


def temporal_scale_distribution(n_scales: int, min_scale: float = 1,
                                max_scale: float | None = None, c: float = 1.41421) -> Array:
    """Norse's ``temporal_scale_distribution``: sqrt(c^(2 (k - n)) max_scale), k = 1..n, with
    max_scale = c^(2 (n - 1)) min_scale, or c = (min_scale / max_scale)^(1 / (2 (n - 1))) when
    max_scale is given (as Norse 1.1 computes it); float32."""
    op = "temporal_scale_distribution"
    if isinstance(n_scales, bool) or not isinstance(n_scales, numbers.Integral) or n_scales < 1:
        raise ValueError(f"{op}: n_scales must be an int >= 1, got {n_scales!r}")
    min_scale = _real(min_scale, op, "min_scale")
    if max_scale is not None:
        max_scale = _real(max_scale, op, "max_scale")
        if n_scales == 1:
            return gp.asarray(np.sqrt([min_scale]), dtype=gp.float32)
        c = (min_scale / max_scale) ** (1 / (2 * (n_scales - 1)))
    else:
        c = _real(c, op, "c")
        max_scale = c ** (2 * (n_scales - 1)) * min_scale
    k = np.arange(1, n_scales + 1, dtype=np.float64)
    return gp.asarray(np.sqrt(c ** (2 * (k - n_scales)) * max_scale), dtype=gp.float32)


# ---- modules ---------------------------------------------------------------------------------

_CONV_KWARGS = ("bias", "stride", "padding", "dilation", "groups")


def _weights(fields: Array, in_channels: int, aggregate: bool) -> Array:
    """Conv weights of (n, s, s) fields: aggregated, every field over all input channels
    (n, in, s, s); else each field on each channel alone, out channel i n + f (in n, in, s, s)."""
    n, s = fields.shape[0], fields.shape[-1]
    if aggregate:
        return gp.broadcast_to(gp.reshape(fields, (n, 1, s, s)), (n, in_channels, s, s))
    eye = gp.asarray(np.eye(in_channels).reshape(in_channels, 1, in_channels, 1, 1),
                     dtype=fields.dtype, device=fields.device)
    return gp.reshape(eye * gp.reshape(fields, (1, n, 1, s, s)),
                      (in_channels * n, in_channels, s, s))


class SpatialReceptiveField2d(Module):
    """Norse's ``SpatialReceptiveField2d(in_channels, size, rf_parameters, aggregate, domain,
    optimize_fields, **conv2d kwargs)``: a conv2d whose (size x size) kernels are the receptive
    fields of the (n, 5) rows (scale, angle, ratio, dx, dy); ``weights`` holds them."""

    def __init__(self, in_channels: int, size: int, rf_parameters: Array, aggregate: bool = True,
                 domain: float = 8, optimize_fields: bool = True, **kwargs) -> None:
        super().__init__()
        op = type(self).__name__
        if isinstance(in_channels, bool) or not isinstance(in_channels, numbers.Integral) \
                or in_channels < 1:
            raise ValueError(f"{op}: in_channels must be an int >= 1, got {in_channels!r}")
        for k in kwargs:
            if k not in _CONV_KWARGS:
                raise TypeError(f"{op}: unexpected keyword argument {k!r} (conv2d's are "
                                f"{', '.join(_CONV_KWARGS)})")
        _rows(rf_parameters, op)   # validates the rows
        self.in_channels, self.size = int(in_channels), _size(size, op)
        self.aggregate, self.domain = bool(aggregate), _real(domain, op, "domain")
        self.optimize_fields = bool(optimize_fields)
        self.rf_parameters = Parameter(rf_parameters) if optimize_fields else rf_parameters
        self.kwargs = dict(kwargs)
        self.kwargs.setdefault("bias", None)
        self.__dict__["_source"] = None   # (not through setattr: a Parameter would register)
        self._update_weights()

    @property
    def out_channels(self) -> int:
        """The number of fields (times in_channels without ``aggregate``)."""
        n = self.rf_parameters.shape[0]
        return n if self.aggregate else n * self.in_channels

    def _update_weights(self) -> None:
        # a learnable parameter may have changed in place (an optimizer step), and its gradient
        # needs this forward's graph: recomputed every time; fixed rows only when replaced
        p = self.rf_parameters
        if isinstance(p, Parameter) or p is not self._source:
            fields = spatial_receptive_fields_with_derivatives(p, self.size, self.domain)
            self.weights = _weights(fields, self.in_channels, self.aggregate)
            self.__dict__["_source"] = p

    def _to_state(self, conv) -> None:
        # Module.to moves parameters; fixed rows, a bias and the cached weights move here
        if not isinstance(self.rf_parameters, Parameter):
            self.rf_parameters = conv(self.rf_parameters)
        if isinstance(self.kwargs.get("bias"), Array) and not isinstance(self.kwargs["bias"],
                                                                          Parameter):
            self.kwargs["bias"] = conv(self.kwargs["bias"])
        self.__dict__["_source"] = None
        self._update_weights()

    def forward(self, x: Array) -> Array:
        """conv2d of (N, in_channels, H, W) input with the fields: (N, out_channels, H', W')."""
        x = _check_input(x, type(self).__name__, "x")
        self._update_weights()
        return NF.conv2d(x, self.weights, **self.kwargs)


def _maybe_parameter(v: Array, learn: bool) -> Array:
    return Parameter(v) if learn else v


def _move_fixed(m: Module, names: tuple, conv) -> None:
    """Module.to for the fixed (not learnable) Arrays ``names`` of m."""
    for name in names:
        v = getattr(m, name)
        if isinstance(v, Array) and not isinstance(v, Parameter):
            setattr(m, name, conv(v))


class SampledSpatialReceptiveField2d(Module):
    """Norse's ``SampledSpatialReceptiveField2d(in_channels, size, scales, angles, ratios,
    derivatives, optimize_scales, optimize_angles, optimize_ratios, **kwargs)``: the fields of
    every combination of the scales, angles, ratios and derivatives (``spatial_parameters``),
    the three learnable as generators of all fields."""

    def __init__(self, in_channels: int, size: int, scales: Array, angles: Array, ratios: Array,
                 derivatives, optimize_scales: bool = True, optimize_angles: bool = True,
                 optimize_ratios: bool = True, **kwargs) -> None:
        super().__init__()
        self.scales = _maybe_parameter(scales, optimize_scales)
        self.angles = _maybe_parameter(angles, optimize_angles)
        self.ratios = _maybe_parameter(ratios, optimize_ratios)
        self.derivatives = derivatives
        self.submodule = SpatialReceptiveField2d(
            in_channels, size, spatial_parameters(self.scales, self.angles, self.ratios,
                                                  derivatives), optimize_fields=False, **kwargs)

    def _to_state(self, conv) -> None:
        _move_fixed(self, ("scales", "angles", "ratios"), conv)

    def forward(self, x: Array) -> Array:
        """The submodule's conv2d with the fields of the current scales, angles and ratios."""
        if any(isinstance(v, Parameter) for v in (self.scales, self.angles, self.ratios)):
            self.submodule.rf_parameters = spatial_parameters(self.scales, self.angles,
                                                              self.ratios, self.derivatives)
        return self.submodule(x)


class ParameterizedSpatialReceptiveField2d(Module):
    """Norse's ``ParameterizedSpatialReceptiveField2d(in_channels, size, scales, angles, ratios,
    derivatives, optimize_scales, optimize_angles, optimize_ratios, **kwargs)``: the combinations
    of ``spatial_parameters``, each field's scale, angle and ratio learnable on its own."""

    def __init__(self, in_channels: int, size: int, scales: Array, angles: Array, ratios: Array,
                 derivatives, optimize_scales: bool = True, optimize_angles: bool = True,
                 optimize_ratios: bool = True, **kwargs) -> None:
        super().__init__()
        self.initial_parameters = spatial_parameters(scales, angles, ratios,
                                                     derivatives).detach()
        p = self.initial_parameters
        self.scales = _maybe_parameter(p[:, 0], optimize_scales)
        self.angles = _maybe_parameter(p[:, 1], optimize_angles)
        self.ratios = _maybe_parameter(p[:, 2], optimize_ratios)
        self.submodule = SpatialReceptiveField2d(in_channels, size, self._rows(),
                                                 optimize_fields=False, **kwargs)

    def _rows(self) -> Array:
        return gp.concat([gp.stack([self.scales, self.angles, self.ratios], axis=1),
                          self.initial_parameters[:, 3:]], axis=1)

    def _to_state(self, conv) -> None:
        _move_fixed(self, ("initial_parameters", "scales", "angles", "ratios"), conv)

    def forward(self, x: Array) -> Array:
        """The submodule's conv2d with the fields of the current per-field parameters."""
        if any(isinstance(v, Parameter) for v in (self.scales, self.angles, self.ratios)):
            self.submodule.rf_parameters = self._rows()
        return self.submodule(x)


class TemporalReceptiveField(Module):
    """Norse's ``TemporalReceptiveField(shape, n_scales, activation, activation_state_map,
    min_scale, max_scale, c, time_constants, dt)``: the input repeated over ``n_scales`` (a new
    axis before the ``shape`` axes) into neurons (``LIBoxCell`` by default) whose parameters are
    ``activation_state_map(ps)``, ps (n_scales, C, 1, ...) learnable: ``y, state = m(x, state)``."""

    def __init__(self, shape: tuple, n_scales: int = 4, activation: type = LIBoxCell,
                 activation_state_map: Callable[[Array], NamedTuple] =
                 lambda t: LIBoxParameters(tau_mem_inv=t),
                 min_scale: float = 1, max_scale: float | None = None, c: float = 1.41421,
                 time_constants: Array | None = None, dt: float = 0.001) -> None:
        super().__init__()
        op = type(self).__name__
        shape = tuple(shape)
        if not shape or not all(isinstance(d, numbers.Integral) and not isinstance(d, bool)
                                and d >= 1 for d in shape):
            raise ValueError(f"{op}: shape must be a non-empty tuple of positive ints, got "
                             f"{shape!r}")
        if time_constants is None:
            # Norse's tau_mem_inv per scale: (1 / dt) / the scale distribution
            inv = (1.0 / _real(dt, op, "dt")) / np.asarray(
                temporal_scale_distribution(n_scales, min_scale, max_scale, c).tolist(),
                dtype=np.float32)
            tc = np.broadcast_to(inv.reshape(-1, *([1] * len(shape))),
                                 (len(inv), shape[0], *([1] * (len(shape) - 1))))
            self.time_constants = gp.asarray(np.ascontiguousarray(tc), dtype=gp.float32)
        else:
            self.time_constants = _check_input(time_constants, op, "time_constants")
        self.ps = Parameter(self.time_constants)
        self.neurons = activation(p=activation_state_map(self.ps), dt=dt)
        self.rf_dimension = len(shape)
        self.n_scales = n_scales

    def forward(self, x: Array, state=None) -> tuple:
        """(output, state) of the neurons on x stacked n_scales times at axis -len(shape) - 1."""
        x = _check_input(x, type(self).__name__, "x")
        if x.ndim < self.rf_dimension:
            raise ValueError(f"{type(self).__name__}: x must have at least {self.rf_dimension} "
                             f"axes (the shape's), got shape {tuple(x.shape)}")
        axis = x.ndim - self.rf_dimension
        return self.neurons(gp.stack([x] * self.n_scales, axis=axis), state)
