"""grilly.amp against torch.amp as a PyTorch user meets it: result dtypes and values inside
autocast for every op class of torch's autocast lists that grilly has, gradients, the region
queries, custom_fwd/custom_bwd, and GradScaler's API step by step against
torch.amp.GradScaler.

The dtype oracle is torch's **CUDA** policy (docs/amp.md: where torch's CPU and CUDA lists
differ grilly follows CUDA's), run on torch's CPU: ``cuda_policy_on_cpu`` re-registers the
AutocastCPU kernels from the lists in torch's own installed header (aten/autocast_mode.h), so
the dispatcher applies them exactly as the CUDA autocast key does, Python-composed torch
functions (softmin, normalize, gaussian_nll_loss ...) included."""
import contextlib
import os
import re
import threading
import warnings

import ml_dtypes
import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import grilly as gp
from grilly import amp, autograd, nn, optim
from grilly.nn import functional as F

R = np.random.default_rng(5)
LOW = {"float16": (torch.float16, np.float16), "bfloat16": (torch.bfloat16, ml_dtypes.bfloat16)}


# ---- the oracle: torch's CUDA autocast lists, applied by torch's dispatcher on the CPU -------
def _cuda_lists() -> dict:
    src = open(os.path.join(os.path.dirname(torch.__file__), "include", "ATen",
                            "autocast_mode.h")).read()
    out = {}
    for macro, pol in (("LOWER_PRECISION_FP", "lower"), ("FP32", "fp32"),
                       ("FP32_SET_OPT_DTYPE", "opt"), ("PROMOTE", "promote")):
        body = re.search(r"#define AT_FORALL_%s\(_\)(.*?)\n\n" % macro, src, re.S).group(1)
        for m in re.finditer(r"_\((\w+)(?:,\s*(\w+))?\)", body):
            out[m.group(1) + ("." + m.group(2) if m.group(2) else "")] = pol
    assert out.get("mm") == "lower" and out.get("softmax.int") == "opt"   # the header parsed
    out["norm.Scalar"] = out["norm.ScalarOpt_dim"] = "append"   # fp32_append_dtype
    return out


def _eligible(t) -> bool:
    return isinstance(t, torch.Tensor) and t.is_floating_point() and t.dtype != torch.float64


def _tcast(x, to):
    if _eligible(x) and x.dtype != to:
        return x.to(to)
    if isinstance(x, (list, tuple)):
        return type(x)(_tcast(v, to) for v in x)
    return x


def _flat(xs):
    for a in xs:
        if isinstance(a, (list, tuple)):
            yield from _flat(a)
        else:
            yield a


def _kernel(opov, pol):
    """An AutocastCPU kernel applying torch's cast policy ``pol`` (at::autocast::CastPolicy)."""
    keys = torch._C.DispatchKeySet(torch._C.DispatchKey.AutocastCPU)
    names = [a.name for a in opov._schema.arguments]

    def k(*args, **kw):
        low = torch.get_autocast_dtype("cpu")
        with torch._C._ExcludeDispatchKeyGuard(keys):
            if pol in ("lower", "fp32"):
                to = low if pol == "lower" else torch.float32
                args, kw = _tcast(args, to), {n: _tcast(v, to) for n, v in kw.items()}
            elif pol == "opt" and args and _eligible(args[0]):   # dtype=float32 unless given
                i = names.index("dtype")
                if len(args) > i:
                    args = args[:i] + (args[i] or torch.float32,) + args[i + 1:]
                elif kw.get("dtype") is None:
                    kw = {**kw, "dtype": torch.float32}
            elif pol == "append" and args and _eligible(args[0]):
                args = (args[0].to(torch.float32),) + tuple(args[1:])
            elif pol == "promote":
                wide = any(_eligible(t) and t.dtype == torch.float32
                           for t in _flat(list(args) + list(kw.values())))
                to = torch.float32 if wide else low
                args, kw = _tcast(args, to), {n: _tcast(v, to) for n, v in kw.items()}
            return opov(*args, **kw)
    return k


@contextlib.contextmanager
def cuda_policy_on_cpu(dtype):
    """``torch.autocast("cpu", dtype)`` running torch's CUDA op lists instead of its CPU ones."""
    pol = _cuda_lists()
    lib = torch.library.Library("aten", "IMPL")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")   # "overriding a previously registered kernel"
            for full in torch._C._dispatch_get_registrations_for_dispatch_key("AutocastCPU"):
                name = full.split("::", 1)[1]
                if name not in pol:   # CPU-only entries: fall through, as CUDA's key does
                    lib.impl(name, torch.library.fallthrough_kernel, "AutocastCPU")
            for name, p in pol.items():
                base, _, ov = name.partition(".")
                lib.impl(name, _kernel(getattr(getattr(torch.ops.aten, base), ov or "default"),
                                       p), "AutocastCPU")
        with torch.autocast("cpu", dtype=dtype):
            yield
    finally:
        lib._destroy()


