"""grilly.nn.utils against torch.nn.utils: clipping and parameter vectors."""
import numpy as np
import pytest

import grilly as gp
from grilly import nn
from grilly.testing import assert_close

torch = pytest.importorskip("torch")


def _pair(device, rng):
    ws = [rng.standard_normal(s).astype(np.float32) for s in ((3, 4), (4,), (2, 2))]
    gs = [rng.standard_normal(w.shape).astype(np.float32) for w in ws]
    mine = [gp.asarray(w, device=device) for w in ws]
    for p, g in zip(mine, gs):
        p.requires_grad_()
        p.grad = gp.asarray(g, device=device)
    ref = [torch.tensor(w, requires_grad=True) for w in ws]
    for p, g in zip(ref, gs):
        p.grad = torch.tensor(g)
    return mine, ref


@pytest.mark.parametrize("norm_type", [2.0, 1.0, float("inf")])
def test_clip_grad_norm_matches_torch(device, norm_type):
    mine, ref = _pair(device, np.random.default_rng(0))
    total = nn.utils.clip_grad_norm_(mine, 0.5, norm_type=norm_type)
    t_total = torch.nn.utils.clip_grad_norm_(ref, 0.5, norm_type=norm_type)
    assert_close(total, t_total.numpy(), rtol=1e-5)
    for p, t in zip(mine, ref):
        assert_close(p.grad, t.grad.numpy(), rtol=1e-5, atol=1e-7)


def test_clip_grad_value_matches_torch(device):
    mine, ref = _pair(device, np.random.default_rng(1))
    nn.utils.clip_grad_value_(mine, 0.3)
    torch.nn.utils.clip_grad_value_(ref, 0.3)
    for p, t in zip(mine, ref):
        assert_close(p.grad, t.grad.numpy())


def test_parameter_vector_round_trip(device):
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2)).to(device)
    vec = nn.utils.parameters_to_vector(model.parameters())
    assert vec.shape == (3 * 4 + 4 + 4 * 2 + 2,)
    ref = np.concatenate([np.asarray(p).ravel() for p in model.parameters()])
    assert_close(vec, ref)
    nn.utils.vector_to_parameters(vec * 2.0, model.parameters())
    assert_close(nn.utils.parameters_to_vector(model.parameters()), ref * 2)
    gp.sum(vec * vec).backward()  # the vector is differentiable w.r.t. the parameters
    assert model[0].weight.grad is not None


def test_vector_to_parameters_errors(device):
    model = nn.Linear(2, 2).to(device)
    with pytest.raises(ValueError, match="vector_to_parameters: vec has 3 elements"):
        nn.utils.vector_to_parameters(gp.ones(3, device=device), model.parameters())
    with pytest.raises(TypeError, match="1-D"):
        nn.utils.vector_to_parameters(gp.ones((2, 3), device=device), model.parameters())


@pytest.mark.parametrize("norm_type", [2.0, 3.0])
def test_clip_grad_norm_float16_matches_torch(device, norm_type):
    """float16 gradients whose powers pass 65504 (300**2) though their norm does not: torch
    takes the norms in float32; the total is finite and the gradients are clipped, not zeroed."""
    rng = np.random.default_rng(2)
    gs = [(rng.standard_normal(s) * 300).astype(np.float16) for s in ((3, 4), (4,))]
    mine = [gp.zeros(g.shape, dtype=gp.float16, device=device) for g in gs]
    ref = [torch.zeros(g.shape, dtype=torch.float16, requires_grad=True) for g in gs]
    for p, t, g in zip(mine, ref, gs):
        p.requires_grad_()
        p.grad = gp.asarray(g, device=device)
        t.grad = torch.tensor(g)
    total = nn.utils.clip_grad_norm_(mine, 1.0, norm_type=norm_type)
    t_total = torch.nn.utils.clip_grad_norm_(ref, 1.0, norm_type=norm_type)
    np.testing.assert_allclose(float(total), float(t_total), rtol=2e-3)
    for p, t in zip(mine, ref):
        assert_close(p.grad, t.grad.numpy(), rtol=2e-3, atol=1e-4)
