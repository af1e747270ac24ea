"""``grilly.functional`` is ``grilly.nn.functional`` (the same module object)."""
import sys

from .nn import functional

sys.modules[__name__] = functional
