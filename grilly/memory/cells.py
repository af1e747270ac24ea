"""Population codes for where and when, with decoders back (docs/memory.md).

- PlaceCells: Gaussian tuning around centres c_i in 1-3 D, a_i(x) = exp(-|x - c_i|^2 / 2 sigma^2);
  decoded as the activity-weighted mean of the centres near the most active cell.
- GridCells: modules of spacing lambda_m; in 2-D the sum of three plane waves 60 degrees apart,
  g(x) = (1 + 2/3 sum_k cos(4 pi / (sqrt(3) lambda) u_k . (x - phase))) / 3 (peaks 1 on a
  hexagonal lattice), in 1-D (1 + cos(2 pi (x - phase) / lambda)) / 2; decoded by matching the
  code against candidate positions (the multi-scale code is unambiguous over a range much larger
  than any one spacing).
- TimeCells: log-spaced peak times tau_i between t_min and t_max, a_i(t) = (t / tau_i)^k
  exp(k (1 - t / tau_i)) (one bump per cell, width proportional to its peak time: the
  scale-invariant code of Laplace-transform models of time); decoded in log time.
"""
from __future__ import annotations

import math

import numpy as np

from ..array import api as gp
from ..array.defaults import float_or_default
from ..array.array import Array
from ..nn.module import Module
from ._placed import pos_int

__all__ = ["PlaceCells", "GridCells", "TimeCells"]


def _on(x, device, op: str, arg: str):
    """``x`` where the cells are: host data is placed there; a grilly Array on another device
    is a ValueError (grilly copies nothing between devices implicitly), as the memories'."""
    if isinstance(x, Array) and x.device != device:
        raise ValueError(f"{op}: {arg} is on {x.device}, the cells on {device}; move it with "
                         "to_device() first")
    return gp.asarray(x, device=device)


def _positions(x, dims: int, op: str, device) -> Array:
    x = _on(x, device, op, "positions")
    if x.ndim == 1 and dims == 1:
        x = gp.reshape(x, (-1, 1))
    elif x.ndim == 1:
        x = gp.reshape(x, (1, -1))
    if x.ndim != 2 or x.shape[1] != dims:
        raise ValueError(f"{op}: positions must be (batch, {dims}), got shape {x.shape}")
    return x


def _activity(activity, like: Array, op: str) -> Array:
    """``activity`` (n,) or (batch, n) as a 2-D Array beside ``like`` (n rows: the cells); host
    data (numpy) is placed on like's device in its dtype."""
    a = activity
    if not isinstance(a, Array):
        a = gp.asarray(a, dtype=like.dtype, device=like.device)
    elif a.device != like.device:
        raise ValueError(f"{op}: activity is on {a.device}, the cells on {like.device}; move "
                         "it with to_device() first")
    a = a if a.ndim == 2 else gp.reshape(a, (1, -1))
    if a.ndim != 2 or a.shape[1] != like.shape[0]:
        raise ValueError(f"{op}: activity must be ({like.shape[0]},) or (batch, "
                         f"{like.shape[0]}) (one value per cell), got shape {activity.shape}")
    return a


class PlaceCells(Module):
    """Gaussian place fields at ``centers`` (n, dims) with width ``sigma``."""

    def __init__(self, centers, sigma: float, device=None, dtype=None) -> None:
        super().__init__()
        c = gp.asarray(centers, dtype=float_or_default(dtype), device=device)
        if c.ndim == 1:
            c = gp.reshape(c, (-1, 1))
        if c.ndim != 2 or not 1 <= c.shape[1] <= 3:
            raise ValueError(f"PlaceCells: centers must be (n, 1..3), got shape {c.shape}")
        if not float(sigma) > 0:
            raise ValueError(f"PlaceCells: sigma must be > 0, got {sigma}")
        self.register_buffer("centers", c)
        self.sigma, self.dims = float(sigma), c.shape[1]

    @classmethod
    def grid(cls, per_dim: int, low: float = 0.0, high: float = 1.0, dims: int = 2,
             sigma: float | None = None, **kw) -> "PlaceCells":
        """Centres on a regular ``per_dim``^dims lattice over [low, high]^dims (sigma: the
        lattice spacing by default)."""
        axis = np.linspace(low, high, per_dim)
        c = np.stack(np.meshgrid(*([axis] * dims), indexing="ij"), axis=-1).reshape(-1, dims)
        return cls(c, sigma or (high - low) / max(per_dim - 1, 1), **kw)

    def forward(self, positions) -> Array:
        """Activities (batch, n) for positions (batch, dims)."""
        x = _positions(positions, self.dims, "PlaceCells", self.centers.device)
        x = gp.astype(x, self.centers.dtype)
        d2 = gp.sum(gp.square(gp.expand_dims(x, axis=1) - self.centers), axis=-1)
        return gp.exp(d2 * (-0.5 / self.sigma ** 2))

    encode = forward

    def decode(self, activity: Array) -> Array:
        """Positions (batch, dims) from activities: the weighted mean of the centres whose
        activity is within exp(-2) of the row's maximum (cells within about 2 sigma)."""
        a = _activity(activity, self.centers, "PlaceCells.decode")
        near = a >= gp.max(a, axis=1, keepdims=True) * math.exp(-2.0)
        w = gp.where(near, a, 0.0)
        return gp.matmul(w, self.centers) / gp.sum(w, axis=1, keepdims=True)


