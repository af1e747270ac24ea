"""The shader variants grilly builds: one GLSL source, many dtypes (shared by the build script
and the runtime, so a variant's name is spelled in one place)."""
from __future__ import annotations

import functools
import re
from pathlib import Path

# dtype name: (storage type, compute type, kind, bits). bool is stored as uint8 (0 or 1), so
# host transfers of bool arrays are plain byte copies; float16 computes in float32.
TOPK_KMAX = (16, 64)   # register list sizes of shaders/sort/topk.comp (larger k: a full sort)

DTYPES = {
    "bool": ("uint8_t", "uint", "K_B", 8),
    "int8": ("int8_t", "int", "K_I", 8), "int16": ("int16_t", "int", "K_I", 16),
    "int32": ("int", "int", "K_I", 32), "int64": ("int64_t", "int64_t", "K_I", 64),
    "uint8": ("uint8_t", "uint", "K_U", 8), "uint16": ("uint16_t", "uint", "K_U", 16),
    "uint32": ("uint", "uint", "K_U", 32), "uint64": ("uint64_t", "uint64_t", "K_U", 64),
    "float16": ("float16_t", "float", "K_F", 16), "float32": ("float", "float", "K_F", 32),
    "float64": ("double", "double", "K_F", 64),
}

# complex dtype name: (vector type for storage and compute, component type, bits). A complex
# element is one vec2/dvec2 (real, imag): the same 8/16 bytes as numpy's complex64/complex128.
COMPLEX = {"complex64": ("vec2", "float", 64), "complex128": ("dvec2", "double", 128)}

# element size in bits -> (storage, compute) types of the raw-word gather/scatter shader
WORDS = {8: ("uint8_t", "uint"), 16: ("uint16_t", "uint"), 32: ("uint", "uint"),
         64: ("uint64_t", "uint64_t"), 128: ("uvec4", "uvec4")}

# conv_dw.comp's variants: (operands' dtype, gradients' dtype)
CONV_DW_DTYPES = (("float32", "float32"), ("bfloat16", "float32"), ("bfloat16", "bfloat16"),
                  ("float16", "float32"), ("float16", "float16"))

# shaders/elementwise/complex.comp's ops by result kind (complex, real, bool)
COMPLEX_OPS = {
    "ewc": ("negative", "positive", "conj", "square", "round", "sqrt", "reciprocal", "sign",
            "exp", "expm1", "log", "log1p", "log2", "log10", "sinh", "cosh", "tanh", "sin",
            "cos", "tan", "asinh", "acosh", "atanh", "asin", "acos", "atan", "add", "subtract",
            "multiply", "divide", "pow", "where"),
    "ewcr": ("abs", "real", "imag"),
    "ewcb": ("isfinite", "isinf", "isnan", "equal", "not_equal"),
}
# the ops of elementwise.comp's float variants with a float result
EW_FLOAT_OPS = ("abs", "acos", "acosh", "asin", "asinh", "atan", "atanh", "ceil", "floor",
                "trunc", "round", "cos", "cosh", "sin", "sinh", "tan", "tanh", "exp", "expm1",
                "log", "log1p", "log2", "log10", "sqrt", "reciprocal", "negative", "positive",
                "sign", "square", "add", "subtract", "multiply", "divide", "floor_divide",
                "remainder", "pow", "atan2", "copysign", "hypot", "logaddexp", "nextafter",
                "maximum", "minimum", "relu_grad", "where")
# Variants built once per op as well (OP_FIXED; named "<variant>_<op>"): runtime.pipeline takes
# the op's own module for (variant, (op code, ...)). These shaders are big (the float math
# library inlined in every op: 230-520 KB; complex.comp 1.5 MB), and a driver parses and prunes
# the whole module for each op's pipeline (0.1-0.45 s an op on lavapipe, 2 s for complex); one
# op's module is 3-160 KB. complex.comp has no all-ops variant: an op outside COMPLEX_OPS is
# refused (vulkan/kernels.py).
PER_OP = {**{f"ew_{d}": EW_FLOAT_OPS for d in ("float16", "bfloat16", "float32", "float64")},
          **{f"{tag}_{c}": ops for c in ("complex64", "complex128")
             for tag, ops in COMPLEX_OPS.items()}}

SHADER_DIR = Path(__file__).resolve().parents[3] / "shaders"   # sources (repo checkout only)
SPV_DIR = Path(__file__).resolve().parents[2] / "shaders"       # grilly/shaders: package data


