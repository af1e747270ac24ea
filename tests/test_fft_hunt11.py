"""grilly.fft on Vulkan's own FFT kernels, hunted as a torch.fft / numpy.fft user (eleventh hunt).
Found: the kernel sized its shared-memory rows with the padding rounded away (17/16 of a
complex64's 8 bytes taken as 8), so on a 32 KB device (lavapipe) a workgroup declared 34816
bytes of shared memory, past maxComputeSharedMemorySize; the tables cache was bounded by count
only (20 lengths near 10^6 held 1 GB of device memory); rfftn / irfftn / hfftn / ihfftn with
axes=() raised a bare IndexError, and hfft's / hfftn's bad arguments were errors naming irfft.
The rest guards what held: the lengths around the kernel's thresholds, more row groups than a
dispatch launches (the cap lowered, as lavapipe's buffers cannot reach 65535 workgroups), edge
sizes, layouts, norms, dtypes, gradients against torch.fft, jit replay, threads, and the
results staying on the device. Also: astype of bfloat16 to complex had no Vulkan shader
(NotImplementedError). Oracles: numpy.fft in float64, torch.fft for gradients."""
import threading

import numpy as np
import pytest

import grilly as gp
import grilly.func as GF

R = np.random.default_rng(11)


def _cx(shape, dtype=np.complex64):
    return (R.standard_normal(shape) + 1j * R.standard_normal(shape)).astype(dtype)


def _check(got, want, tol=2e-6):
    got = np.asarray(got)
    assert got.shape == want.shape, (got.shape, want.shape)
    if want.size:
        err = np.linalg.norm(got.astype(want.dtype) - want) / max(np.linalg.norm(want), 1e-30)
        assert err <= tol, err


def _vulkan(device):
    if not str(device).startswith("vulkan"):
        pytest.skip("the Vulkan kernels")
    from grilly.backends.vulkan import fft as vf
    return vf


