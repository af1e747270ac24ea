"""A torch.nn sequence-model and 3-D vision user's code ported to grilly.nn, against torch 2.13
(test-only oracle; torch's weights copied in with load_state_dict) on every device. Each test
failed before its fix: ``pad_sequence`` / ``pack_sequence`` / ``pad_packed_sequence`` of integer
token ids or bool masks with the default padding_value=0.0 (a TypeError from ``full``); RNN
constructor sizes given as floats (an allocation error naming no argument), ``dropout=True``
and ``input_size=0`` accepted, no warning for dropout on one layer; a zero-length sequence
("stack: need at least one array"); ``conv3d(groups=True)`` / ``conv_transpose3d(groups=True)``
accepted, and a float or bool kernel_size/stride to the 3-D convolutions and pools
("'float' object is not iterable")."""
import warnings

import numpy as np
import pytest

import grilly as gp
from grilly import nn
from grilly.nn import functional as F
from grilly.nn.utils import rnn as R
from grilly.testing import assert_close

torch = pytest.importorskip("torch")
TR = torch.nn.utils.rnn
IDS = [[3, 4, 5], [7], [1, 2]]


def _np(t):
    return t.detach().numpy()


def _ids(device, dtype=np.int64):
    return ([gp.asarray(np.array(s, dtype=dtype), device=device) for s in IDS],
            [torch.from_numpy(np.array(s, dtype=dtype)) for s in IDS])


# ---- padding / packing integer token ids and bool masks -----------------------------------------
@pytest.mark.parametrize("side", ["right", "left"])
def test_pad_sequence_of_token_ids_and_bool_masks(device, side):
    g, t = _ids(device)
    a = R.pad_sequence(g, batch_first=True, padding_side=side)
    b = TR.pad_sequence(t, batch_first=True, padding_side=side)
    assert a.dtype == gp.int64
    np.testing.assert_array_equal(np.asarray(a), b.numpy())
    # a float padding value is cast as torch casts it (truncated for ints, nonzero for bools)
    np.testing.assert_array_equal(np.asarray(R.pad_sequence(g, padding_value=-1.0)),
                                  TR.pad_sequence(t, padding_value=-1.0).numpy())
    gb, tb = [x > 3 for x in g], [x > 3 for x in t]
    for pv in (0.0, 1.0):
        a = R.pad_sequence(gb, padding_side=side, padding_value=pv)
        assert a.dtype == gp.bool
        np.testing.assert_array_equal(
            np.asarray(a), TR.pad_sequence(tb, padding_side=side, padding_value=pv).numpy())


def test_packed_token_ids_embedded_into_an_lstm(device):
    g, t = _ids(device)
    p, tp = R.pack_sequence(g, enforce_sorted=False), TR.pack_sequence(t, enforce_sorted=False)
    np.testing.assert_array_equal(np.asarray(p.data), tp.data.numpy())
    ids, lens = R.pad_packed_sequence(p, batch_first=True, total_length=4)
    tids, tlens = TR.pad_packed_sequence(tp, batch_first=True, total_length=4)
    np.testing.assert_array_equal(np.asarray(ids), tids.numpy())
    np.testing.assert_array_equal(np.asarray(lens), tlens.numpy())
    # embed the packed ids, run an LSTM on them: values and gradients as torch's
    torch.manual_seed(0)
    temb, tl = torch.nn.Embedding(10, 4), torch.nn.LSTM(4, 3)
    emb, lstm = nn.Embedding(10, 4).to(device), nn.LSTM(4, 3).to(device)
    for tm, gm in ((temb, emb), (tl, lstm)):
        gm.load_state_dict({k: _np(v) for k, v in tm.state_dict().items()})
    out, (h, _) = lstm(R.PackedSequence(emb(p.data), *p[1:]))
    tout, (th, _) = tl(TR.PackedSequence(temb(tp.data), *tp[1:]))
    assert_close(h, _np(th), rtol=1e-5, atol=1e-6)
    (gp.sum(R.pad_packed_sequence(out)[0] ** 2) + gp.sum(h)).backward()
    ((TR.pad_packed_sequence(tout)[0] ** 2).sum() + th.sum()).backward()
    assert_close(emb.weight.grad, _np(temb.weight.grad), rtol=1e-4, atol=1e-5)
    assert_close(lstm.weight_hh_l0.grad, _np(tl.weight_hh_l0.grad), rtol=1e-4, atol=1e-5)


