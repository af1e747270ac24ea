"""Optimizers and learning-rate schedulers (the torch.optim interface), written with namespace
array ops so that updates run on each parameter's device, in place."""
from __future__ import annotations

from . import lr_scheduler
from .clip import clip_grad_norm_, clip_grad_value_
from .extra_optimizers import LBFGS, Adafactor
from .optimizer import Optimizer
from .optimizers import (ASGD, NLMS, SGD, Adadelta, Adagrad, Adam, Adamax, AdamW, NAdam,
                         NaturalGradient, RAdam, RMSprop, Rprop, SparseAdam)

__all__ = ["ASGD", "NLMS", "SGD", "Adadelta", "Adagrad", "Adam", "Adamax", "AdamW", "NAdam",
           "NaturalGradient", "Optimizer", "RAdam", "RMSprop", "Rprop", "clip_grad_norm_",
           "clip_grad_value_", "lr_scheduler"]
__all__ += ["LBFGS", "Adafactor", "SparseAdam"]
