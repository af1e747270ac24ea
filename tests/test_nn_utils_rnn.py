"""grilly.nn.utils.rnn (padded and packed sequences) and recurrent layers on packed input,
against torch.nn.utils.rnn and torch's LSTM/GRU (test-only oracles) on every device: values,
and gradients through packing, unpacking and the layers."""
import numpy as np
import pytest

import grilly as gp
from grilly import nn
from grilly.nn.utils import rnn as R
from grilly.testing import assert_close

torch = pytest.importorskip("torch")
TR = torch.nn.utils.rnn
LENS = [2, 5, 3]


def _np(x):
    return np.asarray(x) if isinstance(x, gp.Array) else x.detach().numpy()


def _seqs(device, lens=LENS, feat=3, grad=False):
    rng = np.random.default_rng(0)
    raw = [rng.standard_normal((n, feat)).astype(np.float32) for n in lens]
    g = [gp.asarray(a, device=device) for a in raw]
    t = [torch.from_numpy(a) for a in raw]
    if grad:
        for a in g:
            a.requires_grad_()
        for a in t:
            a.requires_grad_()
    return g, t


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("side", ["right", "left"])
def test_pad_sequence_as_torch(device, batch_first, side):
    g, t = _seqs(device, grad=True)
    a = R.pad_sequence(g, batch_first=batch_first, padding_value=-2.0, padding_side=side)
    b = TR.pad_sequence(t, batch_first=batch_first, padding_value=-2.0, padding_side=side)
    assert_close(a, _np(b))
    w = np.random.default_rng(1).standard_normal(b.shape).astype(np.float32)
    gp.sum(a * gp.asarray(w, device=device)).backward()
    (b * torch.from_numpy(w)).sum().backward()
    for x, y in zip(g, t):
        assert_close(x.grad, _np(y.grad))


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("enforce_sorted", [False, True])
def test_pack_and_pad_round_trip_as_torch(device, batch_first, enforce_sorted):
    lens = [5, 3, 3, 1] if enforce_sorted else LENS
    g, t = _seqs(device, lens, grad=True)
    gp_pad = R.pad_sequence(g, batch_first=batch_first)
    tp_pad = TR.pad_sequence(t, batch_first=batch_first)
    p = R.pack_padded_sequence(gp_pad, lens, batch_first=batch_first,
                               enforce_sorted=enforce_sorted)
    q = TR.pack_padded_sequence(tp_pad, torch.tensor(lens), batch_first=batch_first,
                                enforce_sorted=enforce_sorted)
    assert_close(p.data, _np(q.data))
    np.testing.assert_array_equal(_np(p.batch_sizes), q.batch_sizes.numpy())
    if enforce_sorted:
        assert p.sorted_indices is None and q.sorted_indices is None
    else:
        np.testing.assert_array_equal(_np(p.sorted_indices), q.sorted_indices.numpy())
        np.testing.assert_array_equal(_np(p.unsorted_indices), q.unsorted_indices.numpy())
    x, lx = R.pad_packed_sequence(p, batch_first=batch_first, padding_value=9.0, total_length=7)
    y, ly = TR.pad_packed_sequence(q, batch_first=batch_first, padding_value=9.0, total_length=7)
    assert_close(x, _np(y))
    np.testing.assert_array_equal(_np(lx), ly.numpy())
    w = np.random.default_rng(2).standard_normal(tuple(y.shape)).astype(np.float32)
    gp.sum(x * gp.asarray(w, device=device)).backward()
    (y * torch.from_numpy(w)).sum().backward()
    for a, b in zip(g, t):
        assert_close(a.grad, _np(b.grad))
    for a, b in zip(R.unpack_sequence(p), TR.unpack_sequence(q)):
        assert_close(a, _np(b))
    for a, b in zip(R.unpad_sequence(x, lx, batch_first=batch_first),
                    TR.unpad_sequence(y, ly, batch_first=batch_first)):
        assert_close(a, _np(b))


def test_pack_sequence_and_errors(device):
    g, t = _seqs(device)
    p = R.pack_sequence(g, enforce_sorted=False)
    q = TR.pack_sequence(t, enforce_sorted=False)
    assert_close(p.data, _np(q.data))
    with pytest.raises(RuntimeError, match="decreasing"):
        R.pack_sequence(g)
    pad = R.pad_sequence(g)
    with pytest.raises(RuntimeError, match="greater than 0"):
        R.pack_padded_sequence(pad, [2, 0, 3], enforce_sorted=False)
    with pytest.raises(ValueError, match="exceeds"):
        R.pack_padded_sequence(pad, [2, 9, 3], enforce_sorted=False)
    with pytest.raises(ValueError, match="3 lengths"):
        R.pack_padded_sequence(pad, [2, 3], enforce_sorted=False)
    with pytest.raises(ValueError, match="total_length"):
        R.pad_packed_sequence(p, total_length=2)
    with pytest.raises(RuntimeError, match="empty"):
        R.pad_sequence([])


@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN"])
@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize("batch_first", [False, True])
def test_recurrent_layers_take_packed_input(device, kind, bidirectional, batch_first):
    torch.manual_seed(0)
    tm = getattr(torch.nn, kind)(3, 4, num_layers=2, bidirectional=bidirectional,
                                 batch_first=batch_first)
    gm = getattr(nn, kind)(3, 4, num_layers=2, bidirectional=bidirectional,
                           batch_first=batch_first).to(device)
    gm.load_state_dict({k: v.detach().numpy() for k, v in tm.state_dict().items()})
    g, t = _seqs(device, grad=True)
    dirs = 2 if bidirectional else 1
    rng = np.random.default_rng(3)
    h0 = rng.standard_normal((2 * dirs, 3, 4)).astype(np.float32)
    c0 = rng.standard_normal((2 * dirs, 3, 4)).astype(np.float32)
    ghx = gp.asarray(h0, device=device)
    thx = torch.from_numpy(h0)
    if kind == "LSTM":
        ghx, thx = (ghx, gp.asarray(c0, device=device)), (thx, torch.from_numpy(c0))
    p = R.pack_sequence(g, enforce_sorted=False)
    q = TR.pack_sequence(t, enforce_sorted=False)
    out, hn = gm(p, ghx)
    tout, thn = tm(q, thx)
    assert isinstance(out, R.PackedSequence)
    assert_close(out.data, _np(tout.data), rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(_np(out.batch_sizes), tout.batch_sizes.numpy())
    hs, ths = (hn, thn) if kind == "LSTM" else ((hn,), (thn,))
    for a, b in zip(hs, ths):
        assert_close(a, _np(b), rtol=1e-4, atol=1e-5)
    # gradients through the packed output and the final states
    w = np.random.default_rng(4).standard_normal(tuple(tout.data.shape)).astype(np.float32)
    loss = gp.sum(out.data * gp.asarray(w, device=device)) + sum(gp.sum(a * a) for a in hs)
    tloss = (tout.data * torch.from_numpy(w)).sum() + sum((a * a).sum() for a in ths)
    loss.backward()
    tloss.backward()
    for a, b in zip(g, t):
        assert_close(a.grad, _np(b.grad), rtol=1e-4, atol=1e-5)
    tp = dict(tm.named_parameters())
    for name, prm in gm.named_parameters():
        assert_close(prm.grad, _np(tp[name].grad), rtol=1e-4, atol=1e-5)