def test_shared_memory_fits_the_device(device):
    """A workgroup's rows and their padding (one element per 16) fit maxComputeSharedMemorySize
    (complex64 on lavapipe's 32 KB took 4096 elements: 34816 bytes); 4096 and 8192 points then
    take the one-pass and four-step paths, and still agree with numpy."""
    vf = _vulkan(device)
    from grilly.backends import dtypes as bdt
    ctx = device.ctx
    for cdt in (bdt.complex64, bdt.complex128):
        smax = 1 << vf._logt(ctx, cdt)
        assert (smax + smax // 16) * cdt.itemsize <= ctx.phys.max_shared, cdt.name
    x = _cx((1, 8192))
    _check(gp.fft.fft(gp.asarray(x, device=device)), np.fft.fft(x.astype(complex)))
    _check(gp.fft.fft(gp.asarray(x[:, :4096], device=device)),
           np.fft.fft(x[:, :4096].astype(complex)))


@pytest.mark.parametrize("n", [1023, 1024, 1025, 2047, 2048, 2049, 4095, 4097, 8191, 8193, 4099])
def test_lengths_around_the_thresholds(device, n):
    x = _cx((1, n))
    a = gp.asarray(x, device=device)
    x64 = x.astype(complex)
    _check(gp.fft.ifft(a), np.fft.ifft(x64))
    _check(gp.fft.irfft(a, n=n), np.fft.irfft(x64, n=n))


@pytest.mark.parametrize("n", [1024, 1025, 2048, 4097])
def test_complex128_thresholds(device, n):
    x = _cx((1, n), np.complex128)
    _check(gp.fft.fft(gp.asarray(x, device=device)), np.fft.fft(x), tol=5e-15)


def test_more_row_groups_than_one_dispatch_launches(device, monkeypatch):
    """Each workgroup strides over the row groups past the dispatch's size (65535 on a real
    device; lavapipe's 128 MB buffers cannot hold that many, so the cap is lowered here)."""
    vf = _vulkan(device)
    monkeypatch.setattr(vf, "GROUPS_MAX", 2)
    for shape, kw in [((3000, 2), {}), ((2500, 1), {"n": 1}), ((5, 37), {"axis": 0}),
                      ((3, 8192), {}), ((2, 5000), {})]:
        x = _cx(shape)
        a = gp.asarray(x, device=device)
        _check(gp.fft.fft(a, **kw), np.fft.fft(x.astype(complex), **kw))
        _check(gp.fft.irfft(a, **kw), np.fft.irfft(x.astype(complex), **kw))


def test_tables_cache_is_bounded_in_bytes(device, monkeypatch):
    """Bluestein's tables of many long lengths: the cache drops them past its byte budget, and
    transforms recorded before the drop still read their own tables."""
    vf = _vulkan(device)
    monkeypatch.setattr(vf, "PLAN_BYTES", 1 << 16)
    device.ctx.__dict__.pop("_fft_plans", None)
    pending = []
    for n in range(1000, 1010):
        x = _cx((2, 7))
        pending.append((x, n, gp.fft.fft(gp.asarray(x, device=device), n=n)))
        plans = device.ctx._fft_plans
        assert len(plans) == 1 or sum(p.nbytes for p in plans.values()) <= 1 << 16
    for x, n, y in pending:
        _check(y, np.fft.fft(x.astype(complex), n=n))
    device.ctx.__dict__.pop("_fft_plans", None)


def test_real_transforms_need_an_axis_and_name_themselves(device):
    a = gp.asarray(_cx((2, 4)), device=device)
    r = gp.real(a)
    for f, x in [(gp.fft.rfftn, r), (gp.fft.irfftn, a), (gp.fft.hfftn, a), (gp.fft.ihfftn, r)]:
        with pytest.raises(ValueError, match=f"{f.__name__}: axes must name at least one"):
            f(x, axes=())
    with pytest.raises(ValueError, match="rfftn: axes must name"):
        gp.fft.rfft2(r, axes=[])
    with pytest.raises(ValueError, match="^hfft: n must be at least 1"):
        gp.fft.hfft(a, n=0)
    with pytest.raises(ValueError, match="^hfftn: s must be at least 1"):
        gp.fft.hfft2(a, s=(0, 3))
    with pytest.raises(TypeError, match="^ihfft: n must be an int"):
        gp.fft.ihfft(r, n=1.5)
    with pytest.raises(ValueError, match="^ihfftn: s has 3 sizes"):
        gp.fft.ihfftn(r, s=(1, 2, 3))
    with pytest.raises(ValueError, match="fft: x must have at least one dimension"):
        gp.fft.fft(gp.asarray(1.0, device=device))


def test_edge_sizes_axes_layouts_and_norms(device):
    x = _cx((3, 4, 5))
    a = gp.asarray(x, device=device)
    x64 = x.astype(complex)
    F = gp.fft
    _check(F.fft(gp.asarray(np.zeros((3, 0), np.complex64), device=device), n=5),
           np.fft.fft(np.zeros((3, 0)), n=5))
    _check(F.fft(a[:, :1], axis=1), np.fft.fft(x64[:, :1], axis=1))
    _check(F.irfft(a[..., :1], n=1), np.fft.irfft(x64[..., :1], n=1))
    _check(F.hfft(a, n=1), np.fft.hfft(x64, n=1))
    _check(F.fft(a, n=40), np.fft.fft(x64, n=40))
    _check(F.fftn(a[:0], axes=(2,)), np.fft.fftn(x64[:0], axes=(2,)))
    for axes in [(-1, 0), (2, 0, 1), (-3,)]:
        _check(F.ifftn(a, axes=axes, s=[7] * len(axes)),
               np.fft.ifftn(x64, axes=axes, s=[7] * len(axes)))
        _check(F.irfftn(a, axes=axes), np.fft.irfftn(x64, axes=axes))
    _check(F.fft(gp.flip(a, axis=-1)[::2, 1::2]), np.fft.fft(x64[..., ::-1][::2, 1::2]))
    _check(F.rfft(gp.broadcast_to(gp.real(a)[:1, :, :1], (2, 4, 3))),
           np.fft.rfft(np.broadcast_to(x64.real[:1, :, :1], (2, 4, 3))))
    _check(F.fftn(gp.permute_dims(a, (2, 0, 1)), s=(3, 6)),
           np.fft.fftn(x64.transpose(2, 0, 1), s=(3, 6), axes=(1, 2)))
    for norm in (None, "ortho", "forward"):
        _check(F.fft2(a, norm=norm), np.fft.fft2(x64, norm=norm))
        _check(F.hfft(a, n=7, norm=norm), np.fft.hfft(x64, n=7, norm=norm))
        _check(F.ihfft(gp.real(a), norm=norm), np.fft.ihfft(x64.real, norm=norm))
    _check(F.fftshift(a, axes=(0, -1)), np.fft.fftshift(x64, axes=(0, -1)))
    _check(F.ifftshift(a, axes=1), np.fft.ifftshift(x64, axes=1))
    _check(F.fftfreq(7, d=0.5, device=device), np.fft.fftfreq(7, d=0.5))


def test_input_dtypes_match_the_cpu(device):
    """float16 / bfloat16 / int / float64 input: the cpu backend's result dtypes, numpy's values."""
    r = R.standard_normal((2, 8)).astype(np.float32)
    cpu = gp.asarray(r)
    for d in (gp.float16, gp.bfloat16, gp.int32, gp.float64):
        x = gp.astype(gp.asarray(r, device=device), d)
        ref = np.asarray(gp.astype(x, gp.float64))
        for fn in ("fft", "rfft", "irfft", "hfft"):
            got = getattr(gp.fft, fn)(x)
            assert got.dtype == getattr(gp.fft, fn)(gp.astype(cpu, d)).dtype, (d, fn)
            tol = 1e-2 if d is gp.bfloat16 and fn in ("irfft", "hfft") else 2e-6
            got = gp.astype(got, gp.float64 if got.dtype.kind == "f" else gp.complex128)
            _check(got, getattr(np.fft, fn)(ref).astype(complex), tol)


def test_bfloat16_to_complex(device):
    """astype / assignment of bfloat16 into complex (fft's input by hand): the Vulkan backend
    had no such cast shader (NotImplementedError); the cpu backend's values."""
    r = gp.astype(gp.asarray(R.standard_normal((2, 5)).astype(np.float32)), gp.bfloat16)
    ref = np.asarray(gp.astype(r, gp.float64))
    x = gp.astype(gp.asarray(ref.astype(np.float32), device=device), gp.bfloat16)
    for d in (gp.complex64, gp.complex128):
        _check(gp.astype(x[:, ::-2], d), ref[:, ::-2].astype(complex), 0)
    c = gp.zeros((3, 2, 5), dtype=gp.complex64, device=device)
    c[...] = x
    _check(c, np.broadcast_to(ref, (3, 2, 5)).astype(complex), 0)
    _check(gp.fft.fft(gp.astype(x, gp.complex64)), np.fft.fft(ref))


def test_gradients_against_torch(device):
    torch = pytest.importorskip("torch")
    r = R.standard_normal((3, 6)).astype(np.float32)
    c = _cx((3, 6))

    def loss(m, fn, **kw):
        def f(x):
            y = getattr(m.fft, fn)(x, **kw)
            cplx = y.is_complex() if m is torch else y.dtype.kind == "c"
            return m.sum(m.abs(y) ** 2 * m.real(y)) if cplx else m.sum(y ** 3)
        return f

    for fn, kw, x in [("fft", {"n": 9}, r), ("fft", {"norm": "ortho"}, c), ("rfft", {"n": 11}, r),
                      ("irfft", {"n": 7}, c), ("fftn", {"s": (4, 8)}, r),
                      ("hfft", {"n": 5, "norm": "forward"}, c), ("ifft", {"dim": 0}, c)]:
        g = GF.grad(loss(gp, fn, **kw))(gp.asarray(x, device=device))
        t = torch.func.grad(loss(torch, fn, **kw))(torch.tensor(x))
        _check(g, t.resolve_conj().numpy().astype(np.complex128), 2e-6)
    v = R.standard_normal(5).astype(np.float32)
    for fn, kw in [("rfft", {"n": 6}), ("hfft", {"n": 7})]:
        h = GF.hessian(loss(gp, fn, **kw))(gp.asarray(v, device=device))
        t = torch.func.hessian(loss(torch, fn, **kw))(torch.tensor(v))
        _check(h, t.numpy().astype(np.float64), 2e-6)


def test_jit_replay(device):
    @gp.jit
    def f(x, y):
        return gp.fft.irfft(gp.fft.fft(x, n=12) * gp.fft.rfft(y, n=22)[..., :12], n=20)

    for _ in range(3):   # the trace, then replays with fresh inputs
        x, y = _cx((2, 10)), R.standard_normal((2, 10)).astype(np.float32)
        want = np.fft.irfft(np.fft.fft(x.astype(complex), n=12)
                            * np.fft.rfft(y.astype(float), n=22)[..., :12], n=20)
        # (the cpu backend's transforms are host-path kernels, scipy's: replayed as host ops)
        got = f(gp.asarray(x, device=device), gp.asarray(y, device=device))
        _check(got, want)


def test_threads_and_no_round_trips(device):
    errors = []

    def worker(k):
        for n in (7, 33, 64, 129, 1000)[k % 2::2]:
            x = _cx((2, n))
            try:
                _check(gp.fft.fft(gp.asarray(x, device=device)), np.fft.fft(x.astype(complex)))
            except Exception as e:   # (reported by the main thread)
                errors.append((k, n, e))

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    if not str(device).startswith("vulkan"):
        return   # (the cpu backend's transforms are scipy's: host round trips by design)
    a = gp.asarray(_cx((3, 37)), device=device)
    before = gp.device_stats(device)["host_round_trips"]
    for fn in ("fft", "ifft", "fftn", "irfft", "hfft", "irfft2", "fftshift", "hfftn"):
        getattr(gp.fft, fn)(a)
    for fn in ("rfft", "rfftn", "ihfft", "ihfftn"):
        getattr(gp.fft, fn)(gp.real(a))
    gp.fft.fft(gp.flip(a, axis=-1)[::2])
    assert gp.device_stats(device)["host_round_trips"] == before
