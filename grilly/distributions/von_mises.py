"""The von Mises distribution on the circle [-pi, pi)."""
from __future__ import annotations

import math

from ..array import api as gp
from ..autograd import no_grad
from . import constraints
from ..special import i0e, i1e
from .distribution import Distribution
from .utils import broadcast_all, uniform_noise

__all__ = ["VonMises"]

# Best and Fisher's rejection sampler accepts with probability >= ~0.66 per round: 40 rounds
# leave an element without a draw with probability < 1e-18 (it then takes loc, the mode)
_ROUNDS = 40


class VonMises(Distribution):
    """The von Mises distribution with mean direction ``loc`` and ``concentration``."""

    arg_constraints = {"loc": constraints.real, "concentration": constraints.positive}
    support = constraints.real
    has_rsample = False
    _batch_params = ("loc", "concentration")

    def __init__(self, loc, concentration, validate_args: bool | None = None) -> None:
        self._note_host(loc=loc, concentration=concentration)
        self.loc, self.concentration = broadcast_all(loc, concentration)
        super().__init__(self.loc.shape, validate_args=validate_args)

    @property
    def mean(self):
        """The circular mean."""
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        """The circular variance, 1 - I1(k) / I0(k)."""
        k = self.concentration
        return 1.0 - i1e(k) / i0e(k)   # (the scaled forms: no overflow, same ratio)

    def log_prob(self, value):
        value = self._validate_sample(value)
        k = self.concentration
        # log I0(k) = log(i0e(k)) + k
        return k * (gp.cos(value - self.loc) - 1.0) - math.log(2.0 * math.pi) - gp.log(i0e(k))

    def sample(self, sample_shape=()):
        """Draws in [-pi, pi) by Best and Fisher's (1979) rejection method, as a fixed number
        of array rounds (computed in float64 where the parameters are float64)."""
        shape = self._extended_shape(sample_shape)
        with no_grad():
            loc = gp.broadcast_to(self.loc.detach(), shape)
            k = gp.broadcast_to(self.concentration.detach(), shape)
            tau = 1.0 + gp.sqrt(1.0 + 4.0 * k * k)
            rho = (tau - gp.sqrt(2.0 * tau)) / (2.0 * k)
            # the proposal's r; its Taylor form for a tiny k where rho's cancellation is total
            r = gp.where(k < 1e-5, 1.0 / k + k, (1.0 + rho * rho) / (2.0 * rho))
            x = gp.zeros_like(k)
            done = gp.zeros(shape, dtype=gp.bool, device=k.device)
            tiny = float(gp.finfo(k.dtype).smallest_normal)
            for _ in range(_ROUNDS):
                u1 = uniform_noise(shape, k)
                u2 = gp.maximum(uniform_noise(shape, k), tiny)
                u3 = uniform_noise(shape, k)
                z = gp.cos(math.pi * u1)
                f = (1.0 + r * z) / (r + z)
                c = k * (r - f)
                ok = (c * (2.0 - c) - u2 > 0) | (gp.log(c / u2) + 1.0 - c >= 0)
                cand = gp.sign(u3 - 0.5) * gp.acos(gp.clip(f, -1.0, 1.0))
                x = gp.where(ok & ~done, cand, x)
                done = done | ok
            return gp.remainder(x + math.pi + loc, 2.0 * math.pi) - math.pi
