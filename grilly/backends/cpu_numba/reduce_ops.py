"""Scalar helpers of the generated reduction kernels.

``fmaximum``/``fminimum`` lower to LLVM's ``llvm.maximum``/``llvm.minimum``: NaN-propagating, and
LLVM vectorizes reductions over them, which it does not for a compare-and-select loop. On x86
each costs several instructions per vector, so the float max/min block loops use
``fmaxnum_nn``/``fminnum_nn`` with ``magbits`` instead (reductions.py says how).
"""
from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic


def _float_intrinsic(name: str, flags: tuple = ()):
    @intrinsic
    def f(typingctx, a, b):
        def codegen(context, builder, signature, args):
            lt = args[0].type
            suffix = {"float": "f32", "double": "f64"}[str(lt)]
            fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(lt, [lt, lt]),
                                                f"llvm.{name}.{suffix}")
            return builder.call(fn, args, fastmath=flags)
        return a(a, a), codegen
    return f


fmaximum = _float_intrinsic("maximum")
fminimum = _float_intrinsic("minimum")
# NaN-ignoring (IEEE maxNum): vectorizes into plain vector max instructions
fmaxnum = _float_intrinsic("maxnum")
# maxNum/minNum flagged nnan nsz on the call alone: one vmaxps/vminps per vector, and a reduction
# over them vectorizes with several accumulators while the rest of the function keeps exact
# float semantics. A NaN operand makes the result poison (any value), a zero's sign is
# unspecified: a caller must find NaNs another way (``magbits``) and then discard the result.
fmaxnum_nn = _float_intrinsic("maxnum", ("nnan", "nsz"))
fminnum_nn = _float_intrinsic("minnum", ("nnan", "nsz"))


@intrinsic
def magbits(typingctx, a):
    """The bits of ``|a|`` as a signed integer of ``a``'s width (int32 for float32, int64 for
    float64): above ``magbits(inf)`` exactly when ``a`` is NaN. Integer work, so no fastmath
    flag can fold it away, and an integer max over it vectorizes exactly."""
    it = {types.float32: types.int32, types.float64: types.int64}.get(a)
    if it is None:
        return None

    def codegen(context, builder, signature, args):
        t = ir.IntType(it.bitwidth)
        return builder.and_(builder.bitcast(args[0], t), ir.Constant(t, (1 << (it.bitwidth - 1)) - 1))
    return it(a), codegen