def _dtype_defines(prefix: str, name: str) -> list[str]:
    if name == "bfloat16":   # storage only: its 16 bits; cast.comp converts through float32
        return [f"-D{prefix}_TS=uint16_t", f"-D{prefix}_TC=float", f"-D{prefix}_KIND=K_F",
                f"-D{prefix}_BITS=16", f"-D{prefix}_BF16=1"]
    if name in COMPLEX:
        # X_CPLX=1: X_TS/X_TC are the vector type, X_RC the component (real part) type
        vec, comp, bits = COMPLEX[name]
        return [f"-D{prefix}_TS={vec}", f"-D{prefix}_TC={vec}", f"-D{prefix}_KIND=K_F",
                f"-D{prefix}_BITS={bits}", f"-D{prefix}_CPLX=1", f"-D{prefix}_RC={comp}"]
    ts, tc, kind, bits = DTYPES[name]
    return [f"-D{prefix}_TS={ts}", f"-D{prefix}_TC={tc}", f"-D{prefix}_KIND={kind}",
            f"-D{prefix}_BITS={bits}"]


def variants() -> dict[str, tuple[str, list[str]]]:
    """Every variant: name -> (source path relative to shaders/, glslc -D flags)."""
    out = {}
    for d in DTYPES:
        extra = [f"-DIS_F64={int(d == 'float64')}", f"-DIS_F16={int(d == 'float16')}"]
        for ob in (0, 1):
            out[f"ew{'b' if ob else ''}_{d}"] = (
                "elementwise/elementwise.comp", _dtype_defines("IN", d) + extra + [f"-DOUT_BOOL={ob}"])
        for d2 in DTYPES:
            out[f"cast_{d}_{d2}"] = (
                "elementwise/cast.comp", _dtype_defines("IN", d) + _dtype_defines("OUT", d2)
                + (["-DRAW16=1"] if d == d2 and DTYPES[d][3] == 16 else []))
        out[f"red_{d}"] = ("reduce/reduce.comp", _dtype_defines("IN", d) + ["-DARG=0"])
        if d == "float16":   # float16 in, float32 out (autocast's master gradients)
            out["red_float16_f32"] = ("reduce/reduce.comp",
                                      _dtype_defines("IN", d) + ["-DARG=0", "-DOUT_F32=1"])
            out["red_bfloat16_f32"] = ("reduce/reduce.comp", _dtype_defines("IN", "bfloat16")
                                       + ["-DARG=0", "-DOUT_F32=1"])
            out["red_bfloat16"] = ("reduce/reduce.comp",
                                   _dtype_defines("IN", "bfloat16") + ["-DARG=0"])
        out[f"arg_{d}"] = ("reduce/reduce.comp", _dtype_defines("IN", d) + ["-DARG=1"])
        out[f"sort_{d}"] = ("sort/sort.comp", _dtype_defines("IN", d))
        for kmax in TOPK_KMAX:
            out[f"topk{kmax}_{d}"] = ("sort/topk.comp", _dtype_defines("IN", d) + [f"-DKMAX={kmax}"])
            if d in ("float32", "float64"):   # matmul_topk's first pass (add, thresholds)
                out[f"topkscan{kmax}_{d}"] = ("sort/topk.comp", _dtype_defines("IN", d)
                                              + [f"-DKMAX={kmax}", "-DSCAN"])
        if d != "bool":
            out[f"mm_{d}"] = ("linalg/matmul.comp", _dtype_defines("IN", d))
    # bfloat16: elementwise ops with float32 arithmetic on its bits (the ops the array layer
    # runs natively: grilly/array/bfloat16.py's ELEMENTWISE), and casts to and from every real
    # dtype (everything else computes in float32 there)
    for ob in (0, 1):
        out[f"ew{'b' if ob else ''}_bfloat16"] = (
            "elementwise/elementwise.comp",
            _dtype_defines("IN", "bfloat16") + ["-DIS_F64=0", "-DIS_F16=0", f"-DOUT_BOOL={ob}"])
    for d in (*DTYPES, "bfloat16"):
        out[f"cast_bfloat16_{d}"] = ("elementwise/cast.comp", _dtype_defines("IN", "bfloat16")
                                     + _dtype_defines("OUT", d))
        src = _dtype_defines("IN", d)
        if d == "float16":   # read as bits: cast.comp decodes subnormals exactly
            src = ["-DIN_TS=uint16_t", "-DIN_TC=float", "-DIN_KIND=K_F", "-DIN_BITS=16",
                   "-DIN_F16BITS=1"]
        out[f"cast_{d}_bfloat16"] = ("elementwise/cast.comp", src
                                     + _dtype_defines("OUT", "bfloat16"))
    out["cast_bfloat16_bfloat16"][1].append("-DRAW16=1")   # (a copy: its rows of 4 as words)
    out["philox"] = ("random/philox.comp", [])
    for d in ("float32", "float64"):   # philox_uniform: the words as floats in [0, 1)
        out[f"philox_uniform_{d}"] = ("random/philox.comp", [f"-DUNIFORM={d[5:]}"])
    for d in ("float16", "float32", "float64"):   # philox_dropout: u >= p ? scale : 0
        out[f"philox_dropout_{d}"] = ("random/philox.comp", [f"-DUNIFORM={d[5:]}", "-DDROP"])
    # (bfloat16: float32's multiplier, rounded)
    out["philox_dropout_bfloat16"] = ("random/philox.comp", ["-DUNIFORM=32", "-DDROP", "-DBF16OUT"])
    for c in COMPLEX:
        for d in (*DTYPES, *COMPLEX):
            out[f"cast_{c}_{d}"] = (
                "elementwise/cast.comp", _dtype_defines("IN", c) + _dtype_defines("OUT", d))
            out[f"cast_{d}_{c}"] = (
                "elementwise/cast.comp", _dtype_defines("IN", d) + _dtype_defines("OUT", c))
        out[f"red_{c}"] = ("reduce/reduce.comp", _dtype_defines("IN", c) + ["-DARG=0"])
        out[f"mm_{c}"] = ("linalg/matmul.comp", _dtype_defines("IN", c))
    whole = {}   # complex.comp's all-ops variants: only their per-op ones are built
    for c in COMPLEX:  # complex elementwise ops: complex, real (abs, real, imag), bool results
        for k, tag in enumerate(COMPLEX_OPS):
            whole[f"{tag}_{c}"] = ("elementwise/complex.comp",
                                   [f"-DIS_F64={int(c == 'complex128')}", f"-DOUT_KIND={k}"])
    # benchmark only: exp/log/tanh from the driver's built-ins, to price the float32 library
    out["ew_float32_builtin"] = (out["ew_float32"][0], out["ew_float32"][1] + ["-DGRILLY_BUILTIN_MATH=1"])
    out["mm_tiled_float32"] = ("linalg/matmul_tiled.comp", [])
    for d in ("float16", "float32", "float64"):
        out[f"softmax_{d}"] = ("nn/softmax.comp", _dtype_defines("IN", d))
    # (bfloat16: its bits, float32 registers: shaders/io16.glsl; autocast's layers)
    for d in ("float16", "bfloat16", "float32", "float64"):
        out[f"conv_{d}"] = ("nn/conv.comp", _dtype_defines("IN", d))
        out[f"pool_{d}"] = ("nn/pool.comp", _dtype_defines("IN", d))
    out["mm_bfloat16"] = ("linalg/matmul.comp", _dtype_defines("IN", "bfloat16"))
    # a small convolution weight gradient over a long K (conv_dw.comp)
    for d_in, d_out in CONV_DW_DTYPES:
        out[f"conv_dw_{d_in}_{d_out}"] = ("nn/conv_dw.comp", _dtype_defines("IN", d_in)
                                          + _dtype_defines("OUT", d_out))
    # batched power-of-two DFTs in shared memory (vulkan/fft.py)
    for c in COMPLEX:
        out[f"fft_{c}"] = ("linalg/fft.comp", [f"-DIS_F64={int(c == 'complex128')}"])
        out[f"fft_r2c_{c}"] = ("linalg/fft_r2c.comp", [f"-DIS_F64={int(c == 'complex128')}"])
    for d in ("float32", "float64"):
        out[f"xent_{d}"] = ("nn/xent.comp", _dtype_defines("IN", d))
        out[f"bnorm_{d}"] = ("nn/bnorm.comp", _dtype_defines("IN", d))
        out[f"lnorm_{d}"] = ("nn/lnorm.comp", _dtype_defines("IN", d))
        out[f"attn_{d}"] = ("nn/attention.comp", _dtype_defines("IN", d))
    # float16 storage, float32 registers (the fused OPs 0-3 only; lse and aux float32)
    out["attn_float16"] = ("nn/attention.comp", _dtype_defines("IN", "float16"))
    out["attn_bfloat16"] = ("nn/attention.comp", _dtype_defines("IN", "bfloat16"))
    for d in ("float32", "float64"):
        out[f"optim_{d}"] = ("nn/optim.comp", _dtype_defines("IN", d))
        out[f"optim_multi_{d}"] = ("nn/optim_multi.comp", _dtype_defines("IN", d))
        out[f"lif_{d}"] = ("nn/lif.comp", _dtype_defines("IN", d))
        # each parameter row its own binding (devices with 8): no packing copies
        out[f"lifsep_{d}"] = ("nn/lif.comp", _dtype_defines("IN", d) + ["-DSEP"])
        out[f"leaky_{d}"] = ("nn/leaky.comp", _dtype_defines("IN", d))
        out[f"plasticity_{d}"] = ("nn/plasticity.comp", _dtype_defines("IN", d))
        out[f"segsum_{d}"] = ("reduce/segment.comp", _dtype_defines("IN", d))
        out[f"segmax_{d}"] = ("reduce/segment.comp", _dtype_defines("IN", d) + ["-DMAX"])
    for d in ("float32", "float64", "int32", "uint32"):
        out[f"fuse_{d}"] = ("elementwise/fused.comp",
                            _dtype_defines("IN", d) + [f"-DIS_F64={int(d == 'float64')}", "-DIS_F16=0"])
    out["red4_float32"] = ("reduce/reduce_vec4.comp", [])
    out["red4_float16"] = ("reduce/reduce_vec4.comp", ["-DIN16=1"])
    out["red4_bfloat16"] = ("reduce/reduce_vec4.comp", ["-DIN16=1", "-DBF16=1"])
    # the large-matmul shader by operand layout (n: as stored, t: transposed view) and edges
    for ta in "nt":
        for tb in "nt":
            for edge in ("", "_edge"):
                defs = (["-DTA"] if ta == "t" else []) + (["-DTB"] if tb == "t" else [])
                defs += ["-DEDGE"] if edge else []
                out[f"sgemm_{ta}{tb}{edge}_float32"] = ("linalg/sgemm.comp", defs)
                out[f"sgemm_{ta}{tb}{edge}_float16"] = ("linalg/sgemm.comp", defs + ["-DF16"])
                # bfloat16's bits (autocast on devices without its tensor cores)
                out[f"sgemm_{ta}{tb}{edge}_bfloat16"] = ("linalg/sgemm.comp", defs + ["-DBF16"])
                out[f"sgemm_{ta}{tb}{edge}_s64_float32"] = ("linalg/sgemm.comp", defs + ["-DS64"])
                if not edge:
                    out[f"sgemm_{ta}{tb}_w256_float32"] = ("linalg/sgemm.comp", defs + ["-DWIDE"])
                # tensor cores (VK_KHR_cooperative_matrix devices: vulkan/linalg.py chooses);
                # bfloat16 ones need VK_KHR_shader_bfloat16 (and glslang 15 to build)
                for cd, extra in (("float16", []), ("bfloat16", ["-DBF16"])):
                    out[f"hgemm_{ta}{tb}{edge}_coop_{cd}"] = ("linalg/hgemm_coop.comp",
                                                             defs + extra)
                    out[f"hgemm_{ta}{tb}{edge}_coop_f32out_{cd}"] = (
                        "linalg/hgemm_coop.comp", defs + extra + ["-DOUT_F32"])
                    if ta == "n":   # linear's forward: the bias added
                        out[f"hgemm_{ta}{tb}{edge}_coop_bias_{cd}"] = (
                            "linalg/hgemm_coop.comp", defs + extra + ["-DBIAS"])
    for bits, (ts, tc) in WORDS.items():
        out[f"gather_u{bits}"] = ("indexing/gather.comp", [f"-DW_TS={ts}", f"-DW_TC={tc}"])
        if bits in (16, 32, 64):
            out[f"transpose_u{bits}"] = ("elementwise/transpose.comp",
                                             [f"-DW_TS={ts}", f"-DW_TC={tc}"])
    codes = op_codes()
    for v, ops in PER_OP.items():
        src, flags = out.get(v) or whole[v]
        for op in ops:
            out[f"{v}_{op}"] = (src, flags + [f"-DOP_FIXED={codes[op]}"])
    return out


@functools.cache
def per_op_variants() -> dict[str, dict[int, str]]:
    """variant -> {op code: the variant of that op alone} (PER_OP; runtime.pipeline)."""
    codes = op_codes()
    return {v: {codes[op]: f"{v}_{op}" for op in ops} for v, ops in PER_OP.items()}


@functools.cache
def op_codes() -> dict[str, int]:
    """The elementwise op codes, read from shaders/elementwise/ops.glsl at build time (once: the
    callers only read the table)."""
    text = (SPV_DIR / "ops.txt").read_text()
    return {k.lower(): int(v) for k, v in re.findall(r"#define OP_(\w+) (\d+)", text)}
