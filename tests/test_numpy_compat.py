"""NumPy's functions in the grilly namespace (grilly/array/numpy_compat.py, numpy_stats.py)
against numpy on every device: values, shapes, dtypes, errors, and a few gradients."""
import numpy as np
import pytest

import grilly as gp
from grilly.autograd import gradcheck
from grilly.testing import assert_close

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning", "ignore::DeprecationWarning")

RNG = np.random.default_rng(0)
A = RNG.standard_normal((3, 4))
B = RNG.standard_normal((3, 4))
V = RNG.standard_normal(5)
C3 = RNG.standard_normal((2, 3, 4))
IM = np.array([[3, 1, 2], [0, 5, 4]], dtype=np.int64)
N = np.array([[1.0, np.nan, 3.0, 0.5], [np.nan, np.nan, np.nan, np.nan],
              [2.0, -1.0, np.nan, 4.0]])
SQ = RNG.standard_normal((4, 4))
D3 = RNG.standard_normal((2, 4, 3))


def _g(h, device):
    return gp.asarray(h, device=device)


def _cmp(got, want, rtol=None, atol=0.0):
    if isinstance(want, (tuple, list)):
        assert isinstance(got, (tuple, list)) and len(got) == len(want), (got, want)
        for g, w in zip(got, want):
            _cmp(g, w, rtol, atol)
        return
    if isinstance(want, (bool, np.bool_)) or not isinstance(got, gp.Array):
        assert got == want, (got, want)
        return
    assert_close(got, np.asarray(want), rtol=rtol, atol=atol)


