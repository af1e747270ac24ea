"""grilly.amp as a torch.amp user ports it (fifth hunt): regions per device type, dtype=None
inheriting the enclosing region's dtype, device types grilly lacks, GradScaler's float32 scale
arithmetic (odd factors, the growth cap) and its checks that a step was recorded. torch 2.13's
CPU autocast and torch.amp.GradScaler("cpu") are the oracles."""
import warnings

import numpy as np
import pytest

import grilly as gp
from grilly import amp, autograd, optim

torch = pytest.importorskip("torch")

R = np.random.default_rng(55)


def _kind(device) -> str:
    return str(device).split(":")[0]


def _mm_dtype(x):
    return gp.matmul(x, gp.matrix_transpose(x)).dtype.name


def _tmm_dtype(t):
    return str((t @ t.T).dtype).replace("torch.", "")


def _torch_region(device_type, **kw):
    """torch.autocast, quiet about a device type this machine lacks (it disables that one)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return torch.autocast(device_type, **kw)


# ---- regions ----------------------------------------------------------------------------------
def test_a_region_for_another_device_type_leaves_the_enclosing_one_on(device):
    """torch keeps one autocast state per device type: an inner region for another device type
    (disabled, or with its own dtype) does not touch the outer one's. grilly's innermost region
    used to govern every device: the outer region was off inside it and get_autocast_dtype
    reported the inner one's dtype."""
    x = gp.asarray(R.standard_normal((3, 4)).astype(np.float32), device=device)
    t = torch.from_numpy(np.asarray(x))
    kind = _kind(device)
    other = "vulkan" if kind == "cpu" else "cpu"
    with torch.autocast("cpu", dtype=torch.bfloat16):
        with _torch_region("cuda", enabled=False):
            want_off = (_tmm_dtype(t), torch.is_autocast_enabled("cpu"),
                        str(torch.get_autocast_dtype("cpu")).replace("torch.", ""))
        with _torch_region("xpu", dtype=torch.float16):
            want_on = (_tmm_dtype(t), torch.is_autocast_enabled("cpu"),
                       str(torch.get_autocast_dtype("cpu")).replace("torch.", ""))
    with amp.autocast(kind, dtype=gp.bfloat16):
        with amp.autocast(other, enabled=False):
            got_off = (_mm_dtype(x), amp.is_autocast_enabled(kind),
                       amp.get_autocast_dtype(kind).name)
            assert not amp.is_autocast_enabled(other) and amp.is_autocast_enabled()
        with amp.autocast(other, dtype=gp.float16):
            got_on = (_mm_dtype(x), amp.is_autocast_enabled(kind),
                      amp.get_autocast_dtype(kind).name)
            assert amp.get_autocast_dtype(other) is gp.float16
        # the same device type's inner region does govern it
        with amp.autocast(str(device), enabled=False):
            assert _mm_dtype(x) == "float32" and not amp.is_autocast_enabled()
    assert got_off == want_off == ("bfloat16", True, "bfloat16")
    assert got_on == want_on == ("bfloat16", True, "bfloat16")
    # outside any region: the device type's default, as torch's (bfloat16 for cpu)
    assert not amp.is_autocast_enabled(kind) and amp.get_autocast_dtype() is None
    assert amp.get_autocast_dtype(kind) is (gp.bfloat16 if kind == "cpu" else gp.float16)
    assert str(torch.get_autocast_dtype("cpu")) == "torch.bfloat16"


