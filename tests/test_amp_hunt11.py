"""grilly.amp as a torch.amp user (eleventh hunt): torch's global autocast state
(torch.set_autocast_enabled / get_autocast_dtype / the nesting counter / the cache flag) at
grilly's top level, sharing grilly.autocast's thread-local state; the result dtypes of the
NumPy- and torch-named compositions under autocast (nansum, trace, exp2, xlogy, matrix_exp,
addmv, elu, avg_pool1d, ...); F.one_hot's class check. Oracles: torch 2.13's own global state
calls, its CUDA autocast lists applied on the CPU (test_amp_parity.cuda_policy_on_cpu), float32
runs for values and gradients."""
import importlib
import threading
import warnings

import numpy as np
import pytest

import grilly as gp
from grilly import amp, autograd
from grilly.nn import functional as F

torch = pytest.importorskip("torch")
import torch.nn.functional as TF  # noqa: E402
from test_amp_parity import cuda_policy_on_cpu  # noqa: E402  (needs torch)
from test_amp_hunt10 import LOW, _f64, _name, _t64  # noqa: E402  (the shared helpers)

R = np.random.default_rng(11)


def _kind(device) -> str:
    return str(device).split(":")[0]


def _clean() -> bool:
    """This thread's autocast state is back to the default (no entry left by a test)."""
    return not getattr(importlib.import_module("grilly.amp.autocast")._local, "stack", None)


# ---- torch's global autocast state ----------------------------------------------------------
def test_global_state_follows_torchs_calls(device):
    """A script that drives autocast through torch's global calls (as torch.utils.checkpoint and
    custom training loops do): the same calls on grilly (top level, the array's device type for
    torch's "cpu") report the same enabled flags and dtypes step by step, a matmul runs in the
    state they set, and a region undoes what set_* changed inside it, as torch's restores."""
    kind = _kind(device)
    x32 = gp.asarray(R.standard_normal((2, 2)).astype(np.float32), device=device)
    tx = torch.ones(2, 2)

    def snap(lib, dev, x):
        return (lib.is_autocast_enabled(dev), _name(lib.get_autocast_dtype(dev)),
                _name((x @ x).dtype), lib.is_autocast_cache_enabled())

    steps = [
        lambda lib, dev, lo: None,
        lambda lib, dev, lo: lib.set_autocast_enabled(dev, True),
        lambda lib, dev, lo: lib.set_autocast_dtype(dev, lo),
        lambda lib, dev, lo: lib.set_autocast_cache_enabled(False),
        lambda lib, dev, lo: lib.set_autocast_cache_enabled(True),
        lambda lib, dev, lo: lib.set_autocast_enabled(dev, False),
    ]
    got, want = [], []
    for lib, dev, x, lo, ac in ((torch, "cpu", tx, torch.float16, torch.autocast),
                                (gp, kind, x32, gp.float16, gp.autocast)):
        out = got if lib is gp else want
        try:
            for s in steps:
                s(lib, dev, lo)
                out.append(snap(lib, dev, x))
            lib.set_autocast_enabled(dev, True)
            with ac(dev, enabled=False, cache_enabled=False):
                out.append(snap(lib, dev, x))
                lib.set_autocast_enabled(dev, True)   # undone when the region exits
                lib.set_autocast_dtype(dev, lo)
                out.append(snap(lib, dev, x))
                out.append(lib.autocast_increment_nesting())
                out.append(lib.autocast_decrement_nesting())
            out.append(snap(lib, dev, x))
            with ac(dev):   # dtype=None: the dtype set in force
                out.append(snap(lib, dev, x))
            lib.clear_autocast_cache()
        finally:
            lib.set_autocast_enabled(dev, False)
            lib.set_autocast_dtype(dev, lib.bfloat16 if dev == "cpu" else lib.float16)
        out.append(snap(lib, dev, x))
    if kind != "cpu":   # grilly's GPU default is float16 where torch's CPU one is bfloat16
        want = [w if not isinstance(w, tuple) else tuple(
            "float16" if v == "bfloat16" else v for v in w) for w in want]
    assert got == want
    assert amp.is_autocast_enabled() is False and _clean()