# name -> (function of a namespace (numpy or grilly) and a converter to its arrays)
CASES = {
    # aliases
    "concatenate": lambda ns, c: ns.concatenate([c(A), c(B)], 1),
    "concatenate_none": lambda ns, c: ns.concatenate((c(A), c(B)), axis=None),
    "transpose": lambda ns, c: ns.transpose(c(C3), (1, 0, 2)),
    "transpose_default": lambda ns, c: ns.transpose(c(C3)),
    "absolute": lambda ns, c: ns.absolute(c(A)),
    "fabs_int": lambda ns, c: ns.fabs(c(IM)),
    "arccos": lambda ns, c: ns.arccos(c(A / 4)),
    "arctan2": lambda ns, c: ns.arctan2(c(A), c(B)),
    "arcsinh": lambda ns, c: ns.arcsinh(c(A)),
    "power": lambda ns, c: ns.power(c(IM), 2),
    "mod": lambda ns, c: ns.mod(c(A), 0.7),
    "true_divide": lambda ns, c: ns.true_divide(c(A), c(B)),
    "invert": lambda ns, c: ns.invert(c(IM)),
    "bitwise_not": lambda ns, c: ns.bitwise_not(c(IM)),
    "left_shift": lambda ns, c: ns.left_shift(c(IM), 2),
    "right_shift": lambda ns, c: ns.right_shift(c(IM), 1),
    "conjugate": lambda ns, c: ns.conjugate(c(A + 2j * B)),
    "cumsum": lambda ns, c: ns.cumsum(c(A)),
    "cumsum_axis": lambda ns, c: ns.cumsum(c(A), 1),
    "cumprod": lambda ns, c: ns.cumprod(c(IM)),
    "amax": lambda ns, c: ns.amax(c(A), 0),
    "amin": lambda ns, c: ns.amin(c(A), axis=1, keepdims=True),
    "ravel": lambda ns, c: ns.ravel(c(C3)),
    "swapaxes": lambda ns, c: ns.swapaxes(c(C3), 0, -1),
    "degrees": lambda ns, c: ns.degrees(c(A)),
    "radians_int": lambda ns, c: ns.radians(c(IM)),
    "deg2rad": lambda ns, c: ns.deg2rad(c(A)),
    "rad2deg": lambda ns, c: ns.rad2deg(c(A)),
    "rint": lambda ns, c: ns.rint(c(np.array([0.5, 1.5, -2.5, 2.6]))),
    "rint_int": lambda ns, c: ns.rint(c(IM)),
    "fix": lambda ns, c: ns.fix(c(A * 3)),
    "fix_int": lambda ns, c: ns.fix(c(IM)),
    "around": lambda ns, c: ns.around(c(A * 10), 1),
    "around_neg": lambda ns, c: ns.around(c(A * 1000), -2),
    "copy": lambda ns, c: ns.copy(c(A)),
    # manipulation
    "atleast_1d": lambda ns, c: ns.atleast_1d(c(np.float64(2.0))),
    "atleast_2d": lambda ns, c: ns.atleast_2d(c(V), c(A)),
    "atleast_3d": lambda ns, c: ns.atleast_3d(c(V), c(A), c(np.float64(1))),
    "hstack": lambda ns, c: ns.hstack([c(A), c(B)]),
    "hstack_1d": lambda ns, c: ns.hstack((c(V), c(V))),
    "vstack": lambda ns, c: ns.vstack([c(A[0]), c(B)]),
    "dstack": lambda ns, c: ns.dstack([c(A), c(B)]),
    "column_stack": lambda ns, c: ns.column_stack([c(A[:, 0]), c(B)]),
    "split": lambda ns, c: ns.split(c(A), 2, axis=1),
    "split_idx": lambda ns, c: ns.split(c(A), [1, 3], axis=1),
    "array_split": lambda ns, c: ns.array_split(c(V), 3),
    "hsplit": lambda ns, c: ns.hsplit(c(A), 4),
    "vsplit": lambda ns, c: ns.vsplit(c(A), [1]),
    "dsplit": lambda ns, c: ns.dsplit(c(C3), 2),
    "append": lambda ns, c: ns.append(c(A), c(B)),
    "append_axis": lambda ns, c: ns.append(c(A), c(B), axis=0),
    "append_scalar": lambda ns, c: ns.append(c(V), 5.0),
    "insert_scalar": lambda ns, c: ns.insert(c(A), 1, 9.0, axis=1),
    "insert_seq": lambda ns, c: ns.insert(c(A), [1, 3, 1], c(np.array([7.0, 8.0, 9.0])), axis=1),
    "insert_row": lambda ns, c: ns.insert(c(A), 2, c(np.arange(4.0)), axis=0),
    "insert_flat": lambda ns, c: ns.insert(c(V), -1, 0.5),
    "insert_slice": lambda ns, c: ns.insert(c(V), slice(0, 4, 2), 0.5),
    "delete": lambda ns, c: ns.delete(c(A), [0, 2], axis=1),
    "delete_flat": lambda ns, c: ns.delete(c(A), slice(1, 8, 3)),
    "delete_neg": lambda ns, c: ns.delete(c(V), -1),
    "rot90": lambda ns, c: ns.rot90(c(C3)),
    "rot90_k3": lambda ns, c: ns.rot90(c(C3), 3, axes=(1, 2)),
    "rot90_k2": lambda ns, c: ns.rot90(c(A), -2),
    "fliplr": lambda ns, c: ns.fliplr(c(A)),
    "flipud": lambda ns, c: ns.flipud(c(A)),
    "rollaxis": lambda ns, c: ns.rollaxis(c(C3), 2),
    "rollaxis_start": lambda ns, c: ns.rollaxis(c(C3), 0, 3),
    "resize": lambda ns, c: ns.resize(c(V), (3, 4)),
    "resize_small": lambda ns, c: ns.resize(c(A), (2,)),
    "block": lambda ns, c: ns.block([[c(A), c(B)], [c(B), c(A)]]),
    "block_1d": lambda ns, c: ns.block([c(V), c(V[:2])]),
    "block_mixed": lambda ns, c: ns.block([[c(A[:, :1]), c(B[:, 1:])], [c(V[:4])]]),
    "trim_zeros": lambda ns, c: ns.trim_zeros(c(np.array([0.0, 0, 1, 2, 0, 3, 0]))),
    "trim_zeros_f": lambda ns, c: ns.trim_zeros(c(np.array([0, 0, 1, 2, 0])), "f"),
    "tile": lambda ns, c: ns.tile(c(A), (2, 1)),
    # linear algebra and comparisons
    "dot_11": lambda ns, c: ns.dot(c(V), c(V)),
    "dot_22": lambda ns, c: ns.dot(c(A), c(B.T)),
    "dot_21": lambda ns, c: ns.dot(c(A), c(B[0])),
    "dot_12": lambda ns, c: ns.dot(c(A[:, 0]), c(B)),
    "dot_nd": lambda ns, c: ns.dot(c(C3), c(D3)),
    "dot_scalar": lambda ns, c: ns.dot(c(A), 2.0),
    "vdot": lambda ns, c: ns.vdot(c(A + 1j * B), c(B - 1j * A)),
    "inner": lambda ns, c: ns.inner(c(C3), c(A)),
    "outer": lambda ns, c: ns.outer(c(A), c(V)),
    "kron": lambda ns, c: ns.kron(c(A[:2, :2]), c(C3[:, :2])),
    "cross": lambda ns, c: ns.cross(c(A[:, :3]), c(B[:, :3])),
    "cross_axis": lambda ns, c: ns.cross(c(A[:3]), c(B[:3]), axis=0),
    "cross_2": lambda ns, c: _cross(ns, c(A[:, :2]), c(B[:, :2])),
    "cross_23": lambda ns, c: _cross(ns, c(A[:, :2]), c(B[:, :3])),
    "trace": lambda ns, c: ns.trace(c(A)),
    "trace_nd": lambda ns, c: ns.trace(c(C3), 1, 0, 2),
    "trace_int": lambda ns, c: ns.trace(c(IM)),
    "diagonal": lambda ns, c: ns.diagonal(c(C3), -1, 2, 1),
    "diag_make": lambda ns, c: ns.diag(c(V), 2),
    "diag_make_neg": lambda ns, c: ns.diag(c(V), -1),
    "diag_take": lambda ns, c: ns.diag(c(A), 1),
    "diagflat": lambda ns, c: ns.diagflat(c(A[:2, :2]), -1),
    "allclose": lambda ns, c: ns.allclose(c(A), c(A + 1e-9)),
    "allclose_no": lambda ns, c: ns.allclose(c(A), c(B)),
    "isclose": lambda ns, c: ns.isclose(c(np.array([1.0, np.inf, np.nan, 1e-9, -np.inf])),
                                        c(np.array([1.0 + 1e-6, np.inf, np.nan, 0.0, np.inf]))),
    "isclose_nan": lambda ns, c: ns.isclose(c(np.array([np.nan, 1.0])), c(np.array([np.nan, 2.0])),
                                            equal_nan=True, atol=1.0, rtol=0),
    "isclose_int": lambda ns, c: ns.isclose(c(IM), c(IM + 1), atol=1),
    "array_equal": lambda ns, c: ns.array_equal(c(A), c(A.copy())),
    "array_equal_shape": lambda ns, c: ns.array_equal(c(A), c(A[:2])),
    "array_equal_nan": lambda ns, c: ns.array_equal(c(N), c(N), equal_nan=True),
    "array_equiv": lambda ns, c: ns.array_equiv(c(A[:1]), c(np.repeat(A[:1], 3, 0))),
    "array_equiv_no": lambda ns, c: ns.array_equiv(c(A), c(V)),
    # statistics
    "average": lambda ns, c: ns.average(c(A), axis=1, weights=c(np.arange(1.0, 5.0))),
    "average_returned": lambda ns, c: ns.average(c(A), axis=0, returned=True),
    "average_full_w": lambda ns, c: ns.average(c(A), weights=c(np.abs(B)), returned=True),
    "average_int": lambda ns, c: ns.average(c(IM)),
    "ptp": lambda ns, c: ns.ptp(c(A), axis=1),
    "median": lambda ns, c: ns.median(c(A), axis=1),
    "median_all": lambda ns, c: ns.median(c(C3)),
    "median_keep": lambda ns, c: ns.median(c(C3), axis=(0, 2), keepdims=True),
    "median_nan": lambda ns, c: ns.median(c(N), axis=1),
    "quantile": lambda ns, c: ns.quantile(c(A), 0.3, axis=1),
    "quantile_seq": lambda ns, c: ns.quantile(c(C3), [0.1, 0.5, 0.97], axis=-1, keepdims=True),
    "percentile": lambda ns, c: ns.percentile(c(V), 40),
    "percentile_int": lambda ns, c: ns.percentile(c(IM), [25, 50], axis=0),
    "nanmean": lambda ns, c: ns.nanmean(c(N), axis=1),
    "nansum": lambda ns, c: ns.nansum(c(N)),
    "nanprod": lambda ns, c: ns.nanprod(c(N), axis=0),
    "nanmax": lambda ns, c: ns.nanmax(c(N), axis=1),
    "nanmin": lambda ns, c: ns.nanmin(c(N), axis=0),
    "nanargmax": lambda ns, c: ns.nanargmax(c(N[[0, 2]]), axis=1),
    "nanargmin": lambda ns, c: ns.nanargmin(c(N[[0, 2]])),
    "nanvar": lambda ns, c: ns.nanvar(c(N), axis=1, ddof=1),
    "nanstd": lambda ns, c: ns.nanstd(c(N), axis=0),
    "nancumsum": lambda ns, c: ns.nancumsum(c(N), axis=1),
    "nancumprod": lambda ns, c: ns.nancumprod(c(N)),
    "nanmedian": lambda ns, c: ns.nanmedian(c(N), axis=1),
    "nanquantile": lambda ns, c: ns.nanquantile(c(N), [0.2, 0.9], axis=1),
    "nanpercentile": lambda ns, c: ns.nanpercentile(c(N[0]), 75),
    "cov": lambda ns, c: ns.cov(c(A)),
    "cov_rowvar": lambda ns, c: ns.cov(c(A), rowvar=False, bias=True),
    "cov_y": lambda ns, c: ns.cov(c(V), c(V[::-1] ** 2)),
    "cov_1d": lambda ns, c: ns.cov(c(V)),
    "cov_weights": lambda ns, c: ns.cov(c(A), fweights=c(np.array([1, 2, 1, 3])),
                                        aweights=c(np.array([0.5, 1.0, 2.0, 1.0]))),
    "cov_ddof": lambda ns, c: ns.cov(c(A), ddof=2, aweights=c(np.array([0.5, 1.0, 2.0, 1.0]))),
    "corrcoef": lambda ns, c: ns.corrcoef(c(A)),
    "corrcoef_xy": lambda ns, c: ns.corrcoef(c(V), c(V[::-1])),
    "histogram": lambda ns, c: ns.histogram(c(V), 4),
    "histogram_range": lambda ns, c: ns.histogram(c(A), 3, range=(-1.0, 1.0)),
    "histogram_edges": lambda ns, c: ns.histogram(c(A), c(np.array([-2.0, -0.5, 0.0, 3.0]))),
    "histogram_density": lambda ns, c: ns.histogram(c(A), 5, density=True),
    "histogram_weights": lambda ns, c: ns.histogram(c(A), 3, weights=c(B)),
    "bincount": lambda ns, c: ns.bincount(c(np.array([0, 1, 1, 3, 2, 1, 7]))),
    "bincount_w": lambda ns, c: ns.bincount(c(np.array([0, 1, 1, 3])), c(V[:4]), minlength=6),
    "digitize": lambda ns, c: ns.digitize(c(V), c(np.array([-1.0, 0.0, 1.0]))),
    "digitize_right": lambda ns, c: ns.digitize(c(np.array([0.0, 1.0, 2.5])),
                                                c(np.array([2.0, 1.0, 0.0])), right=True),
    "nan_to_num": lambda ns, c: ns.nan_to_num(c(np.array([np.nan, np.inf, -np.inf, 1.0]))),
    "nan_to_num_kw": lambda ns, c: ns.nan_to_num(c(np.array([np.nan, np.inf, -np.inf])),
                                                 nan=-1.0, posinf=9.0, neginf=-9.0),
    "heaviside": lambda ns, c: ns.heaviside(c(np.array([-1.0, 0.0, 2.0, np.nan])), 0.5),
    "fmax": lambda ns, c: ns.fmax(c(np.array([1.0, np.nan, np.nan, 3.0])),
                                  c(np.array([np.nan, 2.0, np.nan, 4.0]))),
    "fmin": lambda ns, c: ns.fmin(c(np.array([1.0, np.nan, np.nan, 3.0])),
                                  c(np.array([np.nan, 2.0, np.nan, 4.0]))),
    "cbrt": lambda ns, c: ns.cbrt(c(A * 10)),
    "exp2": lambda ns, c: ns.exp2(c(A)),
    "logaddexp2": lambda ns, c: ns.logaddexp2(c(A), c(B)),
    "sinc": lambda ns, c: ns.sinc(c(np.array([0.0, 0.5, -1.5, 2.25]))),
    "interp": lambda ns, c: ns.interp(c(np.array([-1.0, 0.0, 0.5, 1.0, 2.5, 3.0, 4.0])),
                                      c(np.array([0.0, 1.0, 3.0])), c(np.array([1.0, 3.0, 2.0]))),
    "interp_lr": lambda ns, c: ns.interp(c(np.array([-1.0, 5.0])), c(np.array([0.0, 1.0])),
                                         c(np.array([1.0, 3.0])), left=-7.0, right=7.0),
    "convolve": lambda ns, c: ns.convolve(c(V), c(V[:3])),
    "convolve_same": lambda ns, c: ns.convolve(c(V), c(V[:4]), "same"),
    "convolve_same_short": lambda ns, c: ns.convolve(c(V[:2]), c(V), "same"),
    "convolve_valid": lambda ns, c: ns.convolve(c(V[:3]), c(V), "valid"),
    "correlate": lambda ns, c: ns.correlate(c(V), c(V[:3])),
    "correlate_full": lambda ns, c: ns.correlate(c(V[:2]), c(V), "full"),
    "correlate_same": lambda ns, c: ns.correlate(c(V), c(V[:4]), "same"),
    "correlate_same_short": lambda ns, c: ns.correlate(c(V[:2]), c(V), "same"),
    "correlate_same_short3": lambda ns, c: ns.correlate(c(V[:3]), c(V[:4]), "same"),
    "gradient": lambda ns, c: ns.gradient(c(V)),
    "gradient_2d": lambda ns, c: ns.gradient(c(A), 0.5, edge_order=2),
    "gradient_axis": lambda ns, c: ns.gradient(c(C3), axis=-1),
    "gradient_coords": lambda ns, c: ns.gradient(c(V), c(np.array([0.0, 0.5, 1.5, 1.7, 3.0]))),
    "gradient_coords2": lambda ns, c: ns.gradient(c(V), c(np.array([0.0, 0.5, 1.5, 1.7, 3.0])),
                                                  edge_order=2),
    "diff": lambda ns, c: ns.diff(c(A), n=2, axis=0),
    "trapezoid": lambda ns, c: ns.trapezoid(c(A)),
    "trapezoid_x": lambda ns, c: ns.trapezoid(c(A), c(np.array([0.0, 0.5, 2.0, 2.5]))),
    "trapezoid_dx": lambda ns, c: ns.trapezoid(c(A), dx=0.1, axis=0),
    "ediff1d": lambda ns, c: ns.ediff1d(c(A), to_end=c(np.array([9.0])), to_begin=-1.0),
    "vander": lambda ns, c: ns.vander(c(V)),
    "vander_inc": lambda ns, c: ns.vander(c(np.array([1, 2, 3])), 4, increasing=True),
    "ix_": lambda ns, c: c(A)[ns.ix_(c(np.array([0, 2])), c(np.array([True, False, True, True])))],
    "unravel_index": lambda ns, c: ns.unravel_index(c(np.array([0, 5, 11])), (3, 4)),
    "ravel_multi_index": lambda ns, c: ns.ravel_multi_index((c(np.array([0, 2])),
                                                             c(np.array([1, 3]))), (3, 4)),
    "ravel_multi_index_wrap": lambda ns, c: ns.ravel_multi_index(
        (c(np.array([5, -1])), c(np.array([1, 9]))), (3, 4), mode=("wrap", "clip")),
    "argwhere": lambda ns, c: ns.argwhere(c(IM > 1)),
    "flatnonzero": lambda ns, c: ns.flatnonzero(c(IM)),
    "lexsort": lambda ns, c: ns.lexsort((c(np.array([1, 5, 1, 4, 3])),
                                         c(np.array([0, 1, 1, 0, 0])))),
    "union1d": lambda ns, c: ns.union1d(c(IM), c(np.array([9, 1, 7]))),
    "intersect1d": lambda ns, c: ns.intersect1d(c(IM), c(np.array([9, 1, 5, 1]))),
    "intersect1d_idx": lambda ns, c: ns.intersect1d(c(np.array([4, 1, 3, 1])),
                                                    c(np.array([3, 9, 1])), return_indices=True),
    "setdiff1d": lambda ns, c: ns.setdiff1d(c(IM), c(np.array([9, 1, 5]))),
    "setxor1d": lambda ns, c: ns.setxor1d(c(IM), c(np.array([9, 1, 5]))),
    "select": lambda ns, c: ns.select([c(A < -0.5), c(A > 0.5)], [c(A), c(B)], -1.0),
    "hamming": lambda ns, c: ns.hamming(7),
    "hanning": lambda ns, c: ns.hanning(6),
    "blackman": lambda ns, c: ns.blackman(5),
    "bartlett": lambda ns, c: ns.bartlett(8),
    "window_1": lambda ns, c: ns.hamming(1),
    "logspace": lambda ns, c: ns.logspace(0.0, 2.0, 5),
    "logspace_base": lambda ns, c: ns.logspace(1, 3, 4, endpoint=False, base=2.0),
    "geomspace": lambda ns, c: ns.geomspace(1.0, 1000.0, 4),
    "geomspace_neg": lambda ns, c: ns.geomspace(-1.0, -16.0, 5),
    "indices": lambda ns, c: ns.indices((2, 3)),
    "indices_sparse": lambda ns, c: ns.indices((2, 3), sparse=True),
    "tri": lambda ns, c: ns.tri(3, 4, 1),
    "tri_int": lambda ns, c: ns.tri(3, dtype=np.int32 if ns is np else gp.int32),
    "identity": lambda ns, c: ns.identity(3),
    "tril_indices": lambda ns, c: ns.tril_indices(3, -1, 4),
    "triu_indices_from": lambda ns, c: ns.triu_indices_from(c(A), 1),
    "diag_indices_from": lambda ns, c: ns.diag_indices_from(c(SQ)),
}

