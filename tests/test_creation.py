"""Creation functions against numpy: edge arguments the Array API suite draws."""
import numpy as np
import pytest

import grilly as gp
from grilly.testing import assert_close


@pytest.mark.parametrize("n,m", [(0, 0), (3, 4), (4, 2)])
@pytest.mark.parametrize("k", [0, 1, -2, 5, -7, 2**63, -(2**63) - 1, 2**70])
def test_eye_any_diagonal(device, n, m, k):
    # a diagonal beyond the matrix is empty; numpy overflows on k past int64, so the reference
    # takes k clamped to the matrix (the same matrix)
    want = np.eye(n, m, k=max(-n, min(k, m)), dtype=np.float32)
    got = gp.eye(n, m, k=k, dtype=gp.float32, device=device)
    assert got.shape == want.shape
    assert_close(got, want)


@pytest.mark.parametrize("make", [
    lambda d: gp.zeros((2**40, 2**40), device=d),
    lambda d: gp.empty((2**62,), device=d),
    lambda d: gp.full((2**31, 2**31), 1.0, device=d),
    lambda d: gp.ones((10**20,), device=d),
    lambda d: gp.arange(2**62, device=d),
    lambda d: gp.linspace(0, 1, 2**62, device=d),
    lambda d: gp.eye(2**31, device=d),
    lambda d: gp.broadcast_to(gp.zeros((1,), device=d), (2**40, 2**40)),
    lambda d: gp.tile(gp.zeros((2,), device=d), (2**62,)),
])
def test_impossible_sizes_raise_memory_error(device, make):
    # an array past any address space: a MemoryError naming the op on every device (cpu raised
    # numpy's "Maximum allowed dimension exceeded" / "iterator is too large" ValueErrors)
    with pytest.raises(MemoryError, match=r"^(zeros|empty|full|ones|arange|linspace|eye|"
                                          r"broadcast_to): .*larger than any device"):
        make(device)
