"""grilly.utils.data against torch.utils.data (a test-only oracle): batches, collation,
samplers, random_split, thread prefetch and the option errors, on every device."""
from collections import namedtuple

import numpy as np
import pytest

import grilly as gp
from grilly import nn
from grilly.utils import data as gd

torch = pytest.importorskip("torch")
td = torch.utils.data


def _np(x):
    if isinstance(x, gp.Array):
        return np.asarray(x)
    if hasattr(x, "detach"):
        return x.detach().numpy()
    return np.asarray(x)


def _same(g, t):
    """A grilly batch structure equals torch's: same nesting, values and dtypes."""
    if isinstance(t, dict):
        assert isinstance(g, dict) and g.keys() == t.keys()
        for k in t:
            _same(g[k], t[k])
    elif isinstance(t, (list, tuple)):
        assert isinstance(g, (list, tuple)) and len(g) == len(t)
        for a, b in zip(g, t):
            _same(a, b)
    elif hasattr(t, "detach"):
        assert isinstance(g, gp.Array)
        assert str(_np(g).dtype) == str(_np(t).dtype)
        np.testing.assert_array_equal(_np(g), _np(t))
    else:
        assert g == t


def _data(n=10):
    rng = np.random.default_rng(0)
    return rng.random((n, 3), dtype=np.float32), rng.integers(0, 5, n)


@pytest.mark.parametrize("on_device", [False, True])
@pytest.mark.parametrize("batch_size,drop_last", [(4, False), (4, True), (1, False), (10, False)])
def test_tensor_dataset_batches_as_torch(device, on_device, batch_size, drop_last):
    x, y = _data()
    ds = gd.TensorDataset(*((gp.asarray(x, device=device), gp.asarray(y, device=device))
                            if on_device else (x, y)))
    tl = td.DataLoader(td.TensorDataset(torch.from_numpy(x), torch.from_numpy(y)),
                       batch_size=batch_size, drop_last=drop_last)
    gl = gd.DataLoader(ds, batch_size=batch_size, drop_last=drop_last, device=device)
    assert len(gl) == len(tl)
    got = list(gl)
    want = list(tl)
    assert len(got) == len(want)
    for g, t in zip(got, want):
        assert all(a.device == gp.asarray(0, device=device).device for a in g)
        _same(g, t)


def test_dataset_rows_and_errors():
    x, y = _data()
    ds = gd.TensorDataset(x, y)
    assert len(ds) == 10
    a, b = ds[3]
    np.testing.assert_array_equal(a, x[3])
    assert b == y[3]
    with pytest.raises(ValueError, match="size mismatch"):
        gd.TensorDataset(x, y[:5])
    with pytest.raises(ValueError, match="at least one"):
        gd.TensorDataset()


def test_shuffle_is_a_permutation_each_epoch_and_seeded(device):
    x = np.arange(50, dtype=np.float32)[:, None]
    loader = gd.DataLoader(gd.TensorDataset(x), batch_size=8, shuffle=True, device=device)

    def epoch():
        return np.concatenate([_np(b[0])[:, 0] for b in loader])

    nn.manual_seed(3)
    e1, e2 = epoch(), epoch()
    assert sorted(e1) == list(range(50)) and sorted(e2) == list(range(50))
    assert not np.array_equal(e1, e2)
    nn.manual_seed(3)
    np.testing.assert_array_equal(epoch(), e1)
    g = gp.random.Generator(7)
    a = [int(i) for i in gd.RandomSampler(range(20), generator=g)]
    b = [int(i) for i in gd.RandomSampler(range(20), generator=gp.random.Generator(7))]
    assert a == b and sorted(a) == list(range(20))


