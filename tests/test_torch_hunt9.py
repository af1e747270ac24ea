"""A PyTorch user's top-level calls (``torch.index_select(x, 0, i)``, ``torch.cdist``,
``torch.conv2d``, ``torch.std_mean``, ``torch.block_diag``...) and the torch.Tensor methods they
also type (``x.unflatten``, ``x.take_along_dim``, ``x.index_reduce``, ``x.slice_scatter``...), as
``gp.<name>`` and Array methods, against torch 2.13 on every device: values, dtypes and float64
gradients. Each was missing (AttributeError) before grilly/torch_toplevel.py and
grilly/array/torch_methods_extra.py; ``gp.trapezoid(dim=)``, ``gp.rot90(dims=)`` and
``gp.split(x, size, dim=)`` took only NumPy's keywords.
"""
import numpy as np
import pytest

import grilly as gp
from grilly.testing import assert_close

torch = pytest.importorskip("torch")

_RS = np.random.RandomState(0)
A = _RS.randn(3, 4)
B = _RS.randn(3, 4)
C = _RS.randn(3, 4)
V4 = _RS.randn(4)
M34 = _RS.randn(3, 4)
M45 = _RS.randn(4, 5)
X3 = _RS.randn(2, 3, 4)
I_ROW = np.array([2, 0, 2])
IDX = np.array([[0, 2, 1, 0], [1, 1, 0, 2], [2, 0, 0, 1]])


class Idx:
    """An integer array argument (no gradient)."""

    def __init__(self, a):
        self.a = np.asarray(a)


class Const:
    """A float array argument that does not require grad (running statistics)."""

    def __init__(self, a):
        self.a = np.asarray(a, np.float64)


class Bool:
    def __init__(self, a):
        self.a = np.asarray(a, bool)


def _g(a, device, grad):
    if isinstance(a, (Idx, Bool, Const)):
        return gp.asarray(a.a, device=device)
    x = gp.asarray(np.asarray(a, np.float64), device=device)
    return x.requires_grad_() if grad else x


def _t(a, grad):
    if isinstance(a, (Idx, Bool, Const)):
        return torch.tensor(a.a)
    return torch.tensor(np.asarray(a, np.float64), requires_grad=grad)