# float32 inputs: results keep float32 as NumPy's do here
CASES_F32 = {
    "median_f32": lambda ns, c: ns.median(c(A.astype(np.float32)), axis=0),
    "quantile_f32": lambda ns, c: ns.quantile(c(A.astype(np.float32)), 0.25),
    "average_f32": lambda ns, c: ns.average(c(A.astype(np.float32)), axis=1,
                                            weights=c(np.arange(1, 5).astype(np.float32))),
    "nanmean_f32": lambda ns, c: ns.nanmean(c(N.astype(np.float32)), axis=1),
    "histogram_f32": lambda ns, c: ns.histogram(c(V.astype(np.float32)), 3),
    "degrees_f32": lambda ns, c: ns.degrees(c(A.astype(np.float32))),
    "pad_f32": lambda ns, c: ns.pad(c(A.astype(np.float32)), 1, constant_values=2.5),
}

PAD = {
    "constant": dict(pad_width=((1, 2), (0, 3))),
    "constant_values": dict(pad_width=2, constant_values=((1.5, 2.5), (-1, -2))),
    "edge": dict(pad_width=((2, 1), (3, 0)), mode="edge"),
    "reflect": dict(pad_width=((2, 3), (1, 7)), mode="reflect"),
    "symmetric": dict(pad_width=((4, 1), (2, 9)), mode="symmetric"),
    "wrap": dict(pad_width=((5, 1), (2, 6)), mode="wrap"),
    "linear_ramp": dict(pad_width=((2, 3), (1, 2)), mode="linear_ramp", end_values=((1, -1), (5, 5))),
    "maximum": dict(pad_width=((1, 2), (2, 1)), mode="maximum"),
    "minimum": dict(pad_width=2, mode="minimum", stat_length=2),
    "mean": dict(pad_width=((1, 1), (2, 3)), mode="mean", stat_length=((1, 2), (3, 4))),
    "one_axis": dict(pad_width=((0, 0), (1, 1)), mode="reflect"),
}


