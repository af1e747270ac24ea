"""linalg kernels of the Vulkan backend (docs/kernels/linalg.md conventions).

matmul is native (shaders/linalg/): float32, float16 and bfloat16 (its bits, float32 sums) in
128x128-tiled shaders (sgemm.comp, with 128x256 and 64x64 tiles where they fit better; float16
and bfloat16 on tensor cores, hgemm_coop.comp, where the device has cooperative matrices), small or
misaligned float32 in a 64x64-tiled one, other dtypes one invocation per output; diagonal is a
view. cross and fft_roll are the array
layer's compositions; the decompositions and the FFTs its host path (grilly.array.host), counted
in ``grilly.device_stats(device)["host_round_trips"]`` (docs/vulkan.md lists them).
"""
from __future__ import annotations

from .. import dtypes as _dt
from .kernels import (_view, astype, broadcast_to, copy, elementwise, full, keep_bounded,
                      new_buffer, permute, reshape)
from .memory import Buffer
from .reductions import KERNELS as _REDUCTIONS
from .reductions import _prod, dispatch

TILE = 64


def _stack3(buf: Buffer, batch: tuple, rows: int, cols: int) -> Buffer:
    """``buf`` broadcast to ``batch + (rows, cols)`` as a (B, rows, cols) view (or device copy)."""
    shp = buf.shape
    if rows > 1 and cols > 1 and shp[-2:] == (rows, cols):
        # the common layouts directly, with the strides the general path gives them (this runs
        # twice for every product)
        if not batch and len(shp) == 2:
            s0, s1 = buf.strides
            return _view(buf, buf.offset, (1, rows, cols), (s0 * rows, s0, s1))
        if len(shp) == 3 and len(batch) == 1 and shp[0] == batch[0] > 1:
            return buf
    return reshape(broadcast_to(buf, batch + (rows, cols)), (_prod(batch), rows, cols))


SGEMM_BK = 16   # k depth of the large-matmul shader's slabs (shaders/linalg/sgemm.comp)
SGEMM_MIN_TILES = 32   # fewer 128x128 tiles than this: the 64x64 shader keeps more SMs busy


def _layout(st: tuple, rows: int, cols: int) -> str | None:
    """'n' for a (rows, cols) operand with unit column stride, 't' for a transposed view (unit
    row stride), None for any other layout; the contiguous length must be a multiple of 4."""
    if st[2] == 1 and cols % 4 == 0:
        return "n"
    if st[1] == 1 and rows % 4 == 0:
        return "t"
    return None


COOP_BM, COOP_BK = 128, 16   # shaders/linalg/hgemm_coop.comp's output tile (square) and slab


def _coop_variant(out: Buffer, a3: Buffer, b3: Buffer, m: int, n: int, k: int) -> str:
    """The tensor-core variant for the operands' dtype (float16 or bfloat16; the output of it,
    or float32: the f32out variants): aligned (16-byte loads, whole tiles) where the operands
    allow it, else the edge one, which takes any shape and strides."""
    ta = "t" if a3.strides[2] != 1 and a3.strides[1] == 1 else "n"
    tb = "t" if b3.strides[2] != 1 and b3.strides[1] == 1 else "n"
    aligned = (m % COOP_BM == 0 and n % COOP_BM == 0 and k % COOP_BK == 0
               and _layout(a3.strides, m, k) == ta and _layout(b3.strides, k, n) == tb
               and not any(v % 8 for v in (a3.strides[0], a3.strides[2 if ta == "t" else 1],
                                           b3.strides[0], b3.strides[2 if tb == "t" else 1],
                                           a3.offset, b3.offset, out.offset)))
    f32 = "f32out_" if out.dtype is not a3.dtype else ""
    return f"hgemm_{ta}{tb}{'' if aligned else '_edge'}_coop_{f32}{a3.dtype.name}"


COOP_SPLIT_MIN_K = 2048   # 1024^3 (64 tiles) measured 1.8x slower split on the H100


COOP_SPLIT_MAX = 128   # a conv weight gradient of one tile (64 x 27, K = 262144) wants them all


def _coop_split(nb: int, tiles: int, k: int, aligned: bool, units: int | None = None,
                m: int = 0, n: int = 0) -> int:
    """Slices of K for a tensor-core product with too few output tiles to fill the GPU (weight
    gradients, narrow layers): 1 for no split. Aligned variants keep slices whole slabs. With
    the device's compute ``units`` known, the wave model's count (up to COOP_SPLIT_MAX): a
    64 x 27 weight gradient with K = 262144 ran on 16 workgroups at 1 TFLOP/s."""
    if nb != 1 or k < COOP_SPLIT_MIN_K:
        return 1
    granule = COOP_BK if aligned else 1
    if units:
        return _waves(tiles, k, granule, units, 1, COOP_BM * COOP_BM, m, n, COOP_SPLIT_MAX)
    return _slices(tiles, k, granule)