def test_default_collate_as_torch(device):
    Point = namedtuple("Point", "x y")
    rng = np.random.default_rng(1)
    samples = [{"img": rng.random((2, 2), dtype=np.float32), "label": i, "w": 0.5 * i,
                "flag": bool(i % 2), "name": f"s{i}", "pair": (i, rng.random(3)),
                "pt": Point(i, float(i))} for i in range(3)]
    got = gd.default_collate(samples, device)
    want = td.default_collate(samples)
    _same(got["img"], want["img"])
    _same(got["label"], want["label"])
    _same(got["w"], want["w"])
    _same(got["flag"], want["flag"])
    assert got["name"] == want["name"]
    _same(list(got["pair"]), list(want["pair"]))
    assert isinstance(got["pt"], Point)
    _same(tuple(got["pt"]), tuple(want["pt"]))
    arrs = [gp.asarray(rng.random(4), device=device) for _ in range(3)]
    _same(gd.default_collate(arrs), td.default_collate([torch.from_numpy(_np(a)) for a in arrs]))
    with pytest.raises(RuntimeError, match="equal size"):
        gd.default_collate([[1, 2], [3]])
    with pytest.raises(TypeError, match="default_collate"):
        gd.default_collate([object(), object()])


class _Squares(gd.Dataset):
    def __len__(self):
        return 7

    def __getitem__(self, i):
        return np.float32(i * i), i


class _TSquares(td.Dataset):
    def __len__(self):
        return 7

    def __getitem__(self, i):
        return np.float32(i * i), i


def test_map_dataset_samples_and_custom_collate(device):
    got = list(gd.DataLoader(_Squares(), batch_size=3, device=device))
    want = list(td.DataLoader(_TSquares(), batch_size=3))
    for g, t in zip(got, want):
        _same(list(g), list(t))
    sums = list(gd.DataLoader(_Squares(), batch_size=3, collate_fn=lambda b: sum(s[1] for s in b)))
    assert sums == [3, 12, 6]
    # batch_size=None: samples one by one, NumPy values converted
    one = list(gd.DataLoader(_Squares(), batch_size=None, device=device))
    assert len(one) == 7 and float(one[2][0]) == 4.0 and one[2][1] == 2


class _Stream(gd.IterableDataset):
    def __iter__(self):
        return iter(np.arange(11, dtype=np.float32))

    def __len__(self):
        return 11


class _TStream(td.IterableDataset):
    def __iter__(self):
        return iter(np.arange(11, dtype=np.float32))


@pytest.mark.parametrize("drop_last", [False, True])
def test_iterable_dataset_as_torch(device, drop_last):
    got = list(gd.DataLoader(_Stream(), batch_size=4, drop_last=drop_last, device=device))
    want = list(td.DataLoader(_TStream(), batch_size=4, drop_last=drop_last))
    assert len(got) == len(want) == len(gd.DataLoader(_Stream(), batch_size=4,
                                                       drop_last=drop_last))
    for g, t in zip(got, want):
        _same(g, t)
    with pytest.raises(ValueError, match="shuffle"):
        gd.DataLoader(_Stream(), shuffle=True)


def test_threads_give_the_same_batches_in_order(device):
    x = np.arange(40, dtype=np.float32).reshape(20, 2)
    ds = gd.TensorDataset(x)
    plain = [_np(b[0]) for b in gd.DataLoader(ds, batch_size=3, device=device)]
    seen = []
    threaded = [_np(b[0]) for b in gd.DataLoader(ds, batch_size=3, num_workers=2, device=device,
                                                  worker_init_fn=seen.append)]
    assert len(plain) == len(threaded) == 7
    for a, b in zip(plain, threaded):
        np.testing.assert_array_equal(a, b)
    assert sorted(seen) == sorted(set(seen)) and set(seen) <= {0, 1}
    nn.manual_seed(5)
    s1 = [_np(b[0]) for b in gd.DataLoader(_Squares(), batch_size=2, shuffle=True, num_workers=2)]
    nn.manual_seed(5)
    s2 = [_np(b[0]) for b in gd.DataLoader(_Squares(), batch_size=2, shuffle=True)]
    for a, b in zip(s1, s2):
        np.testing.assert_array_equal(a, b)


