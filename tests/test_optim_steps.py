"""The fused optimizer kernels (grilly.array.optim_steps): each rule, on every device, by kernel
and by composition, equals a float64 numpy reference of the rule over several steps; the
kernel and the composition agree with each other; bad arguments name the op and the argument."""
import contextlib
import math

import numpy as np
import pytest

import grilly as gp
from grilly.array import core, optim_steps

N = 1000   # not a multiple of 4 or of a workgroup
STEPS = 6


# ---- float64 references, written from the papers' / torch.optim's formulas ---------------------
def ref_sgd(p, g, st, *, lr, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False,
            maximize=False, first=False):
    d = -g if maximize else g
    d = d + weight_decay * p
    if momentum:
        st["buf"] = d.copy() if first else momentum * st["buf"] + (1 - dampening) * d
        d = d + momentum * st["buf"] if nesterov else st["buf"]
    return p - lr * d


def ref_adam(p, g, st, *, lr, beta1, beta2, eps, step, weight_decay=0.0, decoupled=False,
             maximize=False, amsgrad=False):
    g = -g if maximize else g
    if decoupled:
        p = p * (1 - lr * weight_decay)
    else:
        g = g + weight_decay * p
    st["m"] = beta1 * st["m"] + (1 - beta1) * g
    st["v"] = beta2 * st["v"] + (1 - beta2) * g * g
    v = st["v"]
    if amsgrad:
        st["vmax"] = v = np.maximum(st["vmax"], v)
    mhat = st["m"] / (1 - beta1 ** step)
    return p - lr * mhat / (np.sqrt(v) / math.sqrt(1 - beta2 ** step) + eps)


def ref_rmsprop(p, g, st, *, lr, alpha, eps, weight_decay=0.0, momentum=0.0, maximize=False,
                centered=False):
    g = (-g if maximize else g) + weight_decay * p
    st["sq"] = alpha * st["sq"] + (1 - alpha) * g * g
    var = st["sq"]
    if centered:
        st["ga"] = alpha * st["ga"] + (1 - alpha) * g
        var = var - st["ga"] ** 2
    u = g / (np.sqrt(var) + eps)
    if momentum:
        st["buf"] = momentum * st["buf"] + u
        u = st["buf"]
    return p - lr * u


def ref_adagrad(p, g, st, *, lr, eps, step, lr_decay=0.0, weight_decay=0.0, maximize=False):
    g = (-g if maximize else g) + weight_decay * p
    st["sum"] = st["sum"] + g * g
    return p - lr / (1 + (step - 1) * lr_decay) * g / (np.sqrt(st["sum"]) + eps)


CASES = [
    ("sgd", dict(lr=0.05)),
    ("sgd", dict(lr=0.05, momentum=0.9)),
    ("sgd", dict(lr=0.05, momentum=0.9, dampening=0.3, weight_decay=0.01, maximize=True)),
    ("sgd", dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.02)),
    ("adam", dict(lr=0.01, beta1=0.9, beta2=0.999, eps=1e-8)),
    ("adam", dict(lr=0.01, beta1=0.8, beta2=0.9, eps=1e-6, weight_decay=0.1, amsgrad=True,
                  maximize=True)),
    ("adam", dict(lr=0.01, beta1=0.9, beta2=0.99, eps=1e-8, weight_decay=0.3, decoupled=True)),
    ("adam", dict(lr=0.01, beta1=0.9, beta2=0.99, eps=1e-8, weight_decay=0.3, decoupled=True,
                  amsgrad=True)),
    ("rmsprop", dict(lr=0.01, alpha=0.99, eps=1e-8)),
    ("rmsprop", dict(lr=0.01, alpha=0.9, eps=1e-8, momentum=0.9, centered=True,
                     weight_decay=0.01)),
    ("rmsprop", dict(lr=0.01, alpha=0.9, eps=1e-8, momentum=0.5, maximize=True)),
    ("rmsprop", dict(lr=0.01, alpha=0.9, eps=1e-8, centered=True)),
    ("adagrad", dict(lr=0.1, eps=1e-10)),
    ("adagrad", dict(lr=0.1, eps=1e-10, lr_decay=0.01, weight_decay=0.01, maximize=True)),
]
REFS = {"sgd": ref_sgd, "adam": ref_adam, "rmsprop": ref_rmsprop, "adagrad": ref_adagrad}
STATE = {"sgd": ("buf",), "adam": ("m", "v", "vmax"), "rmsprop": ("sq", "ga", "buf"),
         "adagrad": ("sum",)}


