"""More of torch.nn's loss modules (thin wrappers over grilly.nn.functional): KL divergence,
Poisson and Gaussian NLL, the margin and embedding losses and the triplet losses. As grilly's
other losses, they take ``reduction`` but not torch's deprecated size_average/reduce."""
from __future__ import annotations

from . import functional as F
from .loss import _Loss, _WeightedLoss

__all__ = ["KLDivLoss", "PoissonNLLLoss", "GaussianNLLLoss", "MarginRankingLoss",
           "HingeEmbeddingLoss", "CosineEmbeddingLoss", "SoftMarginLoss",
           "MultiLabelSoftMarginLoss", "MultiMarginLoss", "MultiLabelMarginLoss",
           "TripletMarginLoss", "TripletMarginWithDistanceLoss"]


class KLDivLoss(_Loss):
    """KL divergence of log-probabilities from a target ('batchmean': the mathematical one)."""

    def __init__(self, reduction: str = "mean", log_target: bool = False) -> None:
        F._check_reduction(reduction, "KLDivLoss", ("batchmean",))
        super().__init__("mean")
        self.reduction, self.log_target = reduction, log_target

    def forward(self, input, target):
        return F.kl_div(input, target, reduction=self.reduction, log_target=self.log_target)


class PoissonNLLLoss(_Loss):
    """Negative log-likelihood of a Poisson target given (log-)rates."""

    def __init__(self, log_input: bool = True, full: bool = False, eps: float = 1e-8,
                 reduction: str = "mean") -> None:
        super().__init__(reduction)
        self.log_input, self.full, self.eps = log_input, full, eps

    def forward(self, log_input, target):
        return F.poisson_nll_loss(log_input, target, log_input=self.log_input, full=self.full,
                                  eps=self.eps, reduction=self.reduction)


class GaussianNLLLoss(_Loss):
    """Negative log-likelihood of a Gaussian target given means and variances."""

    def __init__(self, *, full: bool = False, eps: float = 1e-6, reduction: str = "mean") -> None:
        super().__init__(reduction)
        self.full, self.eps = full, eps

    def forward(self, input, target, var):
        return F.gaussian_nll_loss(input, target, var, full=self.full, eps=self.eps,
                                   reduction=self.reduction)


class MarginRankingLoss(_Loss):
    """max(0, -y (x1 - x2) + margin) for y in {1, -1}."""

    def __init__(self, margin: float = 0.0, reduction: str = "mean") -> None:
        super().__init__(reduction)
        self.margin = margin

    def forward(self, input1, input2, target):
        return F.margin_ranking_loss(input1, input2, target, margin=self.margin,
                                     reduction=self.reduction)


class HingeEmbeddingLoss(_Loss):
    """x where y is 1, max(0, margin - x) where y is -1."""

    def __init__(self, margin: float = 1.0, reduction: str = "mean") -> None:
        super().__init__(reduction)
        self.margin = margin

    def forward(self, input, target):
        return F.hinge_embedding_loss(input, target, margin=self.margin, reduction=self.reduction)


class CosineEmbeddingLoss(_Loss):
    """1 - cos(x1, x2) where y is 1, max(0, cos(x1, x2) - margin) where y is -1."""

    def __init__(self, margin: float = 0.0, reduction: str = "mean") -> None:
        super().__init__(reduction)
        self.margin = margin

    def forward(self, input1, input2, target):
        return F.cosine_embedding_loss(input1, input2, target, margin=self.margin,
                                       reduction=self.reduction)


class SoftMarginLoss(_Loss):
    """Two-class logistic loss log(1 + exp(-y x))."""

    def forward(self, input, target):
        return F.soft_margin_loss(input, target, reduction=self.reduction)


class MultiLabelSoftMarginLoss(_WeightedLoss):
    """Per-class logistic loss of multi-label 0/1 targets, averaged over classes."""

    def forward(self, input, target):
        return F.multilabel_soft_margin_loss(input, target, weight=self.weight,
                                             reduction=self.reduction)


class MultiMarginLoss(_WeightedLoss):
    """Multi-class hinge loss of scores against class indices (p 1 or 2)."""

    def __init__(self, p: int = 1, margin: float = 1.0, weight=None,
                 reduction: str = "mean") -> None:
        super().__init__(weight, reduction)
        if p not in (1, 2):
            raise ValueError(f"MultiMarginLoss: only p == 1 and p == 2 are supported, got {p!r}")
        if weight is not None and weight.ndim != 1:
            raise ValueError(f"MultiMarginLoss: weight must be one-dimensional, got shape "
                             f"{weight.shape}")
        self.p, self.margin = p, margin

    def forward(self, input, target):
        return F.multi_margin_loss(input, target, p=self.p, margin=self.margin,
                                   weight=self.weight, reduction=self.reduction)


class MultiLabelMarginLoss(_Loss):
    """Multi-label hinge loss; each target row lists class indices, ended by -1."""

    def forward(self, input, target):
        return F.multilabel_margin_loss(input, target, reduction=self.reduction)


class TripletMarginLoss(_Loss):
    """max(0, margin + d(a, p) - d(a, n)) with the pairwise p-norm distance d."""

    def __init__(self, margin: float = 1.0, p: float = 2.0, eps: float = 1e-6,
                 swap: bool = False, reduction: str = "mean") -> None:
        super().__init__(reduction)
        if margin <= 0:
            raise ValueError(f"TripletMarginLoss: margin must be greater than 0, got {margin}")
        self.margin, self.p, self.eps, self.swap = margin, p, eps, swap

    def forward(self, anchor, positive, negative):
        return F.triplet_margin_loss(anchor, positive, negative, margin=self.margin, p=self.p,
                                     eps=self.eps, swap=self.swap, reduction=self.reduction)


class TripletMarginWithDistanceLoss(_Loss):
    """The triplet margin loss with any distance callable (default: pairwise 2-norm)."""

    def __init__(self, *, distance_function=None, margin: float = 1.0, swap: bool = False,
                 reduction: str = "mean") -> None:
        super().__init__(reduction)
        if margin <= 0:
            raise ValueError("TripletMarginWithDistanceLoss: margin must be greater than 0, got "
                             f"{margin}")
        self.distance_function, self.margin, self.swap = distance_function, margin, swap

    def forward(self, anchor, positive, negative):
        return F.triplet_margin_with_distance_loss(
            anchor, positive, negative, distance_function=self.distance_function,
            margin=self.margin, swap=self.swap, reduction=self.reduction)