def test_global_state_is_per_thread_and_grilly_amps_own(device):
    """One state, not two: grilly.amp's functions report what gp.set_autocast_enabled set, and
    the state is per thread (another thread's ops are not cast), as torch's."""
    kind = _kind(device)
    x = gp.asarray(np.ones((2, 2), np.float32), device=device)
    seen = []
    try:
        gp.set_autocast_enabled(kind, True)
        gp.set_autocast_dtype(kind, gp.bfloat16)
        assert amp.is_autocast_enabled(kind) and amp.get_autocast_dtype(kind) is gp.bfloat16
        assert (x @ x).dtype == gp.bfloat16
        t = threading.Thread(target=lambda: seen.append(((x @ x).dtype,
                                                         gp.is_autocast_enabled(kind))))
        t.start()
        t.join()
        assert seen == [(gp.float32, False)]
        # the device-less form (torch's older one): every device type, as autocast()
        gp.set_autocast_enabled(False)
        assert not gp.is_autocast_enabled() and (x @ x).dtype == gp.float32
        gp.set_autocast_enabled(True)
        assert gp.is_autocast_enabled(kind) and (x @ x).dtype == gp.bfloat16
    finally:
        gp.set_autocast_enabled(False)
        gp.set_autocast_enabled(kind, False)
        gp.set_autocast_dtype(kind, gp.bfloat16 if kind == "cpu" else gp.float16)
    assert _clean()