def _cross(ns, a, b):
    """ns.cross; for NumPy, 2-vectors as NumPy 2.0-2.4 took them (as 3-vectors with a zero z,
    two 2-vectors giving the z component): NumPy 2.5 removed them, grilly keeps them."""
    if ns is not np or (a.shape[-1] == 3 and b.shape[-1] == 3):
        return ns.cross(a, b)
    pad = [(0, 0)] * (a.ndim - 1) + [(0, 1)]
    r = np.cross(np.pad(a, pad) if a.shape[-1] == 2 else a,
                 np.pad(b, pad) if b.shape[-1] == 2 else b)
    return r[..., 2] if a.shape[-1] == b.shape[-1] == 2 else r


def _run(fn, device, rtol=None):
    want = fn(np, np.asarray)
    got = fn(gp, lambda h: _g(np.asarray(h), device))
    _cmp(got, want, rtol=rtol, atol=1e-12)


@pytest.mark.parametrize("name", sorted(CASES))
def test_against_numpy(device, name):
    _run(CASES[name], device)


@pytest.mark.parametrize("name", sorted(CASES_F32))
def test_float32_against_numpy(device, name):
    _run(CASES_F32[name], device, rtol=2e-5)


@pytest.mark.parametrize("name", sorted(PAD))
@pytest.mark.parametrize("dtype", ["float64", "int64"])
def test_pad(device, name, dtype):
    h = (A * 10).astype(dtype)
    kw = dict(PAD[name])
    width = kw.pop("pad_width")
    _cmp(gp.pad(_g(h, device), width, **kw), np.pad(h, width, **kw))