def _sgemm_variant(a3: Buffer, b3: Buffer, m: int, n: int, k: int,
                   dtype: str = "float32") -> str | None:
    """The vec4, 128x128-tile shader variant for these operands (their layouts as they are, no
    copy), or None where it does not apply: unaligned strides, N not a multiple of 4, or too
    small a product for its tiles."""
    ta, tb = _layout(a3.strides, m, k), _layout(b3.strides, k, n)
    if ta is None or tb is None or n % 4:
        return None
    other = (a3.strides[0], a3.strides[2 if ta == "t" else 1],
             b3.strides[0], b3.strides[2 if tb == "t" else 1], a3.offset, b3.offset)
    if any(v % 4 for v in other):
        return None
    aligned = m % 128 == 0 and n % 128 == 0 and k % SGEMM_BK == 0
    tiles = a3.shape[0] * -(-m // 128) * -(-n // 128)
    if not aligned and tiles < SGEMM_MIN_TILES and (
            a3.shape[0] != 1 or tiles * _slices(tiles, k, SGEMM_BK) < SGEMM_MIN_TILES):
        # (a long K fills the GPU as slices: _split_k)
        return None
    return f"sgemm_{ta}{tb}{'' if aligned else '_edge'}_{dtype}"


def use_s64(nb: int, m: int, n: int, k: int) -> bool:
    """Whether a float32 product runs on 64x64 tiles (sgemm.comp's S64) rather than 128x128:
    where the 128x128 tiles would be at least half empty (an edge of 64 or less), unless so few
    tiles that a single product runs split over K instead. On an H100, attention's batched
    (256, 256) x (256, 64) products ran 1.7x faster, (65536, 576) x (576, 64) 1.5x; products
    with full 128x128 tiles 1.2-1.5x slower."""
    if nb == 1 and -(-m // 64) * -(-n // 64) < SPLITK_TILES:
        return False
    return min(m, n) <= 64 or -(-m // 128) * -(-n // 128) * 128 * 128 >= 1.5 * m * n


def _s64(variant: str, m: int, n: int, k: int) -> str:
    """The S64 (64x64-tile) counterpart of an sgemm float32 variant for an (M, N, K) product:
    aligned where M and N are whole 64x64 tiles and K whole 32-deep slabs, else the edge one."""
    aligned = m % 64 == 0 and n % 64 == 0 and k % 32 == 0
    return f"sgemm_{variant.split('_')[1]}{'' if aligned else '_edge'}_s64_float32"


WIDE_MIN_TILES = 128   # fewer 128x256 tiles than this (unsplit) leave SMs idle: 128x128 ones


def _wide(variant: str, nb: int, m: int, n: int, split: bool = False) -> str | None:
    """The WIDE (128x256-tile, sgemm.comp) counterpart of an aligned float32 variant, where N is
    whole 256-column tiles and, unless the product runs split over K (which fills the GPU with
    slices), there are WIDE_MIN_TILES of them: about 1.1x the 128x128 tiles' speed on an H200
    (docs/benchmarks.md); None where it does not apply."""
    if not variant.endswith("_float32") or "_edge" in variant or "_s64" in variant or n % 256:
        return None
    if not split and nb * (m // 128) * (n // 256) < WIDE_MIN_TILES:
        return None
    return variant.replace("_float32", "_w256_float32")


NT_COPY_MIN_M = 2048   # rows from which B^T is copied so that an "nt" product runs as "nn"
NT_COPY_MIN_N = 2048   # (with N = 512 or 1536, "nn" measured no faster than "nt")


def _copy_b_pays(variant: str, nb: int, m: int, n: int) -> bool:
    """Whether a product whose B is a transposed view (``variant``'s layout "nt" or "tt":
    Linear's x @ w^T) is large enough to copy B^T contiguous once (kernels._transpose_into:
    8 bytes moved per element of B, against 2M flops per element) and run the "nn" or "tn"
    variant, whose loads of B need no transpose into shared memory (sgemm and tensor cores)."""
    return nb == 1 and variant[7] == "t" and m >= NT_COPY_MIN_M and n >= NT_COPY_MIN_N


def _untranspose_b(variant: str, b3: Buffer, nb: int, m: int, n: int, k: int):
    """(variant, b3) for a float32 product: where _copy_b_pays and N is whole 256-column tiles,
    B^T copied and the "nn"/"tn" variant. On an H200, copy included: 4096^3 44.8 -> 46.7
    TFLOP/s, (8000, 4096) x (4096, 4096)^T 43.8 -> 45.9, (8192, 512) x (2048, 512)^T 35.7 ->
    42.8. Otherwise as they are."""
    if (not _copy_b_pays(variant, nb, m, n) or not variant.endswith("_float32") or n % 256
            or k % SGEMM_BK):
        return variant, b3
    return variant[:7] + "n" + variant[8:], copy(b3)


SPLITK_TILES = 128   # fewer 128x128 output tiles than this leave SMs idle: split K
SPLITK_MIN_TILES = 16   # below this, split products measured slower on the H100 (unexplained;
# where the wave model applies it decides: 128 x 256 x 65536 unsplit ran at 0.7 TFLOP/s)
SPLITK_MAX = 16
SPLITK_MIN_K = 256   # k per split, at least


# The wave model (_waves) where a device reports its compute units. Its constants are an H200's,
# in the time a 128x128-tile workgroup takes per step of k (about 96 ns): the bytes memory moves
# meanwhile (about 2.5 TB/s), and the partial sums' reduction dispatch and barrier.
SPLIT_BYTES_PER_STEP = 240_000
SPLIT_FIXED_STEPS = 80
SPLIT_WAVES_MAX = 64   # the most slices it weighs


def _slices(tiles: int, k: int, granule: int, target: int = 0, most: int = 0,
            fit: tuple | None = None) -> int:
    """The number of K slices (doubling) that brings ``tiles`` output tiles towards ``target``
    workgroups (SPLITK_TILES): at most ``most`` (SPLITK_MAX), each slice a multiple of
    ``granule`` and SPLITK_MIN_K long at least (1: no split). With ``fit`` = (compute units,
    workgroups per unit, tile elements, M, N) and the units known, the count _waves picks."""
    if fit is not None and fit[0]:
        return _waves(tiles, k, granule, *fit)
    target, most = target or SPLITK_TILES, most or SPLITK_MAX
    s = 1
    while (s * 2 <= most and tiles * s < target and k % (s * 2 * granule) == 0
           and k // (s * 2) >= SPLITK_MIN_K):
        s *= 2
    return s


def _waves(tiles: int, k: int, granule: int, units: int, per_unit: int, elems: int, m: int,
           n: int, most: int = 0) -> int:
    """The K slices (1, 2, 4, ... ``most`` or SPLIT_WAVES_MAX; each a multiple of ``granule`` and
    SPLITK_MIN_K long at least) with the least modelled time: the waves of workgroups
    (``per_unit`` at a time on each of ``units``) times each one's share of K, plus the
    reduction of the (M, N) partial sums. Whole waves are what a fixed workgroup target misses:
    18 tiles in 8 slices are 144 workgroups, two waves on 132 SMs with the second nearly empty
    (a conv weight gradient's 256 x 1152 x 16384: 23 TFLOP/s on an H200, 28 in 16 slices)."""
    slots, most = units * per_unit, most or SPLIT_WAVES_MAX
    best, best_t, s = 1, None, 1
    while s <= most and (s == 1 or (k % (s * granule) == 0 and k // s >= SPLITK_MIN_K)):
        t = -(-tiles * s // slots) * (k / s) * elems / 16384 * per_unit
        if s > 1:
            t += (2 * s + 1) * m * n * 4 / SPLIT_BYTES_PER_STEP + SPLIT_FIXED_STEPS
        if best_t is None or t < best_t:
            best, best_t = s, t
        s *= 2
    return best


def _split_k(variant: str, nb: int, m: int, n: int, k: int, units: int | None = None) -> int:
    """How many slices of K an aligned single product runs as (1: no split). A long K with a
    small output (weight gradients x^T @ g: M and N the layer widths, K the batch) has too few
    tiles to fill the GPU; its K slices run as a batch of partial products, then summed. With
    the device's compute ``units`` known, the wave model (_waves) picks how many."""
    if nb != 1:
        return 1
    tiles = -(-m // 128) * -(-n // 128)
    fit = (units, 1, 16384, m, n)
    if variant.endswith("_edge_float32"):
        # the edge shader otherwise only runs where its tiles fill the GPU unsplit
        return 1 if tiles >= SGEMM_MIN_TILES else _slices(tiles, k, SGEMM_BK, fit=fit)
    if tiles >= SPLITK_TILES or (tiles < SPLITK_MIN_TILES and not units):
        return 1
    return _slices(tiles, k, SGEMM_BK, fit=fit)


TILED_SPLIT_TILES = 256   # workgroups a long-K product on the generic shader should fill
TILED_SPLIT_MAX = 1024
# shorter products run unsplit: a 64x64 tile's K of 512 takes a few microseconds of one SM,
# less than the split's two extra dispatches (the partial sums' reduction, the bias add) cost
# the host (a linear layer's forward at batch 128: 3 dispatches -> 1)
TILED_SPLIT_MIN_K = 1024


def _tiled_split(nb: int, tiles: int, k: int) -> int:
    """K slices for a single product on the generic tiled shader (1: none): a conv layer's
    weight gradient (a narrow output, K = batch x pixels) would otherwise run on a handful of
    workgroups. Slices halve K while it stays divisible and at least SPLITK_MIN_K long."""
    if nb != 1 or k < TILED_SPLIT_MIN_K:
        return 1
    s = 1
    while (s * 2 <= TILED_SPLIT_MAX and tiles * s < TILED_SPLIT_TILES and k % (s * 2) == 0
           and k // (s * 2) >= SPLITK_MIN_K):
        s *= 2
    return s


def _split_run(ctx, variant: str, s: int, tiles: int, out: Buffer, a3: Buffer, b3: Buffer,
               m: int, n: int, k: int, plan: tuple | None = None) -> None:
    """``out`` = a3 @ b3 as ``s`` float32 partial products over slices of K (one batched
    dispatch of ``variant``, ``tiles`` workgroups a slice) and their float32 sum (one reduction
    pass), rounded once to out's dtype when that is not float32. ``plan``: (key, a, b, bias)
    of a _matmul call, whose plan is kept where a3 and b3 read a and b in place."""
    chunk = k // s
    ws = new_buffer(ctx, (s, m, n), _dt.float32)
    # the batch axis walks K: the slices are batch entries of the same operands
    ast = (chunk * a3.strides[2], a3.strides[1], a3.strides[2])
    bst = (chunk * b3.strides[1], b3.strides[1], b3.strides[2])
    offs, dims = (ws.offset, a3.offset, b3.offset), (s, m, n, chunk)
    dispatch(ctx, variant, (0, 1), [ws, a3, b3], 0, s * tiles * 256, offs, dims, (ast, bst))
    if plan is not None and out.offset == 0:
        key, a, b, bias = plan
        if a3.alloc is a.alloc and b3.alloc is b.alloc:
            keep_bounded(_PLANS, key, (variant, (0, 1), 0, s * tiles * 256, offs, dims,
                                       (ast, bst), False, bias is not None, s), PLANS_MAX)
    _split_sum(ws, out, s, m, n)


def _split_sum(ws: Buffer, out: Buffer, s: int, m: int, n: int) -> None:
    """``out`` (M, N) = the sum of the (s, M, N) float32 partial products ``ws``."""
    from .kernels import _cast_into
    from .reductions import CODES, _run   # (reductions imports nothing from here)

    total = out if out.dtype is _dt.float32 else new_buffer(ws.ctx, (m, n), _dt.float32)
    _run(reshape(ws, (1, s, m * n)), CODES["sum"], "red_float32", reshape(total, (m, n)))
    if total is not out:
        _cast_into(reshape(out, (m, n)), total, "matmul")


# a product this large (about 0.7 ms on an H200) is submitted at once: the recorder submits by
# items recorded, and a GEMM has few, so the GPU would wait for the host to record what follows
# (an SNN layer's (8000, 4096) x (4096, 4096) weight gradient: its backward 7.6-7.7 -> 7.1-7.3
# ms). From 1 GFLOP on, the encoder layer's eager step measured slower (more submits a step).
SUBMIT_FLOPS = 32e9


def _submit_big(ctx, out: Buffer, k: int) -> None:
    """Submit the batch after a product of SUBMIT_FLOPS or more, so that the GPU starts on it
    while the host records what follows (not inside a captured graph)."""
    _submit_flops(ctx, 2 * out.size * k)


def _submit_flops(ctx, flops: int) -> None:
    if flops >= SUBMIT_FLOPS:
        rec = ctx.recorder
        if rec.capturing is None and rec.recording:
            rec.submit()


def matmul(out_shape, out_dtype, a: Buffer, b: Buffer) -> Buffer:
    """(..., M, K) @ (..., K, N) -> out_shape = broadcast batch + (M, N); inputs of out_dtype."""
    out = _matmul(tuple(out_shape), out_dtype, a, b, None)
    _submit_big(out.ctx, out, a.shape[-1])
    return out


def linear(x: Buffer, w: Buffer, bias: Buffer | None) -> Buffer:
    """x (M, K) @ w (N, K)^T + bias: w read transposed in place; the bias is added in the sgemm
    shader's epilogue where that runs unsplit, else by one elementwise pass."""
    out = _matmul((x.shape[0], w.shape[0]), x.dtype, x, permute(w, (1, 0)), bias)
    _submit_big(out.ctx, out, x.shape[1])
    return out


def linear_backward(g: Buffer, x: Buffer, w: Buffer, need: tuple, grad_dtype=None) -> tuple:
    """(g @ w, g^T @ x, the column sums of g), each None where ``need`` says no: the array
    layer's composition (grilly.array.dense) run on buffers, so the same kernels give the same
    bits without the namespace's per-op work; g^T and w are read in place. ``grad_dtype``
    float32 with float16 operands (autocast's float32 master weights): the weight and bias
    gradients in float32, from the tensor-core product's float32 accumulators and a float32
    column sum (no float16 rounding, no cast pass); without tensor cores the product is
    rounded to float16 and widened."""
    m, n = g.shape
    gd = g.dtype if grad_dtype is None else grad_dtype
    gx = matmul((m, w.shape[1]), g.dtype, g, w) if need[0] else None
    gw = None
    if need[1]:
        gt = permute(g, (1, 0))
        if gd is g.dtype or gd.name == "float32" and _coop(g):
            gw = matmul((n, x.shape[1]), gd, gt, x)   # (float32: the f32out tensor-core variants)
        else:
            gw = astype(matmul((n, x.shape[1]), g.dtype, gt, x), gd)
    gb = _REDUCTIONS["sum"](g, (0,), False, gd) if need[2] else None
    return gx, gw, gb


def _tiled_bias_ok(bias: Buffer | None, dtype) -> bool:
    """Whether the generic tiled shader's epilogue can read ``bias``: a unit-stride vector of
    the output's dtype (element loads: any offset)."""
    return (bias is not None and bias.dtype is dtype
            and (bias.strides == (1,) or bias.size <= 1))


def _bias_ok(bias: Buffer | None, dtype) -> bool:
    """Whether the sgemm epilogue can read ``bias``: what the tiled shader's can, at a 16-byte
    aligned element offset (its vec4 loads)."""
    return _tiled_bias_ok(bias, dtype) and bias.offset % 4 == 0


def _coop_bias_ok(variant: str, bias: Buffer | None, nb: int) -> bool:
    """Whether a tensor-core product takes ``bias`` in its accumulators: one float16 or
    bfloat16 product (the bias has the output's dtype) with A as stored (the BIAS variants: a
    linear layer's) and a unit-stride bias."""
    return (bias is not None and nb == 1 and variant.startswith("hgemm_n")
            and "_f32out_" not in variant and bias.dtype.name == variant.rsplit("_", 1)[1]
            and (bias.strides == (1,) or bias.size <= 1))


_add = elementwise()["add"]   # the bias added where the epilogue cannot take it


def _add_bias(out: Buffer, bias: Buffer) -> Buffer:
    return _add(out.shape, out.dtype, out, bias)


def _gemm_args(out: Buffer, a3: Buffer, b3: Buffer, nb: int, m: int, n: int, k: int) -> tuple:
    """The matmul shaders' push-constant parts: offsets, (batch, M, N, K), operand strides."""
    return (out.offset, a3.offset, b3.offset), (nb, m, n, k), (a3.strides, b3.strides)


def _coop(a: Buffer) -> bool:
    """Whether products of ``a``'s dtype run on tensor cores (float16 or bfloat16 on a device
    with cooperative matrices for it)."""
    phys = a.ctx.phys
    return (a.dtype.name == "float16" and bool(phys.coop_f16)
            or a.dtype.name == "bfloat16" and bool(phys.coop_bf16))


# (context, output shape and dtype, each operand's shape, strides, element offset and dtype,
# the bias's or None) -> the dispatch's arguments (variant, specialization, n, items, offsets,
# dims, strides), whether the bias is bound, whether it is added after, and the K slices of a
# split product (0: none), of a product that read its operands in place: the same call again
# (every step of a training loop) skips choosing the variant. Bounded: offsets and sizes vary.
# (The choice reads the tuning constants above: tests that change them clear it.)
_PLANS: dict = {}
PLANS_MAX = 4096


def _matmul(out_shape: tuple, out_dtype, a: Buffer, b: Buffer, bias: Buffer | None) -> Buffer:
    """matmul, plus ``bias`` (N,) along the rows when given (a single product only). The
    operands have out_dtype, except float16/bfloat16 ones with a float32 result on tensor cores."""
    ctx = a.ctx
    key = (ctx, out_shape, out_dtype, a.shape, a.strides, a.offset, a.dtype, b.shape, b.strides,
           b.offset, b.dtype, None if bias is None else
           (bias.shape, bias.strides, bias.offset, bias.dtype))
    plan = _PLANS.get(key)
    if plan is None:
        return _matmul_planned(out_shape, out_dtype, a, b, bias, key)
    variant, spec, n, items, offs, dims, strides, bound, add, split = plan
    out = new_buffer(ctx, out_shape, out_dtype)
    # (through ``dispatch``, as the first call went: the operands' allocations are a's and b's)
    if split:   # (s, M, N) partial products, then their sum
        ws = new_buffer(ctx, (split, dims[1], dims[2]), _dt.float32)
        dispatch(ctx, variant, spec, [ws, a, b], n, items, offs, dims, strides)
        _split_sum(ws, out, split, dims[1], dims[2])
    else:
        dispatch(ctx, variant, spec, [out, a, b, bias] if bound else [out, a, b], n, items, offs,
                 dims, strides)
    return _add_bias(out, bias) if add else out



def _product(ctx, key: tuple, a: Buffer, b: Buffer, bias: Buffer | None, add: bool, variant: str,
             spec: tuple, ops: list, n: int, items: int, offs: tuple, dims: tuple,
             strides: tuple) -> None:
    """A product's one dispatch, ``add``: the bias is added after it; its plan kept under
    ``key`` where it reads ``a``, ``b`` (and ``bias``) in place."""
    dispatch(ctx, variant, spec, ops, n, items, offs, dims, strides)
    if (ops[0].offset == 0 and ops[1].alloc is a.alloc and ops[2].alloc is b.alloc
            and (len(ops) == 3 or ops[3] is bias)):
        keep_bounded(_PLANS, key,
                     (variant, spec, n, items, offs, dims, strides, len(ops) == 4, add, 0),
                     PLANS_MAX)


def _matmul_planned(out_shape: tuple, out_dtype, a: Buffer, b: Buffer, bias: Buffer | None,
                    key: tuple) -> Buffer:
    """_matmul without a plan: the variant chosen, its dispatch recorded (and planned)."""
    batch, (m, n) = out_shape[:-2], out_shape[-2:]
    k = a.shape[-1]
    ctx = a.ctx
    if a.dtype is not out_dtype and not (out_dtype.name == "float32" and _coop(a)):
        raise TypeError(f"matmul: {a.dtype.name} operands with a {out_dtype.name} result run "
                        "only on tensor cores (float16/bfloat16 -> float32)")
    if k == 0:
        out = full(ctx, out_shape, 0, out_dtype)
        return out if bias is None else _add_bias(out, bias)
    out = new_buffer(ctx, out_shape, out_dtype)
    if out.size == 0:
        return out
    a3, b3 = _stack3(a, batch, m, k), _stack3(b, batch, k, n)
    nb = a3.shape[0]
    if _coop(a):
        # (out_dtype is a's, or float32 where linear_backward asks for a master's gradient)
        variant = _coop_variant(out, a3, b3, m, n, k)
        if "_edge_" not in variant and _copy_b_pays(variant, nb, m, n):
            # the "nt" variant keeps the plain loop (no loads ahead): 160 TFLOP/s at 4096^3
            # against nn's 216 (H200)
            b3 = copy(b3)
            variant = _coop_variant(out, a3, b3, m, n, k)
        args = _gemm_args(out, a3, b3, nb, m, n, k)
        tiles = nb * -(-m // COOP_BM) * -(-n // COOP_BM)
        split = _coop_split(nb, tiles, k, "_edge_" not in variant, ctx.phys.compute_units, m, n)
        if split > 1:
            wide = variant if "_f32out_" in variant else variant.replace("_coop_", "_coop_f32out_")
            _split_run(ctx, wide, split, tiles, out, a3, b3, m, n, k, (key, a, b, bias))
        elif _coop_bias_ok(variant, bias, nb):
            # the accumulators start at the bias (hgemm_coop.comp's BIAS): one rounding
            _product(ctx, key, a, b, bias, False, variant.replace("_coop_", "_coop_bias_"),
                     (0, 1), [out, a3, b3, bias], 0, tiles * 256, args[0] + (bias.offset,),
                     *args[1:])
            return out
        else:
            _product(ctx, key, a, b, bias, bias is not None, variant, (0, 1), [out, a3, b3], 0,
                     tiles * 256, *args)
        return out if bias is None else _add_bias(out, bias)
    variant = _sgemm_variant(a3, b3, m, n, k, out_dtype.name) \
        if out_dtype.name in ("float32", "float16", "bfloat16") else None
    if variant is not None:
        variant, b3 = _untranspose_b(variant, b3, nb, m, n, k)
        # the bias, where there is one, in the epilogue (specialization constant 2)
        fused = nb == 1 and _bias_ok(bias, out_dtype)
        spec, ops = ((0, 1, 1), [out, a3, b3, bias]) if fused else ((0, 1), [out, a3, b3])
        boff = (bias.offset,) if fused else ()
    args = _gemm_args(out, a3, b3, nb, m, n, k)
    if variant is not None and out_dtype.name == "float32" and use_s64(nb, m, n, k):
        # 64x64 tiles (sgemm.comp's S64)
        tiles = nb * -(-m // 64) * -(-n // 64)
        add = bias is not None and not fused
        _product(ctx, key, a, b, bias, add, _s64(variant, m, n, k), spec, ops, 0, tiles * 256,
                 args[0] + boff, *args[1:])
        return _add_bias(out, bias) if add else out
    if variant is not None:
        m_al = m - m % 128
        units = ctx.phys.compute_units
        split = _split_k(variant, nb, m, n, k, units) if out_dtype.name == "float32" else 1
        v64 = _s64(variant, m, n, k) if split > 1 and "_edge_" in variant else None
        if v64 is not None and "_edge_" not in v64:
            # ragged for 128x128 tiles, whole 64x64 ones (a conv weight gradient's 128 x 576):
            # the aligned S64 variant in K slices, no bounds checks
            # (a 64x64 workgroup holds a quarter of the registers: four times as many slices)
            t64 = (m // 64) * (n // 64)
            s64 = _slices(t64, k, 32, 4 * SPLITK_TILES, 4 * SPLITK_MAX,
                          fit=(units, 2, 4096, m, n))
            _split_run(ctx, v64, s64, t64, out, a3, b3, m, n, k, (key, a, b, bias))
            return out if bias is None else _add_bias(out, bias)
        if split > 1:
            wide = _wide(variant, nb, m, n, split=True)
            if wide is not None:   # as many slices as bring its (half as many) tiles to the target
                tw = (m // 128) * (n // 256)
                _split_run(ctx, wide, _slices(tw, k, SGEMM_BK, fit=(units, 1, 32768, m, n)),
                           tw, out, a3, b3, m, n, k, (key, a, b, bias))
            else:
                _split_run(ctx, variant, split, -(-m // 128) * -(-n // 128), out, a3, b3, m, n,
                           k, (key, a, b, bias))
            return out if bias is None else _add_bias(out, bias)
        if "_edge_" in variant and m_al and n % 128 == 0 and k % SGEMM_BK == 0:
            # only M is ragged: the aligned (faster) variant over every row of tiles, its
            # loads of A clamped to the last row and its stores past M skipped (sgemm.comp's
            # CLAMP_M): one dispatch, the last row of tiles in the grid's last wave (on an
            # H200 an edge tail beside it took 0.14 ms of an SNN layer's 5.9)
            fast = variant.replace("_edge", "")
            wide = _wide(fast, nb, m, n)
            cols = 256 if wide is not None else 128
            tiles = nb * -(-m // 128) * (n // cols)
            _product(ctx, key, a, b, bias, bias is not None and not fused, wide or fast,
                     (spec + (0,))[:3] + (1,), ops, 0, tiles * 256, args[0] + boff, *args[1:])
        else:
            wide = _wide(variant, nb, m, n)
            cols = 256 if wide is not None else 128
            tiles = nb * -(-m // 128) * -(-n // cols)
            _product(ctx, key, a, b, bias, bias is not None and not fused, wide or variant, spec,
                     ops, 0, tiles * 256, args[0] + boff, *args[1:])
        return out if bias is None or fused else _add_bias(out, bias)
    elif out_dtype.name == "float32":
        tiles = nb * -(-m // TILE) * -(-n // TILE)
        split = _tiled_split(nb, tiles, k)
        if split > 1:
            _split_run(ctx, "mm_tiled_float32", split, tiles, out, a3, b3, m, n, k,
                       (key, a, b, bias))
        elif nb == 1 and _tiled_bias_ok(bias, out_dtype):
            # the bias in the epilogue (matmul_tiled.comp's BIAS = 1)
            _product(ctx, key, a, b, bias, False, "mm_tiled_float32", (0, 1, 1),
                     [out, a3, b3, bias], 0, tiles * 256, args[0] + (bias.offset,), *args[1:])
            return out
        else:
            _product(ctx, key, a, b, bias, bias is not None, "mm_tiled_float32", (0, 1),
                     [out, a3, b3], 0, tiles * 256, *args)
    else:
        _product(ctx, key, a, b, bias, bias is not None, f"mm_{out_dtype.name}", (0, 1),
                 [out, a3, b3], out.size, out.size, *args)
    return out if bias is None else _add_bias(out, bias)


def matmul4_into(out: Buffer, a: Buffer, b: Buffer, row_bias: Buffer | None = None) -> bool:
    """out[i, j] = a[i, j] @ b[i, j] for float32 (B1, B2, M, K) and (B1, B2, K, N) views read
    in place (two batch levels: attention's heads of a packed projection), written into the
    (B1, B2, M, N) view ``out`` (unit column stride, rows at any multiple of 4: heads merged in
    place), plus ``row_bias`` (M,) along the rows where given (a convolution's bias, in the
    epilogue). One sgemm dispatch; False (nothing recorded) where the shader cannot take the
    layouts (the caller copies)."""
    b1, b2, m, k = a.shape
    n = b.shape[3]
    if (a.dtype is not _dt.float32 or out.strides[3] != 1 or k == 0
            or any(v % 4 for v in (*out.strides[:3], out.offset))
            or row_bias is not None and (row_bias.dtype is not a.dtype
                                         or row_bias.strides != (1,) and m > 1)):
        return False
    a3 = _view(a, a.offset, (b1 * b2, m, k), (a.strides[0],) + a.strides[2:])
    b3 = _view(b, b.offset, (b1 * b2, k, n), (b.strides[0],) + b.strides[2:])
    ta, tb = _layout(a3.strides, m, k), _layout(b3.strides, k, n)
    if ta is None or tb is None or n % 4 or any(
            v % 4 for v in (a.strides[0], a.strides[1], a3.strides[2 if ta == "t" else 1],
                            b.strides[0], b.strides[1], b3.strides[2 if tb == "t" else 1],
                            a.offset, b.offset)):
        return False
    variant = f"sgemm_{ta}{tb}_float32"
    if use_s64(b1 * b2, m, n, k):
        tile, variant = 64, _s64(variant, m, n, k)
    elif m % 128 or n % 128 or k % SGEMM_BK:
        tile, variant = 128, f"sgemm_{ta}{tb}_edge_float32"
    else:
        tile = 128
    tiles = b1 * b2 * -(-m // tile) * -(-n // tile)
    if "_edge" in variant and tiles < SGEMM_MIN_TILES:
        return False   # (the generic shader keeps more of the GPU busy)
    spec, ops, offs = (0, 1), [out, a3, b3], (out.offset, a.offset, b.offset)
    if row_bias is not None:
        spec, ops, offs = (0, 1, 2), ops + [row_bias], offs + (row_bias.offset,)
    dispatch(a.ctx, variant, spec, ops, 0, tiles * 256, offs, (b1 * b2, m, n, k, b2),
             ((*a3.strides, a.strides[1]), (*b3.strides, b.strides[1]), out.strides[:3]))
    return True


def diagonal(buf: Buffer, offset: int) -> Buffer:
    """The view of the ``offset`` diagonal of the last two axes, shape (..., K)."""
    r, c = buf.shape[-2:]
    start = (max(-offset, 0), max(offset, 0))
    kdim = max(0, min(r - start[0], c - start[1]))
    sr, sc = buf.strides[-2:]
    off = buf.offset + (start[0] * sr + start[1] * sc if kdim else 0)
    return Buffer(buf.ctx, buf.alloc, off, buf.shape[:-2] + (kdim,), buf.strides[:-2] + (sr + sc,),
                  buf.dtype)


# autocast's linear on 16-bit floats (bfloat16: its bits): the bias in the product's epilogue
# where it can be; the backward's products and sum have float16 and bfloat16 kernels
linear.takes_float16 = linear_backward.takes_float16 = True
linear.takes_bfloat16 = linear_backward.takes_bfloat16 = True
linear_backward.takes_grad_dtype = True   # (float32 gradients of 16-bit operands)
KERNELS: dict = {"matmul": matmul, "diagonal": diagonal, "linear": linear,
                 "linear_backward": linear_backward}
