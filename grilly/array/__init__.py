"""Backend-agnostic array semantics: the Array type, dtypes, promotion and every op's rules."""

import sys as _sys
import types as _types


class _Package(_types.ModuleType):
    """This package, callable as NumPy's ``np.array``: ``grilly.array([[1, 2], [3, 4]])`` (the
    name is both the array layer and NumPy's most used constructor)."""

    def __call__(self, obj, dtype=None, *, copy=True, order="K", ndmin=0, device=None):
        from .creation import array
        return array(obj, dtype, copy=copy, order=order, ndmin=ndmin, device=device)


_sys.modules[__name__].__class__ = _Package