def test_oracle_agrees_with_torch_where_the_lists_agree():
    """The emulation gives torch.autocast("cpu")'s own dtypes for ops both lists hold alike."""
    x = torch.randn(4, 8)
    cases = [lambda: TF.linear(x, x), lambda: torch.matmul(x, x.T),
             lambda: TF.mse_loss(x.half(), x.half()), lambda: torch.prod(x.bfloat16()),
             lambda: TF.binary_cross_entropy_with_logits(x.bfloat16(), x.bfloat16()),
             lambda: TF.conv1d(x.reshape(1, 4, 8), x[:, :4].reshape(2, 4, 2)),
             lambda: x.half() + x]
    for dt in (torch.bfloat16, torch.float16):
        with torch.autocast("cpu", dtype=dt):
            want = [f().dtype for f in cases]
        with cuda_policy_on_cpu(dt):
            got = [f().dtype for f in cases]
        assert got == want
    with cuda_policy_on_cpu(torch.float16):   # and CUDA's own where they differ
        assert TF.softmax(x.half(), -1).dtype == torch.float32
        assert torch.exp(x.half()).dtype == torch.float32
    with torch.autocast("cpu", dtype=torch.float16):   # the list is restored afterwards
        assert TF.softmax(x.half(), -1).dtype == torch.float16


# ---- the table -----------------------------------------------------------------------------
def _a(*shape, pos=False, scale=1.0):
    v = R.standard_normal(shape).astype(np.float32) * scale
    return np.abs(v) + 0.5 if pos else v


def _sign(*shape):
    return np.where(R.standard_normal(shape) > 0, 1.0, -1.0).astype(np.float32)


