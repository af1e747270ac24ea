"""Mixed precision: ``autocast`` regions and ``GradScaler`` loss scaling, written once against
the array API (docs/amp.md). The policy is one table, grilly.amp.policy.POLICY."""
from .autocast import (autocast, custom_bwd, custom_fwd, get_autocast_dtype, is_autocast_available,
                       is_autocast_enabled)
from .grad_scaler import GradScaler
from .policy import FLOAT32, LOWER, POLICY

__all__ = ["FLOAT32", "GradScaler", "LOWER", "POLICY", "autocast", "custom_bwd", "custom_fwd",
           "get_autocast_dtype", "is_autocast_available", "is_autocast_enabled"]