def _leaves(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


def _check(device, fn_g, fn_t, args, kw=None, grad=True, tol=1e-9):
    """fn_g(grilly args) equals fn_t(torch args): values, dtypes and the gradient of a weighted
    sum of the floating outputs with respect to each float array argument."""
    kw = kw or {}
    arr = [isinstance(a, (np.ndarray, Idx, Bool, Const)) for a in args]
    fl = [isinstance(a, np.ndarray) for a in args]
    ga = [_g(a, device, grad and f) if m else a for a, m, f in zip(args, arr, fl)]
    ta = [_t(a, grad and f) if m else a for a, m, f in zip(args, arr, fl)]
    go, to = _leaves(fn_g(*ga, **kw)), _leaves(fn_t(*ta, **kw))
    assert len(go) == len(to)
    for g, t in zip(go, to):
        assert g.shape == tuple(t.shape)
        assert str(g.dtype).rsplit(".", 1)[-1] == str(t.dtype).rsplit(".", 1)[-1]
        assert_close(g, t.detach().numpy(), rtol=tol, atol=tol)
    if not grad:
        return
    rs = np.random.RandomState(1)
    lg = lt = 0
    for g, t in zip(go, to):
        if t.dtype.is_floating_point and t.requires_grad:
            w = np.asarray(rs.randn(*t.shape), np.float64)
            lg = lg + gp.sum(g * gp.asarray(w, device=device))
            lt = lt + (t * torch.tensor(w)).sum()
    if isinstance(lt, int):
        return
    try:
        lt.backward()
    except RuntimeError as e:   # (torch 2.11, the GPU machine's: no aminmax/narrow_copy rule)
        if "derivative for" not in str(e):
            raise
        return
    lg.backward()
    for g, t, f in zip(ga, ta, fl):
        if f:
            want = t.grad.numpy() if t.grad is not None else np.zeros(t.shape)
            got = g.grad if g.grad is not None else np.zeros(t.shape)
            assert_close(got, want, rtol=1e-7, atol=1e-9)


def _top(name):
    return getattr(gp, name), getattr(torch, name)


# (name, args, kwargs): gp.<name>(*args) against torch.<name>(*args)
TOP = [
    ("addcmul", [A, B, C], {"value": 0.5}),
    ("addcdiv", [A, B, C + 5], {"value": 2}),
    ("index_select", [A, 1, Idx([3, 0, 3])], {}),
    ("masked_fill", [A, Bool(A > 0), -1.5], {}),
    ("narrow", [X3, 2, 1, 2], {}),
    ("permute", [X3, (2, 0, 1)], {}),
    ("movedim", [X3, 0, -1], {}),
    ("t", [A], {}),
    ("clone", [A], {}),
    ("div", [A, B + 3], {"rounding_mode": "floor"}),
    ("div", [A, B + 3], {"rounding_mode": "trunc"}),
    ("mul", [A, B], {}),
    ("sub", [A, B], {"alpha": 2}),
    ("rsub", [A, B], {"alpha": 3}),
    ("neg", [A], {}),
    ("rsqrt", [np.abs(A) + 1], {}),
    ("lerp", [A, B, 0.3], {}),
    ("kthvalue", [A, 2, 1], {}),
    ("cummax", [A, 1], {}),
    ("cummin", [A, 0], {}),
    ("logcumsumexp", [A, 1], {}),
    ("repeat_interleave", [A, 2], {"dim": 0}),
    ("tensor_split", [X3, 3], {"dim": 2}),
    ("take_along_dim", [A, Idx(IDX)], {"dim": 1}),
    ("take_along_dim", [A, Idx([[1, 0]])], {"dim": 1}),   # broadcast over dim 0
    ("take_along_dim", [A, Idx([5, 0, 11])], {}),
    ("split_with_sizes", [A, [1, 3]], {"dim": 1}),
    ("scatter_reduce", [A, 1, Idx(IDX), B, "amax"], {"include_self": False}),
    ("index_add", [A, 0, Idx(I_ROW), B], {"alpha": 2}),
    ("index_copy", [A, 0, Idx([2, 0, 1]), B], {}),
    ("index_fill", [A, 1, Idx([0, 3]), 2.5], {}),
    ("index_reduce", [A, 0, Idx(I_ROW), B, "prod"], {}),
    ("index_reduce", [A, 0, Idx(I_ROW), B, "mean"], {"include_self": False}),
    ("index_reduce", [A, 1, Idx([3, 3, 0, 1]), B, "amin"], {}),
    ("diag_embed", [A, 1], {}),
    ("dist", [A, B], {}),
    ("dist", [A, B, 3.0], {}),
    ("cdist", [M34, B[:2]], {}),
    ("cdist", [X3, X3[:, :2] + 1], {"p": 1.0}),
    ("pdist", [M34], {}),
    ("cosine_similarity", [A, B], {"dim": 1}),
    ("pairwise_distance", [A, B], {}),
    ("block_diag", [A[:2, :3], V4, np.array(2.0)], {}),
    ("broadcast_tensors", [A, V4, np.array(1.5)], {}),
    ("cartesian_prod", [V4[:2], V4[:3]], {}),
    ("combinations", [V4], {"r": 2}),
    ("combinations", [V4[:3]], {"r": 2, "with_replacement": True}),
    ("combinations", [V4[:3]], {"r": 4}),
    ("std_mean", [A], {"dim": 1}),
    ("var_mean", [A], {"dim": 0, "correction": 0, "keepdim": True}),
    ("std_mean", [A], {}),
    ("aminmax", [A], {"dim": 1}),
    ("unflatten", [A, 1, (2, -1)], {}),
    ("renorm", [A, 2, 0, 1.0], {}),
    ("renorm", [A, 1, 1, 2.0], {}),
    ("slice_scatter", [A, B[:, :2]], {"dim": 1, "start": 1, "end": 4, "step": 2}),
    ("select_scatter", [A, V4, 0, 1], {}),
    ("diagonal_scatter", [A, V4[:3]], {}),
    ("diagonal_scatter", [A, V4[:3]], {"offset": 1}),
    ("diagonal_scatter", [X3, X3[0, :2, :3]], {"offset": -1, "dim1": 2, "dim2": 1}),
    ("clamp_min", [A, 0.1], {}),
    ("clamp_max", [A, 0.1], {}),
    ("rot90", [A, 1], {"dims": [0, 1]}),
    ("trapezoid", [A], {"dim": 0}),
    ("trapezoid", [A, V4 + 10], {"dim": 1}),
    ("cumulative_trapezoid", [A], {"dim": 0}),
    ("cumulative_trapezoid", [A], {"dx": 0.5}),
    ("trapz", [A], {"dim": 1}),
    ("chain_matmul", [M34, M45, M45.T], {}),
    ("logdet", [np.eye(3) * 2 + 0.1 * M34[:, :3]], {}),
    ("polar", [np.abs(V4), V4], {}),
    ("complex", [V4, V4[::-1].copy()], {}),
    ("selu", [A], {}),
    ("rrelu", [A, 0.1, 0.3], {}),
    ("celu", [A, 0.7], {}),
    ("hardshrink", [A, 0.3], {}),
    ("prelu", [A[None], np.array([0.2, 0.3, 0.4])], {}),
    ("rms_norm", [A, [4]], {"eps": 1e-6}),
    ("layer_norm", [A, [4], V4, V4 + 1], {}),
    ("group_norm", [X3, 1, V4[:3], V4[1:]], {}),
    ("conv1d", [X3, _RS.randn(2, 3, 2)], {"padding": 1}),
    ("conv2d", [X3[None], _RS.randn(2, 2, 2, 2)], {"stride": 1}),
    ("pixel_shuffle", [_RS.randn(1, 4, 2, 3), 2], {}),
    ("max_pool1d", [X3, 2], {}),
    ("adaptive_max_pool1d", [X3, 2], {}),
    ("unique_consecutive", [np.array([1.0, 1, 2, 2, 3, 1, 1])],
     {"return_inverse": True, "return_counts": True}),
    ("unique_consecutive", [np.array([[1.0, 1, 2], [1, 1, 2], [0, 1, 2]])],
     {"dim": 0, "return_counts": True}),
]
NOGRAD = {"kthvalue", "cummax", "cummin", "unique_consecutive", "div", "complex", "polar"}


@pytest.mark.parametrize("name,args,kw", TOP, ids=[f"{c[0]}{i}" for i, c in enumerate(TOP)])
def test_top_level(device, name, args, kw):
    g, t = _top(name)
    grad = name not in NOGRAD
    _check(device, g, t, args, kw, grad=grad)


METHODS = [
    ("unflatten", [X3, -1, (2, 2)], {}),
    ("take_along_dim", [A, Idx(IDX), 1], {}),
    ("split_with_sizes", [X3, [2, 1]], {"dim": 1}),
    ("index_reduce", [A, 1, Idx([1, 1, 3, 0]), B, "amax"], {"include_self": False}),
    ("slice_scatter", [A, B[1:]], {"start": 1}),
    ("renorm", [X3, 2, 1, 1.5], {}),
    ("aminmax", [A], {}),
    ("sum_to_size", [X3, 3, 1], {}),
    ("sum_to_size", [X3, (1, 1, 4)], {}),
    ("narrow_copy", [A, 1, 1, 2], {}),
    ("dist", [A, V4, 1], {}),
    ("adjoint", [X3], {}),
    ("broadcast_to", [V4, (3, 4)], {}),
    ("divide", [A, B + 3], {"rounding_mode": None}),
    ("cross", [A[:, :3], B[:, :3]], {"dim": 1}),
    ("conj", [A], {}),
    ("hsplit", [A, 2], {}),
    ("resolve_neg", [A], {}),
]


@pytest.mark.parametrize("name,args,kw", METHODS, ids=[f"{c[0]}{i}" for i, c in
                                                       enumerate(METHODS)])
def test_methods(device, name, args, kw):
    _check(device, lambda x, *a, **k: getattr(x, name)(*a, **k),
           lambda x, *a, **k: getattr(x, name)(*a, **k), args, kw)


def test_histc(device):
    x = np.array([0.0, 0.5, 1.0, 1.0, 2.5, 3.0, -1.0, 7.0])
    for kw in ({"bins": 4}, {"bins": 3, "min": 0, "max": 3}, {"bins": 5, "min": 1, "max": 1}):
        _check(device, gp.histc, torch.histc, [x], kw, grad=False)
        _check(device, lambda a, **k: a.histc(**k), lambda a, **k: a.histc(**k), [x], kw,
               grad=False)
    with pytest.raises(TypeError, match="histc"):
        gp.histc(gp.asarray([1, 2], device=device))


def test_int_and_bool_results(device):
    a = gp.asarray(A, device=device)
    for op in ("eq", "ne", "gt", "ge", "lt", "le"):
        _check(device, getattr(gp, op), getattr(torch, op), [A, B], grad=False)
    _check(device, gp.bucketize, torch.bucketize, [A, np.array([-1.0, 0, 1])], grad=False)
    _check(device, gp.bucketize, torch.bucketize, [A, np.array([-1.0, 0, 1])],
           {"right": True, "out_int32": True}, grad=False)
    _check(device, gp.repeat_interleave, torch.repeat_interleave, [Idx([2, 0, 3])], grad=False)
    _check(device, gp.div, torch.div, [Idx([7, -7, 5]), 2], {"rounding_mode": "trunc"},
           grad=False)
    assert gp.is_floating_point(a) and not gp.is_complex(a) and gp.numel(a) == 12
    assert gp.is_nonzero(gp.asarray([2.0], device=device))
    assert gp.is_same_size(a, gp.asarray(B, device=device))
    g = gp.split(a, 3, dim=1)
    want = torch.split(torch.tensor(A), 3, dim=1)
    assert [tuple(p.shape) for p in g] == [tuple(p.shape) for p in want]
    assert gp.get_default_dtype() == gp.float32
    assert not hasattr(gp, "range")   # (it would shadow Python's under from grilly import *)


def test_reordered_functional(device):
    """torch's top-level batch_norm/instance_norm/embedding/dropout take another order than
    grilly.nn.functional's."""
    x = _RS.randn(4, 3)
    mean, var = np.zeros(3), np.ones(3) * 2
    w, b = V4[:3], V4[1:]
    for training in (False, True):
        _check(device, gp.batch_norm, torch.batch_norm,
               [x, w, b, Const(mean), Const(var), training, 0.1, 1e-5, False], grad=training)
    x3 = _RS.randn(2, 3, 5)
    _check(device, gp.instance_norm, torch.instance_norm,
           [x3, w, b, None, None, True, 0.1, 1e-5, False])
    _check(device, gp.embedding, torch.embedding, [M45, Idx([[0, 3], [1, 1]]), 1])
    a = gp.asarray(A, device=device)
    assert_close(gp.dropout(a, 0.5, False), A)
    assert_close(gp.alpha_dropout(a, 0.5, False), A)
    with pytest.raises(TypeError, match="dropout"):
        gp.dropout(a, 0.5)


def test_errors(device):
    a = gp.asarray(A, device=device)
    with pytest.raises(TypeError, match="index_select"):
        gp.index_select(A, 0, gp.asarray([0]))
    with pytest.raises(NotImplementedError, match="out="):
        gp.mul(a, 2, out=a)
    with pytest.raises(ValueError, match="unflatten"):
        a.unflatten(1, (3, -1))
    with pytest.raises(ValueError, match="sum_to_size"):
        a.sum_to_size(2, 4)
    with pytest.raises(ValueError, match="split_with_sizes"):
        a.split_with_sizes([1, 2], 1)
    with pytest.raises(ValueError, match="slice_scatter"):
        a.slice_scatter(gp.asarray(B, device=device), 1, 0, 2)
    with pytest.raises(ValueError, match="index_reduce"):
        a.index_reduce(0, gp.asarray([0], device=device), a, "sum")
    with pytest.raises(ValueError, match="cdist"):
        gp.cdist(a, gp.asarray(M45, device=device))
    with pytest.raises(TypeError, match="complex"):
        gp.complex(a, gp.astype(a, gp.float32))
    with pytest.raises(TypeError, match="set_default_dtype"):
        gp.set_default_dtype(gp.int32)
    gp.set_default_dtype(gp.float32)


def test_no_numpy_name_overridden():
    """The new top-level names never replace a NumPy name of the namespace."""
    import grilly.array.api as api
    from grilly import torch_toplevel
    assert not set(torch_toplevel.__all__) & set(dir(api))


# torch's keywords (or call forms NumPy cannot mean) on names NumPy also has: torch's meaning
NUMPY_NAMES = [
    ("transpose", [X3, 0, 2], {}),
    ("diff", [A], {"dim": 0}),
    ("flip", [X3], {"dims": [0, 2]}),
    ("roll", [A], {"shifts": 1, "dims": 1}),
    ("roll", [A, (1, -1)], {"dims": (0, 1)}),
    ("cross", [A[:, :3], B[:, :3]], {"dim": 1}),
    ("tensordot", [A, B.T], {"dims": 1}),
    ("tensordot", [X3, A], {"dims": ([1, 2], [0, 1])}),
    ("cumprod", [A], {"dim": 1}),
    ("diagonal", [X3], {"offset": 1, "dim1": 2, "dim2": 1}),
    ("max", [A, B], {}),
    ("min", [A, B], {}),
]


@pytest.mark.parametrize("name,args,kw", NUMPY_NAMES, ids=[f"{c[0]}{i}" for i, c in
                                                           enumerate(NUMPY_NAMES)])
def test_torch_keywords_on_numpy_names(device, name, args, kw):
    _check(device, getattr(gp, name), getattr(torch, name), args, kw)


def test_torch_keywords_on_numpy_names_lists(device):
    for name in ("concat", "concatenate", "cat"):
        _check(device, lambda a, b: getattr(gp, name)([a, b], dim=1),
               lambda a, b: getattr(torch, name)([a, b], dim=1), [A, B])
    _check(device, lambda x: gp.nonzero(x, as_tuple=False),
           lambda x: torch.nonzero(x, as_tuple=False), [Bool(A > 0)], grad=False)
    seq = np.array([-1.0, 0, 1])
    _check(device, lambda s, v: gp.searchsorted(s, v, right=True, out_int32=True),
           lambda s, v: torch.searchsorted(s, v, right=True, out_int32=True), [seq, A],
           grad=False)
    _check(device, lambda s: gp.searchsorted(s, 0.0, right=False),
           lambda s: torch.searchsorted(s, 0.0, right=False), [seq], grad=False)
    rows = np.array([[1.0, 0, 2], [0, 1, 1], [1, 0, 2], [0, 1, 0]])
    for d in (0, 1):
        _check(device, lambda x: gp.unique(x, dim=d, return_inverse=True, return_counts=True),
               lambda x: torch.unique(x, dim=d, return_inverse=True, return_counts=True),
               [rows], grad=False)
    # an N-D sorted sequence (row by row), and einsum's operands in one list
    seq2 = np.sort(_RS.randn(2, 5), axis=1)
    _check(device, gp.searchsorted, torch.searchsorted, [seq2, A[:2]], grad=False)
    _check(device, lambda s, v: gp.searchsorted(s, v, right=True),
           lambda s, v: torch.searchsorted(s, v, right=True), [seq2, seq2[:, :3]], grad=False)
    _check(device, lambda a, b: gp.einsum("ij,kj->ik", [a, b]),
           lambda a, b: torch.einsum("ij,kj->ik", [a, b]), [A, B])
    # NumPy's meaning without torch's keywords
    a = gp.asarray(A, device=device)
    assert_close(gp.max(a, 1), A.max(1))
    assert len(gp.nonzero(a > 0)) == 2


def test_zero_rotation_and_padding_keep_the_graph(device):
    """torch.rot90(x, k) for k = 0 (mod 4), and a zero-width pad, still pass the gradient
    (they returned a detached copy); so does an empty take."""
    for k in (0, 4):
        _check(device, gp.rot90, torch.rot90, [A, k], {"dims": [0, 1]})
    _check(device, lambda x: gp.pad(x, 0) * 2, lambda x: torch.nn.functional.pad(x, (0, 0)) * 2,
           [A])
    # an empty index's gradient (take's scatter-add reshaped (0, -1), a ValueError)
    _check(device, lambda x, i: gp.take(x, i, axis=0), lambda x, i: torch.index_select(x, 0, i),
           [A, Idx(np.zeros(0, np.int64))])


def test_num_threads():
    n = gp.get_num_threads()
    assert n >= 1
    gp.set_num_threads(1)
    assert gp.get_num_threads() == 1
    gp.set_num_threads(n)
    with pytest.raises(ValueError, match="set_num_threads"):
        gp.set_num_threads(0)