X, W, B = _a(4, 8), _a(6, 8), _a(6)
TGT = np.array([0, 1, 2, 3])
# name: (grilly function, torch function, args, input kind): "f32" inputs are float32 (the
# GEMM-like ops cast them down), "low" inputs are the region's dtype (the float32 ops cast them
# up), "mixed" a float32 first argument with low ones (promotion)
TABLE = {
    # lower_precision_fp
    "matmul": (gp.matmul, torch.matmul, [X, W.T.copy()], "f32"),
    "matmul_3d": (gp.matmul, torch.matmul, [_a(2, 3, 8), W.T.copy()], "f32"),
    "linear": (F.linear, TF.linear, [X, W, B], "f32"),
    "conv1d": (F.conv1d, TF.conv1d, [_a(2, 3, 7), _a(4, 3, 3), _a(4)], "f32"),
    "conv2d": (F.conv2d, TF.conv2d, [_a(2, 3, 5, 5), _a(4, 3, 3, 3), _a(4)], "f32"),
    "conv3d": (F.conv3d, TF.conv3d, [_a(1, 2, 4, 4, 4), _a(3, 2, 3, 3, 3), _a(3)], "f32"),
    "conv_transpose1d": (F.conv_transpose1d, TF.conv_transpose1d,
                         [_a(2, 3, 5), _a(3, 4, 3), _a(4)], "f32"),
    "conv_transpose2d": (F.conv_transpose2d, TF.conv_transpose2d,
                         [_a(2, 3, 4, 4), _a(3, 4, 3, 3), _a(4)], "f32"),
    "conv_transpose3d": (F.conv_transpose3d, TF.conv_transpose3d,
                         [_a(1, 2, 3, 3, 3), _a(2, 3, 2, 2, 2), _a(3)], "f32"),
    "prelu": (F.prelu, TF.prelu, [_a(2, 3, 4), _a(3)], "f32"),
    "sdpa": (F.scaled_dot_product_attention, TF.scaled_dot_product_attention,
             [_a(1, 4, 8), _a(1, 4, 8), _a(1, 4, 8)], "f32"),
    "vecdot": (gp.vecdot, torch.linalg.vecdot, [X, _a(4, 8)], "f32"),
    "einsum": (lambda p, q: gp.einsum("ij,jk->ik", p, q),
               lambda p, q: torch.einsum("ij,jk->ik", p, q), [X, W.T.copy()], "f32"),
    "bmm": (gp.bmm, torch.bmm, [_a(2, 3, 4), _a(2, 4, 5)], "f32"),
    "addmm": (gp.addmm, torch.addmm, [_a(4, 6), X, W.T.copy()], "f32"),
    "baddbmm": (gp.baddbmm, torch.baddbmm, [_a(2, 3, 5), _a(2, 3, 4), _a(2, 4, 5)], "f32"),
    "multi_dot": (gp.linalg.multi_dot, torch.linalg.multi_dot, [[X, W.T.copy(), _a(6, 2)]],
                  "f32"),
    "matmul_low_other": (gp.matmul, torch.matmul, [X, W.T.copy()], "other"),
    # promote
    "tensordot": (lambda p, q: gp.tensordot(p, q, axes=1),
                  lambda p, q: torch.tensordot(p, q, dims=1), [X, W.T.copy()], "f32"),
    "bilinear": (F.bilinear, TF.bilinear, [_a(4, 3), _a(4, 5), _a(2, 3, 5), _a(2)], "f32"),
    "atan2": (gp.atan2, torch.atan2, [X, _a(4, 8)], "mixed"),
    "cross": (gp.linalg.cross, lambda p, q: torch.cross(p, q, dim=-1), [_a(4, 3), _a(4, 3)], "mixed"),
    "addcmul": (lambda s, a, b: s.addcmul(a, b), torch.addcmul, [X, _a(4, 8), _a(4, 8)],
                "mixed"),
    "addcdiv": (lambda s, a, b: s.addcdiv(a, b), torch.addcdiv,
                [X, _a(4, 8), _a(4, 8, pos=True)], "mixed"),
    "concat": (lambda p, q: gp.concat([p, q]), lambda p, q: torch.cat([p, q]), [X, _a(4, 8)],
               "mixed"),
    "stack": (lambda p, q: gp.stack([p, q]), lambda p, q: torch.stack([p, q]), [X, _a(4, 8)],
              "mixed"),
    "where": (lambda p, q: gp.where(p > 0, p, q), lambda p, q: torch.where(p > 0, p, q),
              [X, _a(4, 8)], "mixed"),
    # fp32 and fp32_set_opt_dtype
    "softmax": (lambda t: F.softmax(t, dim=-1), lambda t: TF.softmax(t, dim=-1), [X], "low"),
    "log_softmax": (lambda t: F.log_softmax(t, dim=-1), lambda t: TF.log_softmax(t, dim=-1),
                    [X], "low"),
    "softmin": (lambda t: F.softmin(t, dim=-1), lambda t: TF.softmin(t, dim=-1), [X], "low"),
    "cross_entropy": (F.cross_entropy, TF.cross_entropy, [X, TGT], "low"),
    "nll_loss": (F.nll_loss, TF.nll_loss, [X, TGT], "low"),
    "mse_loss": (F.mse_loss, TF.mse_loss, [X, _a(4, 8)], "low"),
    "l1_loss": (F.l1_loss, TF.l1_loss, [X, _a(4, 8)], "low"),
    "smooth_l1_loss": (F.smooth_l1_loss, TF.smooth_l1_loss, [X, _a(4, 8)], "low"),
    "huber_loss": (F.huber_loss, TF.huber_loss, [X, _a(4, 8)], "low"),
    "bce_with_logits": (F.binary_cross_entropy_with_logits, TF.binary_cross_entropy_with_logits,
                        [X, (_a(4, 8) > 0).astype(np.float32)], "low"),
    "kl_div": (lambda p, q: F.kl_div(p, q, reduction="batchmean"),
               lambda p, q: TF.kl_div(p, q, reduction="batchmean"), [X, _a(4, 8, pos=True)],
               "low"),
    "poisson_nll_loss": (F.poisson_nll_loss, TF.poisson_nll_loss, [X, _a(4, 8, pos=True)],
                         "low"),
    "gaussian_nll_loss": (F.gaussian_nll_loss, TF.gaussian_nll_loss,
                          [X, _a(4, 8), _a(4, 8, pos=True)], "low"),
    "hinge_embedding_loss": (F.hinge_embedding_loss, TF.hinge_embedding_loss, [X, _sign(4, 8)],
                             "low"),
    "soft_margin_loss": (F.soft_margin_loss, TF.soft_margin_loss, [X, _sign(4, 8)], "low"),
    "margin_ranking_loss": (F.margin_ranking_loss, TF.margin_ranking_loss,
                            [_a(4), _a(4), _sign(4)], "low"),
    "cosine_embedding_loss": (F.cosine_embedding_loss, TF.cosine_embedding_loss,
                              [X, _a(4, 8), _sign(4)], "low"),
    "triplet_margin_loss": (F.triplet_margin_loss, TF.triplet_margin_loss,
                            [X, _a(4, 8), _a(4, 8)], "low"),
    "multi_margin_loss": (F.multi_margin_loss, TF.multi_margin_loss, [X, TGT], "low"),
    "multilabel_margin_loss": (F.multilabel_margin_loss, TF.multilabel_margin_loss,
                               [X, np.array([[0, 1, -1, 0, 0, 0, 0, 0]] * 4)], "low"),
    "multilabel_soft_margin_loss": (F.multilabel_soft_margin_loss,
                                    TF.multilabel_soft_margin_loss,
                                    [X, (_a(4, 8) > 0).astype(np.float32)], "low"),
    "layer_norm": (lambda t: F.layer_norm(t, (8,)), lambda t: TF.layer_norm(t, (8,)), [X],
                   "low"),
    "rms_norm": (lambda t: F.rms_norm(t, (8,)), lambda t: TF.rms_norm(t, (8,)), [X], "low"),
    "group_norm": (lambda t: F.group_norm(t, 2), lambda t: TF.group_norm(t, 2), [_a(2, 4, 3)],
                   "low"),
    "batch_norm": (lambda t: F.batch_norm(t, None, None, training=True),
                   lambda t: TF.batch_norm(t, None, None, training=True), [_a(4, 3, 5)], "low"),
    "instance_norm": (F.instance_norm, TF.instance_norm, [_a(2, 3, 5)], "low"),
    "normalize": (F.normalize, TF.normalize, [X], "low"),
    "cosine_similarity": (F.cosine_similarity, TF.cosine_similarity, [X, _a(4, 8)], "low"),
    "pdist": (F.pdist, TF.pdist, [X], "low"),
    "pairwise_distance": (F.pairwise_distance, TF.pairwise_distance, [X, _a(4, 8)], "low"),
    "softplus": (F.softplus, TF.softplus, [X], "low"),
    "interpolate_nearest": (lambda t: F.interpolate(t, scale_factor=2),
                            lambda t: TF.interpolate(t, scale_factor=2), [_a(1, 2, 3, 3)], "low"),
    "interpolate_bilinear": (lambda t: F.interpolate(t, scale_factor=2, mode="bilinear"),
                             lambda t: TF.interpolate(t, scale_factor=2, mode="bilinear"),
                             [_a(1, 2, 3, 3)], "low"),
    "gelu": (F.gelu, TF.gelu, [X], "low"),
    "exp": (gp.exp, torch.exp, [X], "low"),
    "expm1": (gp.expm1, torch.expm1, [X], "low"),
    "log": (gp.log, torch.log, [_a(4, 8, pos=True)], "low"),
    "log1p": (gp.log1p, torch.log1p, [_a(4, 8, pos=True)], "low"),
    "log2": (gp.log2, torch.log2, [_a(4, 8, pos=True)], "low"),
    "log10": (gp.log10, torch.log10, [_a(4, 8, pos=True)], "low"),
    "acos": (gp.acos, torch.acos, [_a(4, 8, scale=0.25)], "low"),
    "asin": (gp.asin, torch.asin, [_a(4, 8, scale=0.25)], "low"),
    "cosh": (gp.cosh, torch.cosh, [X], "low"),
    "sinh": (gp.sinh, torch.sinh, [X], "low"),
    "tan": (gp.tan, torch.tan, [_a(4, 8, scale=0.25)], "low"),
    "reciprocal": (gp.reciprocal, torch.reciprocal, [_a(4, 8, pos=True)], "low"),
    "sqrt": (gp.sqrt, torch.sqrt, [_a(4, 8, pos=True)], "low"),
    "pow": (gp.pow, torch.pow, [_a(4, 8, pos=True), X], "low"),
    "pow_scalar": (lambda t: t ** 2, lambda t: t ** 2, [X], "low"),
    "logaddexp": (gp.logaddexp, torch.logaddexp, [X, _a(4, 8)], "low"),
    "logsumexp": (lambda t: gp.logsumexp(t, dim=-1), lambda t: torch.logsumexp(t, dim=-1), [X],
                  "low"),
    "sum": (gp.sum, torch.sum, [X], "low"),
    "sum_axis": (lambda t: gp.sum(t, axis=1), lambda t: torch.sum(t, dim=1), [X], "low"),
    "prod": (gp.prod, torch.prod, [_a(4, 8, pos=True)], "low"),
    "mean": (gp.mean, torch.mean, [X], "low"),
    "var": (gp.var, lambda t: torch.var(t, correction=0), [X], "low"),
    "std": (gp.std, lambda t: torch.std(t, correction=0), [X], "low"),
    "cumulative_sum": (lambda t: gp.cumulative_sum(t, axis=1), lambda t: torch.cumsum(t, 1),
                       [X], "low"),
    "cumulative_prod": (lambda t: gp.cumulative_prod(t, axis=1), lambda t: torch.cumprod(t, 1),
                        [_a(4, 8, pos=True)], "low"),
    "vector_norm": (gp.linalg.vector_norm, torch.linalg.vector_norm, [X], "low"),
    "matrix_norm": (gp.linalg.matrix_norm, torch.linalg.matrix_norm, [X], "low"),
    "max": (gp.max, torch.max, [X], "low"),
    "relu": (F.relu, TF.relu, [X], "low"),
    # left alone: float64, integers
    "matmul_float64": (gp.matmul, torch.matmul, [X.astype(np.float64), W.T.astype(np.float64)],
                       "as_is"),
    "exp_float64": (gp.exp, torch.exp, [X.astype(np.float64)], "as_is"),
    "sum_int": (gp.sum, torch.sum, [TGT], "as_is"),
    "matmul_int": (gp.matmul, torch.matmul, [np.arange(6).reshape(2, 3),
                                             np.arange(6).reshape(3, 2)], "as_is"),
}
# kept as its own row: torch's CUDA autocast raises on binary_cross_entropy (unsafe in float16);
# grilly runs it in float32, as torch's CPU list does (docs/amp.md)
BCE = (F.binary_cross_entropy, TF.binary_cross_entropy,
       [_a(4, 8, pos=True) / 4.0, (_a(4, 8) > 0).astype(np.float32)])


