"""Mixed precision: ``autocast`` regions and ``GradScaler`` loss scaling, written once against
the array API (docs/amp.md). The policy is one table, grilly.amp.policy.POLICY."""
from . import autocast as _autocast_mod  # noqa: F401  (the module: grilly.torch_toplevel reads it)
from .autocast import (autocast, autocast_decrement_nesting, autocast_increment_nesting,
                       clear_autocast_cache, custom_bwd, custom_fwd, get_autocast_cpu_dtype,
                       get_autocast_dtype, get_autocast_gpu_dtype, is_autocast_available,
                       is_autocast_cache_enabled, is_autocast_cpu_enabled, is_autocast_enabled,
                       set_autocast_cache_enabled, set_autocast_cpu_dtype,
                       set_autocast_cpu_enabled, set_autocast_dtype, set_autocast_enabled,
                       set_autocast_gpu_dtype)
from .grad_scaler import GradScaler
from .policy import AS_GIVEN, FLOAT32, LOWER, POLICY

__all__ = ["AS_GIVEN", "FLOAT32", "GradScaler", "LOWER", "POLICY", "autocast",
           "autocast_decrement_nesting", "autocast_increment_nesting", "clear_autocast_cache",
           "custom_bwd", "custom_fwd", "get_autocast_cpu_dtype", "get_autocast_dtype",
           "get_autocast_gpu_dtype", "is_autocast_available", "is_autocast_cache_enabled",
           "is_autocast_cpu_enabled", "is_autocast_enabled", "set_autocast_cache_enabled",
           "set_autocast_cpu_dtype", "set_autocast_cpu_enabled", "set_autocast_dtype",
           "set_autocast_enabled", "set_autocast_gpu_dtype"]