# ---- recurrent layers' constructor and input checks ---------------------------------------------
@pytest.mark.parametrize("name", ["LSTM", "GRU", "RNN"])
def test_rnn_constructor_checks(name):
    cls = getattr(nn, name)
    with pytest.raises(TypeError, match=f"{name}: hidden_size must be an int"):
        cls(3, 4.0)
    with pytest.raises(TypeError, match=f"{name}: input_size must be an int"):
        cls(3.0, 4)
    with pytest.raises(ValueError, match=f"{name}: input_size.*positive"):
        cls(0, 4)   # torch's "input_size must be greater than zero"
    with pytest.raises(ValueError, match=f"{name}: dropout"):
        cls(3, 4, dropout=True)
    with pytest.warns(UserWarning, match="num_layers greater than 1"):
        cls(3, 4, dropout=0.5)
    m = cls(3, 4, num_layers=2, dropout=1)
    assert m.dropout == 1.0 and repr(m) == repr(getattr(torch.nn, name)(3, 4, 2, dropout=1))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cls(3, 4, num_layers=2, dropout=0.5)


@pytest.mark.parametrize("name", ["LSTMCell", "GRUCell", "RNNCell"])
def test_cell_constructor_checks(name):
    with pytest.raises(TypeError, match=f"{name}: hidden_size must be an int"):
        getattr(nn, name)(3, 4.0)


@pytest.mark.parametrize("name,batch_first", [("LSTM", False), ("GRU", True)])
def test_rnn_zero_length_sequence_is_a_clear_error(device, name, batch_first):
    m = getattr(nn, name)(3, 4, batch_first=batch_first).to(device)
    x = gp.ones((2, 0, 3) if batch_first else (0, 2, 3), device=device)
    with pytest.raises(ValueError, match=f"{name}: expected a sequence length larger than 0"):
        m(x)


# ---- 3-D convolutions and pools: argument types ---------------------------------------------------
def test_conv3d_groups_must_be_an_int(device):
    x = gp.ones((1, 2, 3, 3, 3), device=device)
    with pytest.raises(ValueError, match="conv3d: groups must be a positive int, got True"):
        F.conv3d(x, gp.ones((2, 2, 1, 1, 1), device=device), groups=True)
    with pytest.raises(ValueError, match="conv3d: groups must be a positive int, got 2.0"):
        F.conv3d(x, gp.ones((2, 1, 1, 1, 1), device=device), groups=2.0)
    with pytest.raises(ValueError, match="conv_transpose3d: groups must be a positive int"):
        F.conv_transpose3d(x, gp.ones((2, 1, 2, 2, 2), device=device), groups=True)
    with pytest.raises(ValueError, match="conv3d: bias must have shape"):
        F.conv3d(x, gp.ones((2, 2, 1, 1, 1), device=device), gp.ones((3,), device=device))


@pytest.mark.parametrize("call,match", [
    (lambda x: F.conv3d(x, gp.ones((2, 2, 1, 1, 1), device=x.device), stride=True),
     "conv3d: stride"),
    (lambda x: F.max_pool3d(x, True), "max_pool3d: kernel_size"),
    (lambda x: F.avg_pool3d(x, 2.0), "avg_pool3d: kernel_size"),
    (lambda x: nn.Conv3d(2, 2, 2.0), "Conv3d: kernel_size"),
    (lambda x: F.max_pool3d(x, (2, True, 2)), "max_pool3d: kernel_size"),
])
def test_3d_geometry_of_the_wrong_type_names_the_argument(device, call, match):
    x = gp.ones((1, 2, 4, 4, 4), device=device)
    with pytest.raises((TypeError, ValueError), match=match):
        call(x)


def test_3d_geometry_still_takes_ints_and_tuples(device):
    tx = torch.randn(1, 2, 5, 6, 5, dtype=torch.float64)
    x = gp.asarray(_np(tx), device=device)
    tol = dict(rtol=1e-5, atol=1e-6)
    assert_close(F.max_pool3d(x, [2, 3, 2], stride=(1, 2, 1)),
                 _np(torch.nn.functional.max_pool3d(tx, [2, 3, 2], stride=(1, 2, 1))), **tol)
    assert_close(F.avg_pool3d(x, 2, padding=[1, 0, 1]),
                 _np(torch.nn.functional.avg_pool3d(tx, 2, padding=[1, 0, 1])), **tol)


def test_recurrent_base_classes_for_isinstance_checks():
    # a weight-initialization loop over model.modules() written for torch
    model = nn.Sequential(nn.LSTM(3, 4), nn.GRUCell(4, 4), nn.Linear(4, 2))
    assert [type(m).__name__ for m in model.modules() if isinstance(m, nn.RNNBase)] == ["LSTM"]
    assert [type(m).__name__ for m in model.modules()
            if isinstance(m, nn.RNNCellBase)] == ["GRUCell"]
    assert issubclass(torch.nn.RNN, torch.nn.RNNBase) and issubclass(nn.RNN, nn.RNNBase)