def test_dtype_none_is_the_enclosing_regions_dtype(device):
    """torch.autocast(dtype=None) takes the dtype in force for its device type when made (a
    region re-enabled inside a disabled one keeps the outer dtype); grilly's took float16."""
    x = gp.asarray(R.standard_normal((3, 4)).astype(np.float32), device=device)
    t = torch.from_numpy(np.asarray(x))
    # torch's CPU default is bfloat16, grilly's float16: each outer region takes the other one
    with torch.autocast("cpu", dtype=torch.float16):
        with torch.autocast("cpu"):
            t_inner = _tmm_dtype(t)
        with torch.autocast("cpu", enabled=False):
            t_off = str(torch.get_autocast_dtype("cpu")).replace("torch.", "")
            with torch.autocast("cpu"):
                t_again = _tmm_dtype(t)
    with amp.autocast(dtype=gp.bfloat16):
        with amp.autocast():
            g_inner = _mm_dtype(x)
        with amp.autocast(_kind(device), enabled=False):
            g_off = amp.get_autocast_dtype(_kind(device)).name
            with amp.autocast(_kind(device)):
                g_again = _mm_dtype(x)
    assert t_inner == t_off == t_again == "float16"
    assert g_inner == g_off == g_again == "bfloat16"

    # a decorator's dtype is fixed where it is made, in both
    @torch.autocast("cpu")
    def tf():
        return _tmm_dtype(t)

    @amp.autocast()
    def gf():
        return _mm_dtype(x)
    with torch.autocast("cpu", dtype=torch.float16):
        assert tf() == "bfloat16"       # torch's default, not the caller's float16
    with amp.autocast(dtype=gp.bfloat16):
        assert gf() == "float16"        # grilly's default, not the caller's bfloat16


def test_device_types_grilly_lacks_are_refused(device):
    """torch refuses a device type it does not know; grilly took any string, so the
    torch.autocast("cuda") a user ports was a region that silently cast nothing."""
    with pytest.raises(RuntimeError):
        torch.autocast("foo")
    x = gp.asarray(np.ones((2, 2), np.float32), device=device)
    for who, call in (("autocast", lambda: amp.autocast("cuda")),
                      ("autocast", lambda: gp.autocast(device_type="mps")),
                      ("is_autocast_enabled", lambda: amp.is_autocast_enabled("cuda")),
                      ("get_autocast_dtype", lambda: amp.get_autocast_dtype("cuda:0")),
                      ("custom_fwd", lambda: amp.custom_fwd(device_type="cuda")),
                      ("custom_bwd", lambda: amp.custom_bwd(device_type="cuda"))):
        with pytest.raises(ValueError, match=f"{who}: device_type '(cuda|mps).*'vulkan'"):
            call()
    with amp.autocast(str(device)):   # "cpu" / "vulkan:0" name grilly's device types
        # torch.autocast("cpu")'s default dtype is bfloat16; a GPU's float16 (as "cuda")
        assert _mm_dtype(x) == ("bfloat16" if str(device) == "cpu" else "float16")
    with torch.autocast("cpu"):
        assert torch.get_autocast_dtype("cpu") == torch.bfloat16
    assert _mm_dtype(x) == "float32"


def test_enabled_and_cache_enabled_are_checked():
    """torch refuses a non-bool enabled / cache_enabled (TypeError); grilly's message for a
    numpy bool read "must be a bool, got bool", and cache_enabled took anything."""
    for kw in ({"enabled": np.bool_(True)}, {"cache_enabled": "yes"}):
        # torch's __enter__ turns its CPU autocast on before it refuses cache_enabled, and no
        # __exit__ follows: its state is put back here, or every later torch op in this
        # process would run in bfloat16
        state = (torch.is_autocast_enabled("cpu"), torch.get_autocast_dtype("cpu"),
                 torch.is_autocast_cache_enabled())
        try:
            with pytest.raises(TypeError):
                with torch.autocast("cpu", **kw):
                    pass
        finally:
            if torch.is_autocast_enabled("cpu") != state[0]:
                torch.autocast_decrement_nesting()
            torch.set_autocast_enabled("cpu", state[0])
            torch.set_autocast_dtype("cpu", state[1])
            torch.set_autocast_cache_enabled(state[2])
    assert not torch.is_autocast_enabled("cpu")
    with pytest.raises(TypeError, match="autocast: enabled must be a Python bool, got numpy"):
        amp.autocast(enabled=np.bool_(True))
    with pytest.raises(TypeError, match="autocast: cache_enabled"):
        amp.autocast(cache_enabled="yes")
    with amp.autocast(cache_enabled=False):   # as torch's: a bool is taken
        assert amp.is_autocast_enabled()


