"""Probability distributions as torch.distributions, written against the grilly namespace (every
device, autograd through log_prob/entropy/rsample, no host reads). See docs/distributions.md."""
from . import constraints, transforms  # noqa: F401
from .continuous_bernoulli import ContinuousBernoulli
from .categorical import (Bernoulli, Binomial, Categorical, Geometric, Multinomial,
                          OneHotCategorical, OneHotCategoricalStraightThrough)
from .distribution import Distribution
from .fishersnedecor import FisherSnedecor
from .gamma import Beta, Chi2, Dirichlet, Gamma, Poisson, StudentT
from .half_cauchy import HalfCauchy
from .independent import Independent
from .inverse_gamma import InverseGamma
from .kl import kl_divergence, register_kl
from .kumaraswamy import Kumaraswamy
from .lkj_cholesky import LKJCholesky
from .logistic_normal import LogisticNormal
from .lowrank_multivariate_normal import LowRankMultivariateNormal
from .mixture import MixtureSameFamily
from .multivariate_normal import MultivariateNormal
from .negative_binomial import NegativeBinomial
from .relaxed import (ExpRelaxedCategorical, LogitRelaxedBernoulli, RelaxedBernoulli,
                      RelaxedOneHotCategorical)
from .normal import Cauchy, Exponential, Gumbel, HalfNormal, Laplace, Normal
from .pareto import Pareto
from .transformed_distribution import LogNormal, TransformedDistribution
from .transforms import (AbsTransform, AffineTransform, CatTransform, ComposeTransform,
                         ExpTransform, IndependentTransform, LowerCholeskyTransform,
                         PowerTransform, ReshapeTransform, SigmoidTransform, SoftmaxTransform,
                         SoftplusTransform, StackTransform, StickBreakingTransform,
                         TanhTransform, Transform)
from .uniform import Uniform
from .von_mises import VonMises
from .weibull import Weibull
from .wishart import Wishart

__all__ = ["AbsTransform", "AffineTransform", "Bernoulli", "CatTransform", "Beta", "Binomial", "Categorical",
           "Cauchy", "Chi2", "ComposeTransform", "ContinuousBernoulli", "Dirichlet",
           "Distribution", "ExpRelaxedCategorical", "ExpTransform", "Exponential",
           "FisherSnedecor", "Gamma", "Geometric", "Gumbel", "HalfCauchy", "HalfNormal",
           "Independent", "IndependentTransform", "InverseGamma", "Kumaraswamy", "LKJCholesky",
           "Laplace",
           "LogisticNormal", "LogitRelaxedBernoulli", "LogNormal", "LowRankMultivariateNormal",
           "LowerCholeskyTransform", "MixtureSameFamily", "Multinomial", "MultivariateNormal",
           "NegativeBinomial", "Normal", "OneHotCategorical", "OneHotCategoricalStraightThrough",
           "Pareto", "Poisson", "PowerTransform", "RelaxedBernoulli", "RelaxedOneHotCategorical",
           "ReshapeTransform", "SigmoidTransform", "SoftmaxTransform", "SoftplusTransform",
           "StackTransform", "StickBreakingTransform", "StudentT", "TanhTransform", "Transform",
           "TransformedDistribution", "Uniform", "VonMises", "Weibull", "Wishart", "constraints",
           "kl_divergence", "register_kl", "transforms"]