class GridCells(Module):
    """Multi-scale grid codes in 1-D or 2-D: ``spacings`` (one module each), ``phases`` cells
    per module (per axis in 2-D), orientation ``orientation`` radians (2-D)."""

    def __init__(self, spacings=(0.3, 0.42, 0.59, 0.83), phases: int = 6, dims: int = 2,
                 orientation: float = 0.0, device=None, dtype=None) -> None:
        super().__init__()
        if dims not in (1, 2):
            raise ValueError(f"GridCells: dims must be 1 or 2, got {dims}")
        if not spacings or any(not float(s) > 0 for s in spacings):
            raise ValueError("GridCells: spacings must be positive")
        phases = pos_int(phases, "GridCells", "phases")   # 0 made a code of no cells
        self.dims, self.spacings = dims, tuple(float(s) for s in spacings)
        rows, lam = [], []
        for s in self.spacings:
            if dims == 1:
                for p in range(phases):
                    rows.append([p * s / phases])
                    lam.append(s)
            else:
                # phases on the lattice's unit cell: the peaks' lattice vectors lie 30 and 90
                # degrees from the first wave vector
                b1 = s * np.array([math.cos(orientation + math.pi / 6),
                                   math.sin(orientation + math.pi / 6)])
                b2 = s * np.array([math.cos(orientation + math.pi / 2),
                                   math.sin(orientation + math.pi / 2)])
                for i in range(phases):
                    for j in range(phases):
                        rows.append(list(i / phases * b1 + j / phases * b2))
                        lam.append(s)
        dt = float_or_default(dtype)
        self.register_buffer("phase", gp.asarray(np.array(rows), dtype=dt, device=device))
        self.register_buffer("spacing", gp.asarray(np.array(lam), dtype=dt, device=device))
        ang = orientation + np.arange(3) * math.pi / 3
        self.register_buffer("u", gp.asarray(np.stack([np.cos(ang), np.sin(ang)], axis=1),
                                             dtype=dt, device=device))
        self.n = len(rows)

    def forward(self, positions) -> Array:
        """Activities (batch, n) in [0, 1] for positions (batch, dims)."""
        x = gp.astype(_positions(positions, self.dims, "GridCells", self.phase.device),
                      self.phase.dtype)
        d = gp.expand_dims(x, axis=1) - self.phase                      # (b, n, dims)
        if self.dims == 1:
            return 0.5 * (1.0 + gp.cos(2 * math.pi * d[..., 0] / self.spacing))
        k = (4 * math.pi / math.sqrt(3)) / self.spacing                  # (n,)
        proj = gp.matmul(d, gp.matrix_transpose(self.u))                 # (b, n, 3)
        g = gp.sum(gp.cos(gp.expand_dims(k, axis=-1) * proj), axis=-1)   # in [-1.5, 3]
        return (g + 1.5) / 4.5

    encode = forward

    def decode(self, activity: Array, low: float = 0.0, high: float = 1.0,
               resolution: int = 200) -> Array:
        """Positions (batch, dims) whose code correlates best with ``activity``, searched over
        a ``resolution``-point lattice per axis of [low, high]^dims."""
        a = _activity(activity, self.phase, "GridCells.decode")
        axis = np.linspace(low, high, resolution)
        cand = (axis.reshape(-1, 1) if self.dims == 1 else
                np.stack(np.meshgrid(axis, axis, indexing="ij"), axis=-1).reshape(-1, 2))
        c = gp.asarray(cand, dtype=self.phase.dtype, device=self.phase.device)
        codes = self.forward(c)                                         # (m, n)
        codes = codes - gp.mean(codes, axis=1, keepdims=True)
        ac = a - gp.mean(a, axis=1, keepdims=True)
        best = gp.argmax(gp.matmul(ac, gp.matrix_transpose(codes)), axis=1)
        return gp.take(c, best, axis=0)


class TimeCells(Module):
    """``n`` time cells with log-spaced peak times in [t_min, t_max] and shape ``k``."""

    def __init__(self, n: int = 32, t_min: float = 0.1, t_max: float = 100.0, k: float = 8.0,
                 device=None, dtype=None) -> None:
        super().__init__()
        if not 0 < t_min < t_max:
            raise ValueError(f"TimeCells: need 0 < t_min < t_max, got {t_min}, {t_max}")
        n = pos_int(n, "TimeCells", "n")
        if n < 2 or not k > 0:
            raise ValueError(f"TimeCells: need n >= 2 and k > 0, got n={n}, k={k}")
        tau = np.geomspace(t_min, t_max, n)
        self.register_buffer("tau", gp.asarray(tau, dtype=float_or_default(dtype), device=device))
        self.k, self.n = float(k), n

    def forward(self, t) -> Array:
        """Activities (batch, n) in [0, 1] for elapsed times t (batch,) (>= 0)."""
        t = gp.astype(_on(t, self.tau.device, "TimeCells", "t"), self.tau.dtype)
        t = gp.reshape(t, (-1, 1))
        r = gp.maximum(t, 0.0) / self.tau
        # (r e^(1 - r))^k, written in logs: 0 at t = 0, 1 at the peak
        return gp.where(r > 0, gp.exp(self.k * (gp.log(gp.maximum(r, 1e-30)) + 1.0 - r)), 0.0)

    encode = forward

    def decode(self, activity: Array) -> Array:
        """Elapsed times (batch,): the activity-weighted geometric mean of the peak times of
        the cells near the most active one."""
        a = _activity(activity, self.tau, "TimeCells.decode")
        near = a >= gp.max(a, axis=1, keepdims=True) * math.exp(-2.0)
        w = gp.where(near, a, 0.0)
        return gp.exp(gp.sum(w * gp.log(self.tau), axis=1) / gp.sum(w, axis=1))