def test_custom_fwd_device_type_filter(device):
    """custom_fwd(device_type=..., cast_inputs=...) casts only inside a region for its device
    type (torch: the CPU state for "cpu"); a region for another device type leaves it alone."""
    kind = _kind(device)
    other = "vulkan" if kind == "cpu" else "cpu"
    seen = {}

    class G(autograd.Function):
        @staticmethod
        @amp.custom_fwd(device_type=kind, cast_inputs=gp.float32)
        def forward(ctx, a):
            seen["fwd"] = (a.dtype.name, amp.is_autocast_enabled(kind))
            return a * 2.0

        @staticmethod
        @amp.custom_bwd(device_type=kind)
        def backward(ctx, g):
            return g * 2.0
    a = gp.asarray(np.ones(3, np.float16), device=device)
    with amp.autocast(other, dtype=gp.bfloat16):
        G.apply(a)
    assert seen["fwd"] == ("float16", False)
    with amp.autocast(other, enabled=False):
        with amp.autocast(kind):
            G.apply(a)
    assert seen["fwd"] == ("float32", False)


# ---- GradScaler -------------------------------------------------------------------------------
def _trajectory(device, steps, bad, **kw):
    """Scales, growth trackers and parameters of grilly's and torch's scalers over ``steps``,
    with an inf or NaN injected at the steps in ``bad``. Its own generator, and gradients in
    (-1, 1): a scale near float32's top overflows only where a step injects it (with the
    module's generator the draws depended on which tests ran first in the worker)."""
    rng = np.random.default_rng(56)
    init = rng.standard_normal(6).astype(np.float32)
    gpar = gp.asarray(init.copy(), device=device)
    gpar.requires_grad_(True)
    tpar = torch.from_numpy(init.copy()).requires_grad_()
    go, to = optim.SGD([gpar], lr=0.05), torch.optim.SGD([tpar], lr=0.05)
    gs, ts = amp.GradScaler(**kw), torch.amp.GradScaler("cpu", **kw)
    out = []
    for i in range(steps):
        g = rng.uniform(-1.0, 1.0, 6).astype(np.float32)
        if i in bad:
            g[2] = bad[i]
        gpar.grad = gs.scale(gp.asarray(g, device=device))
        tpar.grad = ts.scale(torch.from_numpy(g)).detach()
        assert (gs.step(go) is None) == (ts.step(to) is None)
        gs.update()
        ts.update()
        out.append((gs.get_scale(), ts.get_scale(), gs.state_dict(), ts.state_dict()))
        np.testing.assert_allclose(np.asarray(gpar), tpar.detach().numpy(), rtol=1e-6, atol=1e-7)
    return out


def test_scale_sequence_with_odd_factors_is_torchs(device):
    """torch keeps the scale in a float32 tensor: growth and backoff by factors that are not
    powers of two round to float32 at each update. grilly's scale was a float64, so its
    sequence (and the unscaled gradients, the parameters) drifted from torch's."""
    kw = dict(init_scale=1000.0, growth_factor=1.7, backoff_factor=0.3, growth_interval=2)
    seq = _trajectory(device, 12, {3: np.inf, 4: np.nan, 8: -np.inf}, **kw)
    for i, (g, t, gsd, tsd) in enumerate(seq):
        assert g == t and gsd == tsd, i
    assert len({g for g, *_ in seq}) > 4   # it did grow and back off


def test_scale_growth_stops_at_float32s_range(device):
    """torch never grows the scale to inf (a growth past float32's range is dropped, the
    tracker reset); grilly's float64 scale grew past it, so every scaled loss overflowed."""
    seq = _trajectory(device, 5, {}, init_scale=2.0 ** 125, growth_interval=1)
    for i, (g, t, gsd, tsd) in enumerate(seq):
        assert g == t and gsd == tsd, i
    assert seq[-1][0] == 2.0 ** 127


