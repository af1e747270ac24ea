"""Probability distributions as torch.distributions, written against the grilly namespace (every
device, autograd through log_prob/entropy/rsample, no host reads). See docs/distributions.md."""
from . import constraints, transforms  # noqa: F401
from .categorical import Bernoulli, Categorical, OneHotCategorical
from .distribution import Distribution
from .gamma import Beta, Dirichlet, Gamma, Poisson
from .independent import Independent
from .kl import kl_divergence, register_kl
from .multivariate_normal import MultivariateNormal
from .normal import Exponential, Laplace, Normal
from .transformed_distribution import LogNormal, TransformedDistribution
from .transforms import (AffineTransform, ExpTransform, SigmoidTransform, TanhTransform,
                         Transform)
from .uniform import Uniform

__all__ = ["AffineTransform", "Bernoulli", "Beta", "Categorical", "Dirichlet", "Distribution",
           "ExpTransform", "Exponential", "Gamma", "Independent", "Laplace", "LogNormal",
           "MultivariateNormal", "Normal", "OneHotCategorical", "Poisson", "SigmoidTransform",
           "TanhTransform", "Transform", "TransformedDistribution", "Uniform", "constraints",
           "kl_divergence", "register_kl", "transforms"]
