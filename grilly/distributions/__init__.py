"""Probability distributions as torch.distributions, written against the grilly namespace (every
device, autograd through log_prob/entropy/rsample, no host reads). See docs/distributions.md."""
from . import constraints, transforms  # noqa: F401
from .categorical import (Bernoulli, Binomial, Categorical, Geometric, Multinomial,
                          OneHotCategorical, OneHotCategoricalStraightThrough)
from .distribution import Distribution
from .gamma import Beta, Chi2, Dirichlet, Gamma, Poisson, StudentT
from .independent import Independent
from .kl import kl_divergence, register_kl
from .mixture import MixtureSameFamily
from .multivariate_normal import MultivariateNormal
from .relaxed import (ExpRelaxedCategorical, LogitRelaxedBernoulli, RelaxedBernoulli,
                      RelaxedOneHotCategorical)
from .normal import Cauchy, Exponential, Gumbel, HalfNormal, Laplace, Normal
from .transformed_distribution import LogNormal, TransformedDistribution
from .transforms import (AffineTransform, ComposeTransform, ExpTransform, PowerTransform,
                         SigmoidTransform, SoftplusTransform, TanhTransform, Transform)
from .uniform import Uniform

__all__ = ["AffineTransform", "Bernoulli", "Beta", "Binomial", "Categorical", "Cauchy", "Chi2",
           "ComposeTransform", "Dirichlet", "Distribution", "ExpRelaxedCategorical",
           "ExpTransform", "Exponential", "Gamma", "Geometric", "Gumbel", "HalfNormal",
           "Independent", "Laplace", "LogitRelaxedBernoulli", "LogNormal", "MixtureSameFamily",
           "Multinomial", "MultivariateNormal", "Normal", "OneHotCategorical",
           "OneHotCategoricalStraightThrough", "Poisson", "PowerTransform", "RelaxedBernoulli",
           "RelaxedOneHotCategorical", "SigmoidTransform", "SoftplusTransform", "StudentT",
           "TanhTransform", "Transform", "TransformedDistribution", "Uniform", "constraints",
           "kl_divergence", "register_kl", "transforms"]