def _inputs(args, kind, low: str):
    """(numpy args for grilly, torch args) in the row's input dtypes."""
    other = "bfloat16" if low == "float16" else "float16"

    def conv(i, a):
        if not isinstance(a, np.ndarray) or a.dtype.kind != "f" or kind == "as_is" or kind == "f32":
            return a
        if kind == "other" and i == 0:
            return a.astype(LOW[other][1])
        if kind == "mixed" and i == 0:
            return a
        return a.astype(LOW[low][1]) if kind != "other" else a
    g = [[conv(i, v) for v in a] if isinstance(a, list) else conv(i, a)
         for i, a in enumerate(args)]

    def tt(a):
        if isinstance(a, list):
            return [tt(v) for v in a]
        if not isinstance(a, np.ndarray):
            return a
        if a.dtype == ml_dtypes.bfloat16:
            return torch.from_numpy(a.astype(np.float32)).to(torch.bfloat16)
        return torch.from_numpy(a.copy())
    return g, [tt(a) for a in g]


def _to_grilly(a, device):
    if isinstance(a, list):
        return [_to_grilly(v, device) for v in a]
    return gp.asarray(a, device=device) if isinstance(a, np.ndarray) else a


def _close(got, want, low: str):
    g = np.asarray(gp.astype(got, gp.float64) if got.dtype.kind == "f" else got).astype(np.float64)
    w = want.detach().double().numpy() if want.is_floating_point() else want.numpy()
    tol = 2e-2 if low == "float16" else 8e-2   # a few roundings of the low dtype
    assert g.shape == w.shape
    np.testing.assert_allclose(g, w, rtol=tol, atol=tol * max(1.0, float(np.abs(w).max())))