def test_random_split_lengths_as_torch():
    ds = gd.TensorDataset(np.arange(10))
    for lengths in ([3, 7], [0.3, 0.7], [0.33, 0.33, 0.34], [0.5, 0.5], [1 / 3] * 3):
        got = gd.random_split(ds, lengths, generator=gp.random.Generator(1))
        want = td.random_split(td.TensorDataset(torch.arange(10)), lengths)
        assert [len(s) for s in got] == [len(s) for s in want]
        idx = sorted(i for s in got for i in s.indices)
        assert idx == list(range(10))
    with pytest.raises(ValueError, match="sum of input lengths"):
        gd.random_split(ds, [3, 3])
    a = gd.random_split(ds, [5, 5], generator=gp.random.Generator(2))
    b = gd.random_split(ds, [5, 5], generator=gp.random.Generator(2))
    assert a[0].indices == b[0].indices


def test_samplers():
    seq = list(gd.BatchSampler(gd.SequentialSampler(range(10)), 3, False))
    assert seq == list(td.BatchSampler(td.SequentialSampler(range(10)), 3, False))
    assert list(gd.BatchSampler(range(10), 3, True)) == list(td.BatchSampler(range(10), 3, True))
    assert len(gd.BatchSampler(range(10), 3, True)) == 3
    sub = list(gd.SubsetRandomSampler([2, 4, 6, 8], generator=gp.random.Generator(0)))
    assert sorted(sub) == [2, 4, 6, 8]
    w = gd.WeightedRandomSampler([0.0, 1.0, 3.0], 4000, generator=gp.random.Generator(0))
    counts = np.bincount(list(w), minlength=3)
    assert counts[0] == 0 and 0.7 < counts[2] / 4000 < 0.8
    no_rep = list(gd.WeightedRandomSampler([1, 1, 1, 0], 3, replacement=False))
    assert sorted(no_rep) == [0, 1, 2]
    r = list(gd.RandomSampler(range(5), replacement=True, num_samples=12))
    assert len(r) == 12 and set(r) <= set(range(5))
    r = list(gd.RandomSampler(range(5), num_samples=12))
    assert len(r) == 12 and sorted(r[:5]) == list(range(5))
    with pytest.raises(ValueError, match="num_samples"):
        gd.WeightedRandomSampler([1, 2], 0)
    with pytest.raises(ValueError, match="batch_size"):
        gd.BatchSampler(range(3), 0, False)


def test_concat_subset_stack():
    a, b = gd.TensorDataset(np.arange(3)), gd.TensorDataset(np.arange(10, 14))
    c = a + b
    assert len(c) == 7 and c[3][0] == 10 and c[-1][0] == 13
    with pytest.raises(IndexError):
        c[7]
    s = gd.Subset(c, [6, 0])
    assert len(s) == 2 and s[0][0] == 13 and s[1][0] == 0
    st = gd.StackDataset(a, a)
    assert st[1] == (a[1], a[1])
    st = gd.StackDataset(x=a, y=a)
    assert set(st[2]) == {"x", "y"}


def test_option_errors_as_torch():
    ds = gd.TensorDataset(np.arange(4))
    sampler = gd.SequentialSampler(ds)
    with pytest.raises(ValueError, match="mutually exclusive with shuffle"):
        gd.DataLoader(ds, sampler=sampler, shuffle=True)
    with pytest.raises(ValueError, match="batch_sampler"):
        gd.DataLoader(ds, batch_size=2, batch_sampler=gd.BatchSampler(sampler, 2, False))
    with pytest.raises(ValueError, match="num_workers"):
        gd.DataLoader(ds, num_workers=-1)
    with pytest.raises(ValueError, match="drop_last"):
        gd.DataLoader(ds, batch_size=None, drop_last=True)
    with pytest.raises(ValueError, match="batch_size"):
        gd.DataLoader(ds, batch_size=0)
    with pytest.raises(TypeError, match="generator"):
        list(gd.DataLoader(ds, shuffle=True, generator=3))
    bs = gd.DataLoader(ds, batch_sampler=gd.BatchSampler(sampler, 3, False))
    assert [list(_np(b[0])) for b in bs] == [[0, 1, 2], [3]]