def test_update_and_step_need_recorded_checks(device):
    """torch asserts when update() finds no inf check (optimizer.step() called instead of
    scaler.step(optimizer): it steps on scaled gradients) and when step() finds no gradient;
    grilly ignored both silently (the scale never moved)."""
    lin = torch.nn.Linear(3, 2)
    ts, gs = torch.amp.GradScaler("cpu"), amp.GradScaler()
    topt = torch.optim.SGD(lin.parameters(), lr=0.1)
    p = gp.asarray(np.ones(3, np.float32), device=device)
    p.requires_grad_(True)
    gopt = optim.SGD([p], lr=0.1)
    ts.scale(lin(torch.ones(1, 3)).sum()).backward()
    gs.scale(gp.sum(p * 2.0)).backward()
    topt.step()
    gopt.step()
    with pytest.raises(AssertionError, match="No inf checks"):
        ts.update()
    with pytest.raises(RuntimeError, match="GradScaler.update: no inf/NaN checks.*scaler.step"):
        gs.update()
    topt.zero_grad(set_to_none=True)
    p.grad = None
    with pytest.raises(AssertionError, match="No inf checks"):
        ts.step(topt)
    with pytest.raises(RuntimeError, match="GradScaler.step: none of this optimizer's"):
        gs.step(gopt)
    # update(new_scale) needs no step, as torch's
    ts.update(8.0)
    gs.update(8.0)
    assert gs.get_scale() == ts.get_scale() == 8.0


def test_new_scale_and_loaded_scale_round_as_torchs(device):
    """update(new_scale) and load_state_dict fill torch's float32 scale tensor; grilly kept the
    float64. A 1-element array is taken, a longer one is a ValueError (torch asserts)."""
    gs, ts = amp.GradScaler(), torch.amp.GradScaler("cpu")
    ts.scale(torch.ones(()))
    for new in (0.3, 1.0e-3):
        gs.update(new)
        ts.update(new)
        assert gs.get_scale() == ts.get_scale() and gs.state_dict() == ts.state_dict()
    gs.update(gp.asarray(np.array([0.7]), device=device))
    ts.update(torch.tensor(0.7, dtype=torch.float64))
    assert gs.get_scale() == ts.get_scale()
    with pytest.raises(AssertionError):
        ts.update(torch.tensor([1.0, 2.0]))
    with pytest.raises(ValueError, match="GradScaler.update: new_scale .*1-element"):
        gs.update(gp.asarray(np.array([1.0, 2.0]), device=device))
    g2, t2 = amp.GradScaler(), torch.amp.GradScaler("cpu")
    t2.scale(torch.ones(()))
    state = dict(ts.state_dict(), scale=0.1)
    g2.load_state_dict(state)
    t2.load_state_dict(state)
    assert g2.state_dict() == t2.state_dict()
    with pytest.raises(RuntimeError):   # torch: only when the scale tensor is made
        torch.amp.GradScaler("cpu", init_scale=1e39).scale(torch.ones(()))
    with pytest.raises(ValueError, match="GradScaler: init_scale .*float32"):
        amp.GradScaler(init_scale=1e39)


def test_float64_gradients_unscale_by_torchs_float32_reciprocal(device):
    """torch unscales by the float32 reciprocal of its scale, whatever the gradients' dtype;
    grilly multiplied float64 gradients by the float64 one (an ulp apart for a scale such as
    153)."""
    g = R.standard_normal(7)
    gs, ts = amp.GradScaler(init_scale=153.0), torch.amp.GradScaler("cpu", init_scale=153.0)
    gpar = gp.zeros(7, dtype=gp.float64, device=device)
    gpar.requires_grad_(True)
    tpar = torch.zeros(7, dtype=torch.float64, requires_grad=True)
    go, to = optim.SGD([gpar], lr=0.1), torch.optim.SGD([tpar], lr=0.1)
    gpar.grad = gs.scale(gp.asarray(g, device=device))
    tpar.grad = ts.scale(torch.from_numpy(g)).detach()
    gs.unscale_(go)
    ts.unscale_(to)
    np.testing.assert_array_equal(np.asarray(gpar.grad), tpar.grad.numpy())