# ops whose entry in torch's CUDA autocast lists is newer than some installed torch (the GPU
# machine's 2.11 runs rms_norm in the input dtype; 2.13, whose lists grilly follows, in float32)
_SINCE = {"rms_norm": (2, 13)}


def _torch_version() -> tuple:
    return tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2])


@pytest.mark.parametrize("low", ["float16", "bfloat16"])
@pytest.mark.parametrize("name", sorted(TABLE))
def test_autocast_dtype_and_value_match_torch_cuda_policy(device, name, low):
    gf, tf, args, kind = TABLE[name]
    since = _SINCE.get(name)
    if since is not None and _torch_version() < since:
        pytest.skip(f"torch {torch.__version__}'s autocast lists predate {name}'s entry "
                    f"(torch {'.'.join(map(str, since))}, which grilly follows)")
    gargs, targs = _inputs(args, kind, low)
    with cuda_policy_on_cpu(LOW[low][0]):
        want = tf(*targs)
    with amp.autocast(dtype=getattr(gp, low)):
        got = gf(*_to_grilly(gargs, device))
    assert got.dtype.name == str(want.dtype).replace("torch.", ""), (name, got.dtype, want.dtype)
    _close(got, want, low)


@pytest.mark.parametrize("low", ["float16", "bfloat16"])
def test_binary_cross_entropy_runs_in_float32(device, low):
    gf, tf, args = BCE
    gargs, targs = _inputs(args, "low", low)
    with torch.autocast("cpu", dtype=LOW[low][0]):   # torch's CPU list: float32
        want = tf(*targs)
    with amp.autocast(dtype=getattr(gp, low)):
        got = gf(*_to_grilly(gargs, device))
    assert got.dtype == gp.float32 and want.dtype == torch.float32
    _close(got, want, low)