def _grilly_step(rule, p, g, st, kw, step, first):
    kw = dict(kw)
    if rule == "sgd":
        optim_steps.sgd_step(p, g, st.get("buf") if kw.get("momentum") else None, first=first,
                             **kw)
    elif rule == "adam":
        ams = kw.pop("amsgrad", False)
        optim_steps.adam_step(p, g, st["m"], st["v"], st["vmax"] if ams else None, step=step, **kw)
    elif rule == "rmsprop":
        centered = kw.pop("centered", False)
        optim_steps.rmsprop_step(p, g, st["sq"], st["ga"] if centered else None,
                                 st["buf"] if kw.get("momentum") else None, **kw)
    else:
        optim_steps.adagrad_step(p, g, st["sum"], step=step, **kw)


def _run(rule, kw, dtype, device, composed=False, monkeypatch=None, strided=False):
    """STEPS updates in grilly (kernel, or the composition) and in the float64 reference."""
    rng = np.random.default_rng(7)
    p0 = rng.standard_normal(N)
    grads = [rng.standard_normal(N) for _ in range(STEPS)]
    if strided:   # a parameter and state that are every other element of a larger buffer
        big = gp.asarray(np.repeat(p0, 2).astype(dtype), device=device)
        p = big[::2]
    else:
        p = gp.asarray(p0.astype(dtype), device=device)
    st = {k: gp.zeros((N,), dtype=getattr(gp, dtype), device=device) for k in STATE[rule]}
    rst = {k: np.zeros(N) for k in STATE[rule]}
    if rule == "adagrad":
        st["sum"] = gp.full((N,), 0.1, dtype=getattr(gp, dtype), device=device)
        rst["sum"] = np.full(N, np.float64(np.asarray(0.1, dtype)))
    if composed:
        monkeypatch.setattr(optim_steps, "_KERNEL_DTYPES", frozenset())
    want = p0.astype(dtype).astype(np.float64)
    for t, gh in enumerate(grads, 1):
        g = gp.asarray(gh.astype(dtype), device=device)
        _grilly_step(rule, p, g, st, kw, t, t == 1)
        rkw = dict(kw)
        if rule == "sgd":
            rkw["first"] = t == 1
        if rule in ("adam", "adagrad"):
            rkw["step"] = t
        want = REFS[rule](want, gh.astype(dtype).astype(np.float64), rst, **rkw)
    if strided:
        np.testing.assert_array_equal(np.asarray(big)[1::2], np.repeat(p0, 2).astype(dtype)[1::2])
    return np.asarray(p), want


TOL = {"float32": 2e-5, "float64": 1e-12}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("rule,kw", CASES, ids=[f"{r}-{i}" for i, (r, _) in enumerate(CASES)])
def test_kernel_matches_reference(device, rule, kw, dtype):
    got, want = _run(rule, kw, dtype, device)
    np.testing.assert_allclose(got, want, rtol=TOL[dtype], atol=TOL[dtype])