def test_global_state_errors_and_deprecated_forms():
    """Bad arguments are TypeErrors as torch's (a non-bool enabled, a non-str device type); a
    dtype autocast cannot run in, or a device type grilly lacks, is a ValueError naming the
    call; torch's deprecated cpu/gpu forms work and warn as torch's do."""
    with pytest.raises(TypeError, match="set_autocast_enabled"):
        gp.set_autocast_enabled("cpu", 1)
    with pytest.raises(TypeError, match="set_autocast_cache_enabled"):
        gp.set_autocast_cache_enabled(1)
    with pytest.raises(ValueError, match="set_autocast_dtype"):
        gp.set_autocast_dtype("cpu", gp.float32)
    with pytest.raises(ValueError, match="set_autocast_enabled"):
        gp.set_autocast_enabled("cuda", True)
    with pytest.raises(TypeError, match="set_autocast_dtype"):
        gp.set_autocast_dtype(None, gp.float16)
    with pytest.raises(TypeError):
        torch.set_autocast_enabled("cpu", 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        want = (torch.get_autocast_cpu_dtype(), torch.is_autocast_cpu_enabled())
    with pytest.warns(DeprecationWarning, match="get_autocast_dtype"):
        got = gp.get_autocast_cpu_dtype()
    with pytest.warns(DeprecationWarning, match="is_autocast_enabled"):
        got = (got, gp.is_autocast_cpu_enabled())
    assert [_name(v) if not isinstance(v, bool) else v for v in got] == \
        [_name(v) if not isinstance(v, bool) else v for v in want]
    with pytest.warns(DeprecationWarning):
        assert gp.get_autocast_gpu_dtype() is gp.float16   # torch's GPU: grilly's "vulkan"
    assert _clean()


# ---- compositions under autocast: the result dtype of torch's single op ----------------------
def _cases(a, b, sq, v):
    """(label, grilly call, torch call, arguments, kind): 'low' arguments in the region's
    dtype, 'f32' float32 ones."""
    return [
        ("nansum", gp.nansum, torch.nansum, [a], "low"),
        ("nansum_method", lambda x: x.nansum(1), lambda x: x.nansum(1), [a], "low"),
        ("nanmean", lambda x: x.nanmean(1), lambda x: x.nanmean(1), [a], "low"),
        ("trace", gp.trace, torch.trace, [sq], "low"),
        ("exp2", gp.exp2, torch.exp2, [a], "low"),
        ("xlogy", lambda x, y: x.xlogy(y), lambda x, y: x.xlogy(y), [a, b], "low"),
        ("xlog1py", gp.special.xlog1py, torch.special.xlog1py, [a, b], "low"),
        ("logit", lambda x: gp.logit(x * 0.5), lambda x: torch.logit(x * 0.5), [a], "low"),
        ("square", gp.square, torch.square, [a], "low"),
        ("entr", gp.special.entr, torch.special.entr, [a], "low"),
        ("entr_f32", gp.special.entr, torch.special.entr, [a], "f32"),   # was float64
        ("erfinv", lambda x: gp.special.erfinv(x * 0.5), lambda x: torch.erfinv(x * 0.5), [a],
         "low"),
        ("renorm", lambda x: x.renorm(2, 0, 0.5), lambda x: x.renorm(2, 0, 0.5), [a], "low"),
        ("elu", lambda x: F.elu(-x), lambda x: TF.elu(-x), [a], "low"),
        ("celu", lambda x: F.celu(-x), lambda x: TF.celu(-x), [a], "low"),
        ("selu", lambda x: F.selu(-x), lambda x: TF.selu(-x), [a], "low"),
        ("avg_pool1d", lambda x: F.avg_pool1d(x[None], 2), lambda x: TF.avg_pool1d(x[None], 2),
         [a], "low"),
        ("embedding_bag", lambda w: F.embedding_bag(gp.asarray(np.array([[0, 1], [2, 1]]),
                                                               device=w.device), w),
         lambda w: TF.embedding_bag(torch.tensor([[0, 1], [2, 1]]), w), [a], "low"),
        ("vdot", gp.vdot, torch.vdot, [v, v], "low"),
        ("matrix_exp", gp.linalg.matrix_exp, torch.linalg.matrix_exp, [sq], "f32"),
        ("diag_embed", lambda x: x.diag_embed(), lambda x: x.diag_embed(), [v], "f32"),
        ("addmv", lambda s, m, x: gp.addmv(s, m, x), torch.addmv, [a[:, 0], a, v], "f32"),
        ("addr", lambda s, x: gp.addr(s, x, x), lambda s, x: torch.addr(s, x, x),
         [sq, sq[0]], "f32"),
        ("addbmm", lambda s, x: gp.addbmm(s, x[None], x[None]),
         lambda s, x: torch.addbmm(s, x[None], x[None]), [sq, sq], "f32"),
        ("chain_matmul_one", gp.chain_matmul, torch.chain_matmul, [sq], "f32"),
    ]


@pytest.mark.parametrize("low", ["float16", "bfloat16"])
def test_compositions_keep_torchs_result_dtype(device, low):
    """torch runs each of these as one kernel: outside its lists (the input's dtype), in its
    float32 list (erfinv, renorm; square is its pow) or its lower one (addmv, addr, addbmm,
    chain_matmul). grilly composes them of listed ops, so float16 nansum, trace, exp2, xlogy,
    logit, entr, elu/celu/selu, avg_pool1d, embedding_bag and vdot came back float32 (entr
    float64, also outside a region), float32
    matrix_exp and diag_embed ran their products in the low dtype, addmv/addr/addbmm stayed
    float32, erfinv/renorm/square stayed low. Now each has torch's dtype and its value."""
    gdt, tdt, ndt = LOW[low]
    a = (R.random((3, 4)) * 0.8 + 0.1).astype(np.float32)
    b = (R.random((3, 4)) * 0.8 + 0.1).astype(np.float32)
    sq = (R.random((3, 3)) * 0.3 + np.eye(3)).astype(np.float32)
    v = (R.random(4) * 0.8 + 0.1).astype(np.float32)
    bad = []
    for label, g, t, args, kind in _cases(a, b, sq, v):
        if kind == "low":
            args = [x.astype(ndt) for x in args]
        targs = [torch.from_numpy(x.astype(np.float32)).to(tdt if kind == "low" else
                                                           torch.float32) for x in args]
        try:
            with cuda_policy_on_cpu(tdt):
                want = t(*targs)
        except NotImplementedError:   # the oracle's: torch 2.11's CPU has no half trace
            continue
        with amp.autocast(dtype=gdt):
            got = g(*[gp.asarray(x, device=device) for x in args])
        if _name(got.dtype) != _name(want.dtype):
            bad.append((label, _name(got.dtype), _name(want.dtype)))
            continue
        tol = 3e-3 if _name(want.dtype) == "float32" else (2e-2 if low == "float16" else 8e-2)
        np.testing.assert_allclose(_f64(got), _t64(want), rtol=tol, atol=tol, err_msg=label)
    assert bad == []


def test_uncast_composition_gradients_are_the_float32_runs(device):
    """matrix_exp of a float32 matrix inside a float16 region now runs in float32 (its products
    were float16): value and gradient equal the run outside the region; a float16 nansum's
    gradient comes back float16, ones."""
    m = (R.random((3, 3)) * 0.3).astype(np.float32)
    grads = []
    for ctx in (amp.autocast(dtype=gp.float16), amp.autocast(enabled=False)):
        x = gp.asarray(m, device=device, requires_grad=True)
        with ctx:
            y = gp.linalg.matrix_exp(x)
        gp.sum(y * y).backward()
        grads.append((_f64(y), _f64(x.grad), y.dtype))
    np.testing.assert_allclose(grads[0][0], grads[1][0], rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(grads[0][1], grads[1][1], rtol=1e-5, atol=1e-5)
    assert grads[0][2] == gp.float32
    tm = torch.from_numpy(m.astype(np.float64)).requires_grad_()
    (torch.linalg.matrix_exp(tm) ** 2).sum().backward()
    np.testing.assert_allclose(grads[0][1], tm.grad.numpy(), rtol=1e-4, atol=1e-4)
    h = gp.asarray(m.astype(np.float16), device=device, requires_grad=True)
    with amp.autocast(dtype=gp.float16):
        s = gp.nansum(h)
    s.backward()
    assert s.dtype == h.grad.dtype == gp.float16
    np.testing.assert_array_equal(_f64(h.grad), np.ones((3, 3)))


def test_custom_fwd_cast_inputs_with_global_state(device):
    """A custom Function whose forward is custom_fwd(cast_inputs=float32), called while autocast
    is on through gp.set_autocast_enabled (no region): the inputs are cast and the forward runs
    with autocast off, as torch's; its backward runs in the forward's state."""
    kind = _kind(device)

    class Mul(autograd.Function):
        @staticmethod
        @amp.custom_fwd(device_type=kind, cast_inputs=gp.float32)
        def forward(ctx, p, q):
            ctx.save_for_backward(p, q)
            ctx.seen = (p.dtype, (p @ q).dtype, gp.is_autocast_enabled(kind))
            return p @ q

        @staticmethod
        @amp.custom_bwd(device_type=kind)
        def backward(ctx, g):
            p, q = ctx.saved_tensors
            ctx.bwd = gp.is_autocast_enabled(kind)
            return g @ q.mT, p.mT @ g

    p = gp.asarray(R.standard_normal((2, 3)).astype(np.float16), device=device,
                   requires_grad=True)
    q = gp.asarray(R.standard_normal((3, 2)).astype(np.float32), device=device,
                   requires_grad=True)
    try:
        gp.set_autocast_enabled(kind, True)
        gp.set_autocast_dtype(kind, gp.float16)
        out = Mul.apply(p, q)
    finally:
        gp.set_autocast_enabled(kind, False)
        gp.set_autocast_dtype(kind, gp.bfloat16 if kind == "cpu" else gp.float16)
    assert out.dtype == gp.float32
    gp.sum(out).backward()
    assert p.grad.dtype == gp.float16 and q.grad.dtype == gp.float32
    want = np.ones((2, 2)) @ _f64(q).T
    np.testing.assert_allclose(_f64(p.grad), want, rtol=2e-3, atol=2e-3)
    assert _clean()


# ---- F.one_hot ---------------------------------------------------------------------------------
def test_one_hot_checks_its_classes_as_torch(device):
    """A class >= num_classes, or < 0, gave a row of zeros; torch raises. Now a ValueError with
    torch's wording (torch: RuntimeError), num_classes=-1 infers max + 1, an empty array needs
    num_classes; valid input still matches torch."""
    lab = np.array([[0, 2], [1, 4]])
    g = gp.asarray(lab, device=device)
    for n in (5, -1, 7):
        got = F.one_hot(g, n)
        want = TF.one_hot(torch.from_numpy(lab), n)
        assert got.dtype == gp.int64 and got.shape == tuple(want.shape)
        np.testing.assert_array_equal(np.asarray(got), want.numpy())
    np.testing.assert_array_equal(np.asarray(F.one_hot(gp.asarray(lab.astype(np.int32),
                                                                  device=device), 5)),
                                  TF.one_hot(torch.from_numpy(lab), 5).numpy())
    for bad, n, msg in (([0, 3], 3, "smaller than num_classes"),
                        ([0, -1], 3, "non-negative"), ([2, -1], -1, "non-negative")):
        with pytest.raises(RuntimeError, match=msg.replace("smaller", "smaller")):
            TF.one_hot(torch.tensor(bad), n)
        with pytest.raises(ValueError, match=f"one_hot: class values must be {msg}"):
            F.one_hot(gp.asarray(np.array(bad), device=device), n)
    empty = gp.asarray(np.zeros((0,), np.int64), device=device)
    assert F.one_hot(empty, 3).shape == tuple(TF.one_hot(torch.zeros(0, dtype=torch.long),
                                                         3).shape)
    with pytest.raises(ValueError, match="one_hot: cannot infer num_classes"):
        F.one_hot(empty)
    with pytest.raises(ValueError, match="one_hot: num_classes"):
        F.one_hot(g, -2)
    with pytest.raises(TypeError, match="one_hot: num_classes"):
        F.one_hot(g, 3.0)
    with pytest.raises(TypeError, match="one_hot: num_classes"):
        F.one_hot(g, True)
    assert F.one_hot(g, np.int64(5)).shape == (2, 2, 5)


def test_one_hot_check_is_one_download_and_refused_by_jit(device):
    """The check reads the classes' min and max in one download (device_stats 'downloads', as
    torch's check syncs); inside a grilly.jit trace that read is the jit's host-read error, so a
    replay never skips the check. The losses that check their labels themselves still trace."""
    g = gp.asarray(np.array([0, 2, 1]), device=device)
    F.one_hot(g, 3)   # warm
    before = gp.device_stats(device).get("downloads")
    F.one_hot(g, 3)
    if before is not None:
        assert gp.device_stats(device)["downloads"] - before == 1
    f = gp.jit(lambda x: F.one_hot(x, 3))
    with pytest.raises(gp.jit.JitError, match="to_host"):
        f(g)
    spk = gp.asarray((R.random((4, 3, 3)) > 0.5).astype(np.float32), device=device)
    loss = gp.jit(lambda s, y: gp.nn.snn.functional.mse_count_loss()(s, y))
    eager = gp.nn.snn.functional.mse_count_loss()(spk, g)
    np.testing.assert_allclose(_f64(loss(spk, g)), _f64(eager), rtol=1e-6)
