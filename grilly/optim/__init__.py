"""Optimizers and learning-rate schedulers (the torch.optim interface), written with namespace
array ops so that updates run on each parameter's device, in place."""
from __future__ import annotations

from . import lr_scheduler
from .clip import clip_grad_norm_, clip_grad_value_
from .optimizer import Optimizer
from .optimizers import NLMS, SGD, Adagrad, Adam, AdamW, NaturalGradient, RMSprop

__all__ = ["NLMS", "SGD", "Adagrad", "Adam", "AdamW", "NaturalGradient", "Optimizer", "RMSprop",
           "clip_grad_norm_", "clip_grad_value_", "lr_scheduler"]