# ---- gradients under autocast, against torch's ---------------------------------------------
def _pair_models(device, rng=None):
    """The same small model (Linear, Conv1d, LayerNorm, attention) in grilly and torch."""
    rng = R if rng is None else rng
    gm = {"lin": nn.Linear(8, 6), "conv": nn.Conv1d(2, 3, 3), "ln": nn.LayerNorm(6),
          "attn": nn.MultiheadAttention(6, 2, batch_first=True)}
    tm = {"lin": torch.nn.Linear(8, 6), "conv": torch.nn.Conv1d(2, 3, 3),
          "ln": torch.nn.LayerNorm(6), "attn": torch.nn.MultiheadAttention(6, 2, batch_first=True)}
    for k in gm:
        gm[k] = gm[k].to(device)
        for (n, gp_), (_, tp) in zip(gm[k].named_parameters(), tm[k].named_parameters()):
            with torch.no_grad():
                tp.copy_(torch.from_numpy(rng.standard_normal(tp.shape).astype(np.float32) * 0.3))
            gp_.requires_grad_(False)
            gp_[...] = gp.asarray(tp.detach().numpy(), device=device)
            gp_.requires_grad_(True)
    return gm, tm


def _forward(m, x, lib):
    if lib is torch:
        h = m["lin"](x)                                   # (4, 6)
        c = m["conv"](x.reshape(4, 2, 4))                 # (4, 3, 2)
        z = m["ln"](h + c.reshape(4, 6))
        a, _ = m["attn"](z.reshape(2, 2, 6), z.reshape(2, 2, 6), z.reshape(2, 2, 6))
        return TF.cross_entropy(a.reshape(4, 6), torch.tensor([0, 1, 2, 3]))
    h = m["lin"](x)
    c = m["conv"](gp.reshape(x, (4, 2, 4)))
    z = m["ln"](h + gp.reshape(c, (4, 6)))
    q = gp.reshape(z, (2, 2, 6))
    a, _ = m["attn"](q, q, q)
    return F.cross_entropy(gp.reshape(a, (4, 6)), gp.asarray(TGT, device=x.device))


@pytest.mark.parametrize("low", ["float16", "bfloat16"])
def test_model_gradients_match_torch_under_autocast(device, low):
    """Parameter gradients of a Linear/Conv/LayerNorm/attention model under autocast, backward
    outside the region: float32 (the masters' dtype) and within the low dtype's tolerance of
    torch's under the same region (each gradient as a whole: a sum that cancels, a bias's,
    differs by the low dtype's rounding of its terms, not of itself). Its own seed: the test's
    models do not depend on which tests ran before it."""
    rng = np.random.default_rng(2026)
    gm, tm = _pair_models(device, rng)
    xh = rng.standard_normal((4, 8)).astype(np.float32)
    with torch.autocast("cpu", dtype=LOW[low][0]):
        tloss = _forward(tm, torch.from_numpy(xh), torch)
    tloss.backward()
    with amp.autocast(dtype=getattr(gp, low)):
        gloss = _forward(gm, gp.asarray(xh, device=device), gp)
    assert gloss.dtype == gp.float32 and tloss.dtype == torch.float32
    gloss.backward()
    tol = 3e-2 if low == "float16" else 1.2e-1
    np.testing.assert_allclose(float(gloss), float(tloss.detach()), rtol=tol)
    for k in gm:
        for (n, gp_), (_, tp) in zip(gm[k].named_parameters(), tm[k].named_parameters()):
            assert gp_.grad.dtype == gp.float32, (k, n)
            want = tp.grad.numpy().astype(np.float64)
            got = np.asarray(gp_.grad).astype(np.float64)
            assert np.linalg.norm(got - want) <= tol * np.linalg.norm(want) + 1e-6, (k, n)


def test_nested_disabled_decorated_and_threaded_regions(device):
    x = gp.asarray(_a(4, 8), device=device)
    mm = lambda: gp.matmul(x, gp.matrix_transpose(x)).dtype   # noqa: E731
    with amp.autocast(dtype=gp.bfloat16):
        with amp.autocast(dtype=gp.float16):
            assert mm() == gp.float16 and amp.get_autocast_dtype() is gp.float16
            with amp.autocast(enabled=False):
                assert mm() == gp.float32 and not amp.is_autocast_enabled()
        assert mm() == gp.bfloat16

    @gp.autocast(dtype=gp.bfloat16)
    def f():
        return mm(), amp.is_autocast_enabled()
    assert f() == (gp.bfloat16, True) and mm() == gp.float32
    seen = {}

    def worker():
        with amp.autocast(dtype=gp.float16):
            seen["in"] = mm()
    t = threading.Thread(target=worker)
    t.start()
    t.join()
    assert seen["in"] == gp.float16 and mm() == gp.float32   # the state is the thread's


