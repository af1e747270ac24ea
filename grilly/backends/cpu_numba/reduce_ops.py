"""Scalar helpers of the generated reduction kernels.

``fmaximum``/``fminimum`` lower to LLVM's ``llvm.maximum``/``llvm.minimum``: NaN-propagating, and
LLVM vectorizes reductions over them, which it does not for a compare-and-select loop.
"""
from __future__ import annotations

from llvmlite import ir
from numba.core import cgutils
from numba.extending import intrinsic


def _float_intrinsic(name: str):
    @intrinsic
    def f(typingctx, a, b):
        def codegen(context, builder, signature, args):
            lt = args[0].type
            suffix = {"float": "f32", "double": "f64"}[str(lt)]
            fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(lt, [lt, lt]),
                                                f"llvm.{name}.{suffix}")
            return builder.call(fn, args)
        return a(a, a), codegen
    return f


fmaximum = _float_intrinsic("maximum")
fminimum = _float_intrinsic("minimum")
# NaN-ignoring (IEEE maxNum): vectorizes into plain vector max instructions
fmaxnum = _float_intrinsic("maxnum")
