"""Learning rules beyond backprop-with-an-optimizer: continual learning (EWC and Fisher
information), natural gradients, whitening, subspace learning (Oja, Sanger) and the seed's
``Learning()`` API. Written once against the array API, so every rule runs on every device
(docs/learning.md)."""
from .ewc import EWC, ewc_penalty, fisher_diagonal
from .natural import natural_gradient
from .seed import Learning, VulkanLearning
from .subspace import oja_step, sanger_step
from .whitening import Whitening, whiten

__all__ = ["EWC", "Learning", "Whitening", "ewc_penalty", "fisher_diagonal", "natural_gradient",
           "oja_step", "sanger_step", "VulkanLearning", "whiten"]