def test_region_queries_take_a_device_type(device):
    """torch.is_autocast_enabled(device_type) / get_autocast_dtype(device_type) spellings."""
    kind = str(device).split(":")[0]
    other = "vulkan" if kind == "cpu" else "cpu"
    assert not amp.is_autocast_enabled(kind)
    with amp.autocast(device_type=kind, dtype=gp.bfloat16):
        assert amp.is_autocast_enabled(kind) and amp.is_autocast_enabled(str(device))
        assert not amp.is_autocast_enabled(other) and amp.is_autocast_enabled()
        assert amp.get_autocast_dtype(kind) is gp.bfloat16
    with amp.autocast():   # every device
        assert amp.is_autocast_enabled(kind) and amp.is_autocast_enabled(other)
    with pytest.raises(TypeError, match="is_autocast_enabled: device_type"):
        amp.is_autocast_enabled(3)


# ---- custom_fwd / custom_bwd against torch.amp's ---------------------------------------------
def _functions():
    class GMul(autograd.Function):
        @staticmethod
        @amp.custom_fwd
        def forward(ctx, a, b):
            ctx.save_for_backward(a, b)
            return gp.matmul(a, b)

        @staticmethod
        @amp.custom_bwd
        def backward(ctx, g):
            a, b = ctx.saved_tensors
            seen["bwd"] = (amp.is_autocast_enabled(), g.dtype)
            return gp.matmul(g, gp.matrix_transpose(b)), gp.matmul(gp.matrix_transpose(a), g)

    class GMul32(GMul):
        forward = staticmethod(amp.custom_fwd(cast_inputs=gp.float32)(GMul.forward.__wrapped__))

    class TMul(torch.autograd.Function):
        @staticmethod
        @torch.amp.custom_fwd(device_type="cpu")
        def forward(ctx, a, b):
            ctx.save_for_backward(a, b)
            return a @ b

        @staticmethod
        @torch.amp.custom_bwd(device_type="cpu")
        def backward(ctx, g):
            a, b = ctx.saved_tensors
            tseen["bwd"] = (torch.is_autocast_enabled("cpu"), g.dtype)
            return g @ b.T, a.T @ g

    class TMul32(TMul):
        forward = staticmethod(torch.amp.custom_fwd(device_type="cpu", cast_inputs=torch.float32)(
            TMul.forward.__wrapped__))
    seen, tseen = {}, {}
    return (GMul, GMul32, seen), (TMul, TMul32, tseen)


@pytest.mark.parametrize("cast", [False, True])
def test_custom_fwd_bwd_match_torch(device, cast):
    (GMul, GMul32, seen), (TMul, TMul32, tseen) = _functions()
    gf, tf = (GMul32, TMul32) if cast else (GMul, TMul)
    ah, bh = _a(4, 8), _a(8, 3)
    ta, tb = (torch.from_numpy(v).requires_grad_() for v in (ah, bh))
    ga, gb = (gp.asarray(v, device=device) for v in (ah, bh))
    ga.requires_grad_(True)
    gb.requires_grad_(True)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        tout = tf.apply(ta, tb)
    with amp.autocast(dtype=gp.bfloat16):
        gout = gf.apply(ga, gb)
    assert gout.dtype.name == str(tout.dtype).replace("torch.", "")
    (tout.float() * 2).sum().backward()
    gp.sum(gp.astype(gout, gp.float32) * 2).backward()
    assert seen["bwd"][0] == tseen["bwd"][0]                       # backward's region
    assert seen["bwd"][1].name == str(tseen["bwd"][1]).replace("torch.", "")
    for g_, t_ in ((ga, ta), (gb, tb)):
        assert g_.grad.dtype == gp.float32 and t_.grad.dtype == torch.float32
        np.testing.assert_allclose(np.asarray(g_.grad), t_.grad.numpy(), rtol=2e-2, atol=2e-2)
    # outside any region both run as written, and backward outside too
    gout = gf.apply(ga, gb)
    assert gout.dtype == gp.float32
    gp.sum(gout).backward()
    assert seen["bwd"] == (False, gp.float32)


# ---- GradScaler against torch.amp.GradScaler -----------------------------------------------
def _scalers(**kw):
    return amp.GradScaler(**kw), torch.amp.GradScaler("cpu", **kw)


def _set_grads(gparams, tparams, grads, device):
    for gp_, tp, g in zip(gparams, tparams, grads):
        if g is None:
            gp_.grad, tp.grad = None, None
        else:
            gp_.grad = gp.asarray(g, device=device)
            tp.grad = torch.from_numpy(g.copy())