@pytest.mark.parametrize("rule,kw", CASES, ids=[f"{r}-{i}" for i, (r, _) in enumerate(CASES)])
def test_composition_matches_kernel(device, rule, kw, monkeypatch):
    # float32: the kernel computes the composition's operations in the same order, so the two
    # agree to a few float32 roundings (Vulkan's correctly rounded sqrt/divide: bit-for-bit)
    got, want = _run(rule, kw, "float32", device)
    comp, _ = _run(rule, kw, "float32", device, composed=True, monkeypatch=monkeypatch)
    np.testing.assert_allclose(got, comp, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(comp, want, rtol=TOL["float32"], atol=TOL["float32"])


@pytest.mark.parametrize("rule,kw", [CASES[2], CASES[5], CASES[9], CASES[13]])
def test_strided_parameter(device, rule, kw):
    got, want = _run(rule, kw, "float32", device, strided=True)
    np.testing.assert_allclose(got, want, rtol=TOL["float32"], atol=TOL["float32"])


def test_float16_uses_the_composition(device):
    p = gp.asarray(np.linspace(-1, 1, 8), dtype=gp.float16, device=device)
    g = gp.ones((8,), dtype=gp.float16, device=device)
    optim_steps.sgd_step(p, g, lr=0.25)
    np.testing.assert_array_equal(np.asarray(p), np.linspace(-1, 1, 8).astype(np.float16) - 0.25)


def test_kernel_is_used(device):
    """The device's kernel runs (no elementwise passes) where the backend has one."""
    if "adam_step" not in device.kernels:
        pytest.skip(f"{device} has no adam_step kernel")
    calls = []
    real = core.composite

    def spy(dev, op):
        calls.append(op)
        return real(dev, op)
    p = gp.zeros((4,), device=device)
    m, v = gp.zeros_like(p), gp.zeros_like(p)
    try:
        core.composite = spy
        optim_steps.adam_step(p, gp.ones_like(p), m, v, lr=0.1, beta1=0.9, beta2=0.999,
                              eps=1e-8, step=1)
    finally:
        core.composite = real
    assert calls == []
    np.testing.assert_allclose(np.asarray(p), -0.1 * np.ones(4), rtol=1e-6)


def test_errors(device):
    p = gp.zeros((3,), dtype=gp.float64, device=device)
    with pytest.raises(TypeError, match="adam_step: p must have a real floating dtype"):
        optim_steps.adam_step(gp.zeros((3,), dtype=gp.int32, device=device), p, p, p, lr=0.1,
                              beta1=0.9, beta2=0.9, eps=1e-8, step=1)
    with pytest.raises(ValueError, match=r"sgd_step: g has shape \(2,\), expected p's shape"):
        optim_steps.sgd_step(p, gp.zeros((2,), device=device), lr=0.1)
    with pytest.raises(TypeError, match="rmsprop_step: square_avg has dtype float32"):
        optim_steps.rmsprop_step(p, p, gp.zeros((3,), dtype=gp.float32, device=device), lr=0.1,
                                 alpha=0.9, eps=1e-8)
    with pytest.raises(TypeError, match="adagrad_step: expected a grilly Array for 'g'"):
        optim_steps.adagrad_step(p, np.zeros(3), p, lr=0.1, eps=1e-8, step=1)
    with pytest.raises(ValueError, match="adam_step: step counts from 1"):
        optim_steps.adam_step(p, p, p, p, lr=0.1, beta1=0.9, beta2=0.9, eps=1e-8, step=0)
    with pytest.raises(ValueError, match="sgd_step: momentum > 0 needs a momentum_buffer"):
        optim_steps.sgd_step(p, p, lr=0.1, momentum=0.9)


@pytest.mark.parametrize("rule,kw", CASES, ids=[f"{r}-{i}" for i, (r, _) in enumerate(CASES)])
def test_cpu_parallel_loop_equals_serial(rule, kw, monkeypatch):
    # the cpu kernels run their parallel loop from jit.PARALLEL_MIN elements: force it here
    from grilly.backends.cpu_numba import jit, reductions

    cpu = gp.backends.registry.device("cpu")
    serial, want = _run(rule, kw, "float32", cpu)
    monkeypatch.setattr(jit, "PARALLEL_MIN", 1)
    monkeypatch.setattr(reductions, "_serial_until", [0.0])
    got, _ = _run(rule, kw, "float32", cpu)
    np.testing.assert_array_equal(got, serial)


def test_cpu_parallel_backoff_judges_each_kernel_against_its_own_best(monkeypatch):
    # a kernel's first call may compile it, and a compute-heavy kernel streams slower than a
    # copy: neither may switch the backend to serial; a call 3x slower than the kernel's best
    # (another process holding a core) does
    import time

    from grilly.backends.cpu_numba import reductions

    monkeypatch.setattr(reductions, "_serial_until", [0.0])
    monkeypatch.setattr(reductions, "_best", {})
    nbytes = int(reductions.SERIAL_BYTES_PER_S * 0.002)   # a 2 ms stream for one thread

    def kernel(seconds):
        time.sleep(seconds)

    reductions.par(kernel, 1, nbytes, 0.05)     # first call (compiling): not judged
    assert reductions.use_threads(1 << 30)
    for _ in range(3):                          # always 10 ms: slow, but its own pace
        reductions.par(kernel, 1, nbytes, 0.01)
        assert reductions.use_threads(1 << 30)
    reductions.par(kernel, 1, nbytes, 0.04)     # 4x its best: contended
    assert not reductions.use_threads(1 << 30)


# ---- many parameters at once (optim_steps.batched, the optim_multi kernel) ----------------------
# shapes: a scalar, ragged sizes, one spanning many workgroups of optim_multi.comp, an empty one
SHAPES = [(), (3,), (7, 5), (1000,), (3000, 3), (0, 4), (33,)]


def _params(dev, dtype, seed):
    rng = np.random.default_rng(seed)
    return [gp.asarray(rng.standard_normal(s).astype(dtype), device=dev) for s in SHAPES]


def _run_adam(dev, dtype, batched, amsgrad, decoupled):
    """Three Adam steps over SHAPES (a strided gradient among them); the arrays after."""
    ps = _params(dev, dtype, 1)
    st = [[gp.zeros_like(p) for _ in range(3)] for p in ps]
    rng = np.random.default_rng(2)
    for t in range(1, 4):
        gs = [gp.asarray(rng.standard_normal(p.shape).astype(dtype), device=dev) for p in ps]
        gs[2] = gp.matrix_transpose(gp.asarray(rng.standard_normal((5, 7)).astype(dtype),
                                               device=dev))
        with optim_steps.batched() if batched else contextlib.nullcontext():
            for p, g, (m, v, vx) in zip(ps, gs, st):
                # the first parameter a step behind: a different bias correction
                optim_steps.adam_step(p, g, m, v, vx if amsgrad else None, lr=0.01, beta1=0.9,
                                      beta2=0.99, eps=1e-8, step=t if p.ndim else max(t - 1, 1),
                                      weight_decay=0.1, decoupled=decoupled)
    return [np.asarray(a) for a in ps + [s for row in st for s in row]]


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
@pytest.mark.parametrize("amsgrad,decoupled", [(False, False), (True, True)])
def test_batched_equals_one_by_one(device, dtype, amsgrad, decoupled):
    """Updates collected by batched() give exactly the one-parameter results, every dtype."""
    if dtype is np.float64 and not device.backend.supports_dtype(device, gp.float64):
        pytest.skip("no float64 on this device")
    want = _run_adam(device, dtype, False, amsgrad, decoupled)
    got = _run_adam(device, dtype, True, amsgrad, decoupled)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)