def test_quantile_methods(device):
    h = RNG.standard_normal((3, 7))
    for m in ("linear", "lower", "higher", "nearest", "midpoint", "hazen", "weibull",
              "median_unbiased", "normal_unbiased", "interpolated_inverted_cdf"):
        for q in (0.0, 0.13, 0.5, 0.75, 1.0):
            _cmp(gp.quantile(_g(h, device), q, axis=1, method=m),
                 np.quantile(h, q, axis=1, method=m))
        _cmp(gp.nanquantile(_g(N, device), [0.3, 0.5], axis=0, method=m),
             np.nanquantile(N, [0.3, 0.5], axis=0, method=m))
    q = _g(np.array([0.25, 0.8]), device)   # quantiles as an Array: no host read
    _cmp(gp.quantile(_g(h, device), q, axis=0), np.quantile(h, [0.25, 0.8], axis=0))


def test_unique(device):
    h = np.array([[3.0, 1.0, np.nan], [1.0, np.nan, 2.0]])
    x = _g(h, device)
    got = gp.unique(x, return_index=True, return_inverse=True, return_counts=True)
    want = np.unique(h, return_index=True, return_inverse=True, return_counts=True)
    _cmp(got, want)
    _cmp(gp.unique(x, equal_nan=False), np.unique(h, equal_nan=False))
    _cmp(gp.unique(_g(IM, device)), np.unique(IM))
    _cmp(gp.unique(_g(IM, device), axis=0), np.unique(IM, axis=0))   # (tests/test_numpy_hunt4.py)