def test_grad_scaler_trajectory_two_optimizers_matches_torch(device):
    """Step by step against torch: two optimizers, a None gradient, inf or NaN in one gradient
    (that optimizer's step skipped, its parameters untouched, the scale halved), growth after
    growth_interval clean steps, update(new_scale) as a float and as an array, the growth
    tracker, state_dict."""
    shapes = [(3, 2), (2,), (4,)]
    init = [_a(*s) for s in shapes]
    gparams = [gp.asarray(v.copy(), device=device) for v in init]
    for p in gparams:
        p.requires_grad_(True)
    tparams = [torch.from_numpy(v.copy()).requires_grad_() for v in init]
    gopts = [optim.SGD(gparams[:2], lr=0.1), optim.Adam(gparams[2:], lr=0.01)]
    topts = [torch.optim.SGD(tparams[:2], lr=0.1), torch.optim.Adam(tparams[2:], lr=0.01)]
    gs, ts = _scalers(init_scale=64.0, growth_interval=2)
    pattern = ["ok", "ok", "ok", "inf", "ok", "nan", "none", "ok", "ok", "new_float", "ok",
               "new_array", "ok", "ok"]
    for i, what in enumerate(pattern):
        grads = [_a(*s) * gs.get_scale() for s in shapes]
        if what == "inf":
            grads[2][1] = np.inf     # only the second optimizer's gradient
        elif what == "nan":
            grads[0][0, 1] = np.nan
        elif what == "none":
            grads[1] = None
        _set_grads(gparams, tparams, grads, device)
        ts.scale(torch.ones(()))   # torch makes its scale tensor lazily, in scale()
        before = [np.asarray(p).copy() for p in gparams]
        for go, to in zip(gopts, topts):
            gr, tr = gs.step(go), ts.step(to)
            assert (gr is None) == (tr is None)
        if what.startswith("new"):
            gs.update(4.0 if what == "new_float" else gp.asarray(4.0, device=device))
            ts.update(4.0 if what == "new_float" else torch.tensor(4.0))
        else:
            gs.update()
            ts.update()
        assert gs.get_scale() == ts.get_scale(), i
        assert gs._get_growth_tracker() == ts._get_growth_tracker(), i
        assert gs.state_dict() == ts.state_dict(), i
        # the overflowing optimizer's step is skipped, the other's runs (torch's per-optimizer
        # rule); the scale backs off either way
        untouched = {"inf": (2,), "nan": (0, 1)}.get(what, ())
        for j, (b, p, tp) in enumerate(zip(before, gparams, tparams)):
            if j in untouched:
                np.testing.assert_array_equal(np.asarray(p), b)
            np.testing.assert_allclose(np.asarray(p), tp.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_grad_scaler_api_and_errors_match_torch(device):
    gs, ts = _scalers(init_scale=8.0)
    x = gp.asarray(np.ones(3, np.float32), device=device)
    tx = torch.ones(3)
    got = gs.scale([x, (x, [x])])
    want = ts.scale([tx, (tx, [tx])])
    assert type(got) is list and type(got[1]) is tuple and type(got[1][1]) is list
    np.testing.assert_array_equal(np.asarray(got[1][1][0]), want[1][1][0].numpy())
    lazy = gs.scale(v for v in (x, x))   # any iterable, as torch's (returned lazily)
    assert [float(gp.sum(v)) for v in lazy] == [float(v.sum()) for v in ts.scale(iter([tx, tx]))]
    with pytest.raises(TypeError, match="GradScaler.scale"):
        gs.scale(1.0)
    assert gs.scale(gp.astype(x, gp.float16)).dtype == gp.float16
    assert ts.scale(tx.half()).dtype == torch.float16
    for name, val in (("growth_factor", 3.0), ("backoff_factor", 0.25), ("growth_interval", 7)):
        getattr(gs, "set_" + name)(val)
        getattr(ts, "set_" + name)(val)
        assert getattr(gs, "get_" + name)() == getattr(ts, "get_" + name)() == val
    assert gs.state_dict() == ts.state_dict()
    g2, t2 = _scalers()
    g2.load_state_dict(gs.state_dict())
    t2.load_state_dict(ts.state_dict())
    assert g2.state_dict() == t2.state_dict() == gs.state_dict()
    assert gs.is_enabled() and ts.is_enabled()
    # errors: torch raises RuntimeError for each of these
    lin = nn.Linear(3, 2).to(device)
    opt = optim.SGD(lin.parameters(), lr=0.1)
    gs.scale(gp.sum(lin(gp.reshape(x, (1, 3))))).backward()
    with pytest.raises(RuntimeError, match="closure"):
        gs.step(opt, closure=lambda: 0.0)
    gs.unscale_(opt)
    with pytest.raises(RuntimeError, match="already"):
        gs.unscale_(opt)
    gs.step(opt)
    with pytest.raises(RuntimeError, match="already called"):
        gs.step(opt)
    with pytest.raises(RuntimeError, match="after step"):
        gs.unscale_(opt)
    gs.update()
    gs.step(opt)   # a fresh step after update is fine
    gs.update()
    for s in _scalers(enabled=False):
        assert not s.is_enabled() and s.get_scale() == 1.0 and s.state_dict() == {}
        assert s._get_growth_tracker() == 0
    with pytest.raises(RuntimeError, match="empty"):
        amp.GradScaler().load_state_dict({})