def test_batched_sgd_rmsprop_adagrad(device):
    rng = np.random.default_rng(5)
    for rule, kw in (("sgd_step", dict(lr=0.1, momentum=0.9, nesterov=True)),
                     ("rmsprop_step", dict(lr=0.01, alpha=0.9, eps=1e-8, momentum=0.5)),
                     ("adagrad_step", dict(lr=0.1, eps=1e-10, lr_decay=0.01))):
        runs = []
        g_np = [rng.standard_normal(s).astype(np.float32) for s in SHAPES]
        for batched in (False, True):
            ps = _params(device, np.float32, 7)
            st = [[gp.zeros_like(p) for _ in range(2)] for p in ps]
            gs = [gp.asarray(h, device=device) for h in g_np]
            with optim_steps.batched() if batched else contextlib.nullcontext():
                for p, g, (a, b) in zip(ps, gs, st):
                    if rule == "sgd_step":
                        optim_steps.sgd_step(p, g, a, first=True, **kw)
                    elif rule == "rmsprop_step":
                        optim_steps.rmsprop_step(p, g, a, None, b, **kw)
                    else:
                        optim_steps.adagrad_step(p, g, a, step=2, **kw)
            runs.append([np.asarray(x) for x in ps + [s for row in st for s in row]])
        for a, b in zip(*runs):
            np.testing.assert_array_equal(a, b)