def test_shape_helpers(device):
    x = _g(C3, device)
    assert gp.ndim(x) == 3 and gp.shape(x) == (2, 3, 4) and gp.size(x) == 24
    assert gp.size(x, -1) == 4 and gp.ndim([[1, 2]]) == 2 and gp.shape(5) == ()
    assert gp.isscalar(3.0) and gp.isscalar("a") and not gp.isscalar(_g(np.float64(1), device))
    assert not gp.isscalar([1])


def test_in_place(device):
    for fn in (lambda ns, a: ns.fill_diagonal(a, 5.0),
               lambda ns, a: ns.fill_diagonal(a, ns.asarray([1.0, 2.0]) if ns is np else
                                              gp.asarray([1.0, 2.0], device=device), wrap=True),
               lambda ns, a: ns.put(a, [0, 5, -1], [7.0, 8.0]),
               lambda ns, a: ns.put(a, [13, -20], [7.0], mode="clip"),
               lambda ns, a: ns.putmask(a, a > 0.3, np.array([1.0, 2.0, 3.0]) if ns is np else
                                        gp.asarray(np.array([1.0, 2.0, 3.0]), device=device)),
               lambda ns, a: ns.place(a, a < 0, [10.0, 20.0, 30.0])):
        h = np.concatenate([A, B[:2]], axis=0)   # 5 x 4: a tall matrix for wrap
        x = _g(h, device)
        fn(np, h)
        assert fn(gp, x) is None
        _cmp(x, h)
    h3 = np.zeros((3, 3, 3))
    x3 = _g(h3, device)
    np.fill_diagonal(h3, 4.0)
    gp.fill_diagonal(x3, 4.0)
    _cmp(x3, h3)
    h = C3.copy()
    x = _g(h, device)
    idx = np.array([[[0], [2], [1]], [[3], [3], [0]]])
    np.put_along_axis(h, idx, 9.0, axis=2)
    gp.put_along_axis(x, _g(idx, device), 9.0, axis=2)
    _cmp(x, h)
    # putmask's values repeat over the flat positions (NumPy's rule)
    h = A.copy()
    x = _g(h, device)
    np.putmask(h, h > 0, np.array([1.0, 2.0, 3.0]))
    gp.putmask(x, x > 0, _g(np.array([1.0, 2.0, 3.0]), device))
    _cmp(x, h)


