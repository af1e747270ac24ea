import pytest

@pytest.mark.kernels("from_host", "to_host")
def test_roundtrip(device):
    import grilly as gp, numpy as np
    a = gp.asarray(np.arange(3.0), device=device)
    assert np.asarray(a).tolist() == [0, 1, 2]