def test_batched_amp_unscale(device):
    """GradScaler's unscale of many gradients at once: every gradient scaled, the flag set only
    by the one holding an inf."""
    for bad in (None, 3):
        gs_np = [np.random.default_rng(k).standard_normal(s).astype(np.float32)
                 for k, s in enumerate(SHAPES)]
        if bad is not None:
            gs_np[bad].flat[2] = np.inf
        gs = [gp.asarray(h, device=device) for h in gs_np]
        found = gp.zeros((), dtype=gp.uint32, device=device)
        with optim_steps.batched():
            for g in gs:
                optim_steps.amp_unscale(g, found, 0.125)
        assert int(np.asarray(found)) == (bad is not None)
        for g, h in zip(gs, gs_np):
            np.testing.assert_array_equal(np.asarray(g), h * np.float32(0.125))


def test_batched_error_updates_nothing(device):
    """A bad call inside batched() raises there, and nothing collected before it runs."""
    p = gp.asarray(np.ones(4, np.float32), device=device)
    g = gp.asarray(np.ones(4, np.float32), device=device)
    with pytest.raises(ValueError, match="adam_step"):
        with optim_steps.batched():
            optim_steps.sgd_step(p, g, lr=0.5)
            optim_steps.adam_step(p, g, gp.zeros(3, dtype=gp.float32, device=device),
                                  gp.zeros(4, dtype=gp.float32, device=device),
                                  lr=0.1, beta1=0.9, beta2=0.99, eps=1e-8, step=1)
    np.testing.assert_array_equal(np.asarray(p), np.ones(4, np.float32))


def test_optimizer_step_is_one_dispatch_on_vulkan():
    """An Adam step over many parameters is one optim_multi dispatch on a Vulkan device that
    reaches buffers by address, and gives the one-by-one result."""
    devs = [d for d in gp.devices() if str(d).startswith("vulkan")]
    dev = devs[0] if devs else None
    if dev is None or not dev.phys.device_addresses:
        pytest.skip("no Vulkan device with buffer device addresses")
    from grilly import optim

    def train(batched):
        ps = _params(dev, np.float32, 3)
        for p in ps:
            p.requires_grad_()
        opt = optim.Adam(ps, lr=0.01)
        rng = np.random.default_rng(4)
        counts = []
        for _ in range(3):
            for p in ps:
                p.grad = gp.asarray(rng.standard_normal(p.shape).astype(np.float32), device=dev)
            gp.synchronize(dev)
            before = gp.device_stats(dev)["dispatches"]
            if batched:
                opt.step()
            else:
                with optim_steps.batched():   # nested: the outer block runs them ...
                    pass
                for p in ps:                  # ... here each on its own
                    if p.grad is not None:
                        opt._update(p, p.grad, opt.state_of(p), opt.param_groups[0])
            gp.synchronize(dev)
            counts.append(gp.device_stats(dev)["dispatches"] - before)
        return [np.asarray(p) for p in ps], counts

    got, n_batched = train(True)
    want, n_single = train(False)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)
    assert n_batched == [1, 1, 1]
    assert min(n_single) >= len(SHAPES) - 1   # (the empty one has nothing to do)


def test_batched_without_device_addresses(monkeypatch):
    """A Vulkan device without buffer device addresses runs the batched updates one dispatch
    per parameter, with the same results."""
    devs = [d for d in gp.devices() if str(d).startswith("vulkan")]
    if not devs:
        pytest.skip("no Vulkan device")
    dev = devs[0]
    want = _run_adam(dev, np.float32, True, False, False)
    monkeypatch.setattr(dev.ctx, "get_buffer_address", None)
    gp.synchronize(dev)
    before = gp.device_stats(dev)["dispatches"]
    got = _run_adam(dev, np.float32, True, False, False)
    # three steps over SHAPES less the empty one, plus the strided gradients' copies
    assert gp.device_stats(dev)["dispatches"] - before >= 3 * (len(SHAPES) - 1)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)