def test_partition(device):
    h = RNG.standard_normal((3, 6))
    x = _g(h, device)
    p = np.asarray(gp.partition(x, 2, axis=1))
    assert np.all(p[:, :2] <= p[:, 2:3]) and np.all(p[:, 3:] >= p[:, 2:3])
    np.testing.assert_array_equal(p[:, 2], np.partition(h, 2, axis=1)[:, 2])
    ip = np.asarray(gp.argpartition(x, [1, 4], axis=None))
    np.testing.assert_array_equal(h.reshape(-1)[ip][[1, 4]],
                                  np.partition(h, [1, 4], axis=None)[[1, 4]])
    with pytest.raises(ValueError, match="partition: kth"):
        gp.partition(x, 6)


def test_gradients(device):
    """Composites differentiate through the namespace functions they call."""
    def f64(h):
        return _g(h, device)
    for fn, args in (
            (lambda a, b: gp.dot(a, b), (f64(A), f64(B.T))),
            (lambda a, b: gp.kron(a, b), (f64(A[:2, :2]), f64(B[:2, :3]))),
            (lambda a: gp.pad(a, ((1, 2), (2, 1)), mode="reflect"), (f64(A),)),
            (lambda a: gp.pad(a, 1, mode="mean"), (f64(A),)),
            (lambda a: gp.median(a, axis=1), (f64(A),)),
            (lambda a: gp.quantile(a, [0.3, 0.6], axis=0), (f64(A),)),
            (lambda a: gp.nanmean(a, axis=1), (f64(N[[0, 2]]),)),
            (lambda a, w: gp.average(a, axis=1, weights=w), (f64(A), f64(np.arange(1.0, 5.0)))),
            (lambda a: gp.cov(a), (f64(A),)),
            (lambda a: gp.corrcoef(a), (f64(A),)),
            (lambda a: gp.diag(a, 1), (f64(V),)),
            (lambda a: gp.insert(a, [1, 2], 0.0, axis=1), (f64(A),)),
            (lambda a, v: gp.convolve(a, v, "same"), (f64(V), f64(V[:3]))),
            (lambda a: gp.gradient(a, 0.5, edge_order=2), (f64(V),)),
            (lambda a: gp.trapezoid(a), (f64(A),)),
            (lambda a: gp.sinc(a), (f64(np.array([0.0, 0.3, -1.2])),)),
            (lambda a, b: gp.cross(a, b), (f64(A[:, :3]), f64(B[:, :3]))),
            (lambda a: gp.interp(f64(np.array([0.2, 1.5])), f64(np.array([0.0, 1.0, 2.0])), a),
             (f64(np.array([1.0, 3.0, 2.0])),)),
    ):
        assert gradcheck(fn, args)


