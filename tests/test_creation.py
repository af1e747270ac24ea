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