def test_errors(device):
    x, v = _g(A, device), _g(V, device)
    with pytest.raises(ValueError, match="split: array split does not result"):
        gp.split(x, 3, axis=1)
    with pytest.raises(ValueError, match="vsplit"):
        gp.vsplit(v, 2)
    with pytest.raises(ValueError, match="dsplit"):
        gp.dsplit(x, 2)
    with pytest.raises(gp.AxisError):
        gp.swapaxes(x, 0, 2)
    with pytest.raises(ValueError, match="dot: shapes"):
        gp.dot(x, x)
    with pytest.raises(ValueError, match="vdot"):
        gp.vdot(x, v)
    with pytest.raises(ValueError, match="diag: input must be 1- or 2-d"):
        gp.diag(_g(C3, device))
    with pytest.raises(ValueError, match="rot90: axes must be different"):
        gp.rot90(x, axes=(1, 1))
    with pytest.raises(ValueError, match="rot90: len"):
        gp.rot90(x, axes=(0,))
    with pytest.raises(ValueError, match="fliplr"):
        gp.fliplr(v)
    with pytest.raises(ValueError, match="pad: index can't contain negative"):
        gp.pad(x, -1)
    with pytest.raises(ValueError, match="pad: mode"):
        gp.pad(x, 1, mode="bogus")
    with pytest.raises(ValueError, match="pad: can't extend empty axis"):
        gp.pad(_g(np.zeros((0, 2)), device), 1, mode="edge")
    with pytest.raises(ValueError, match="pad: unsupported keyword"):
        gp.pad(x, 1, mode="edge", constant_values=1)
    with pytest.raises(IndexError, match="delete: index 9"):
        gp.delete(v, 9)
    with pytest.raises(IndexError, match="insert: index 7"):
        gp.insert(v, 7, 1.0)
    with pytest.raises(ValueError, match="block: list depths"):
        gp.block([[x], x])
    with pytest.raises(TypeError, match="block"):
        gp.block((x, x))
    with pytest.raises(TypeError, match="average: axis must be specified"):
        gp.average(x, weights=v[:4])
    with pytest.raises(ValueError, match="average: length of weights"):
        gp.average(x, axis=0, weights=v[:4])
    with pytest.raises(ValueError, match="quantile: quantiles must be in the range"):
        gp.quantile(x, 1.5)
    with pytest.raises(ValueError, match="percentile: quantiles"):
        gp.percentile(x, -1)
    with pytest.raises(ValueError, match="quantile: method"):
        gp.quantile(x, 0.5, method="bogus")
    with pytest.raises(ValueError, match="nanargmax: all-NaN slice"):
        gp.nanargmax(_g(N, device), axis=1)
    with pytest.raises(ValueError, match="bincount: the first argument must be non-negative"):
        gp.bincount(_g(np.array([1, -1]), device))
    with pytest.raises(TypeError, match="bincount"):
        gp.bincount(v)
    with pytest.raises(ValueError, match="histogram: `bins` must increase"):
        gp.histogram(v, _g(np.array([1.0, 0.0]), device))
    with pytest.raises(ValueError, match="histogram: max must be larger"):
        gp.histogram(v, 3, range=(1.0, 0.0))
    with pytest.raises(ValueError, match="digitize: bins must be monotonically"):
        gp.digitize(v, _g(np.array([0.0, 1.0, 0.5]), device))
    with pytest.raises(ValueError, match="convolve: mode"):
        gp.convolve(v, v, "bogus")
    with pytest.raises(ValueError, match="correlate: v cannot be empty"):
        gp.correlate(v, v[:0])
    with pytest.raises(ValueError, match="cov: m has more than 2"):
        gp.cov(_g(C3, device))
    with pytest.raises(ValueError, match="gradient: shape of array too small"):
        gp.gradient(v[:2], edge_order=2)
    with pytest.raises(ValueError, match="unravel_index: index 12"):
        gp.unravel_index(12, (3, 4))
    with pytest.raises(ValueError, match="ravel_multi_index: invalid entry"):
        gp.ravel_multi_index((_g(np.array([3]), device), _g(np.array([0]), device)), (3, 4))
    with pytest.raises(ValueError, match="select: list of cases"):
        gp.select([x > 0], [])
    with pytest.raises(NotImplementedError, match="concatenate: out="):
        gp.concatenate([x, x], out=x)
    with pytest.raises(TypeError, match="hstack"):
        gp.hstack(x)
    with pytest.raises(ValueError, match="tril_indices_from"):
        gp.tril_indices_from(v)
    with pytest.raises(ValueError, match="diag_indices_from"):
        gp.diag_indices_from(x)
    with pytest.raises(ValueError, match="fill_diagonal"):
        gp.fill_diagonal(_g(np.zeros((2, 3, 3)), device), 1.0)


def test_unravel_int_and_ints():
    assert gp.unravel_index(7, (3, 4)) == np.unravel_index(7, (3, 4))
    assert gp.unravel_index(7, (3, 4)) == (1, 3)


def test_namespace_unchanged():
    """The NumPy names leave the Array API functions as they were."""
    from grilly.array import dispatch
    assert gp.concat is dispatch.OPS["concat"] and gp.absolute is gp.abs
    assert gp.arccos is gp.acos and gp.power is gp.pow and gp.mod is gp.remainder
    for name in ("absolute", "median", "pad", "dot", "histogram", "unique"):
        assert callable(getattr(gp, name)) and name in dispatch.OPS


def test_jit(device):
    """The composites trace under grilly.jit (no host reads inside these)."""
    f = gp.jit(lambda x: gp.pad(gp.median(x, axis=1, keepdims=True) * x, 1, mode="reflect")
               + gp.sum(gp.hstack([x, gp.cumsum(x, 1)])))
    for k in range(3):
        h = RNG.standard_normal((3, 4))
        want = (np.pad(np.median(h, axis=1, keepdims=True) * h, 1, mode="reflect")
                + np.hstack([h, np.cumsum(h, 1)]).sum())
        assert_close(f(_g(h, device)), want, rtol=1e-10)
