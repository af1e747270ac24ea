"""grilly.autograd.detect_anomaly / set_detect_anomaly on every device: a backward rule that
returns NaN raises RuntimeError naming its op and output (as torch's message), after a warning
showing the forward call's stack; the mode's switches, and torch's behaviour in the same cases."""
import numpy as np
import pytest

import grilly as gp
from grilly import nn
from grilly.autograd import detect_anomaly, is_anomaly_enabled, set_detect_anomaly
from grilly.autograd.tape import Node

torch = pytest.importorskip("torch")
NAN = float("nan")

pytestmark = pytest.mark.filterwarnings("ignore:Anomaly Detection has been enabled")


def _forward_warning(record) -> str:
    msgs = [str(w.message) for w in record if "Traceback of forward call" in str(w.message)]
    assert len(msgs) == 1, [str(w.message) for w in record]
    return msgs[0]


def test_nan_from_a_rule_raises_and_shows_the_forward_stack(device):
    x = gp.asarray([4.0, -1.0], device=device).requires_grad_()
    with detect_anomaly():
        y = gp.sqrt(x)   # the op whose backward returns NaN
        with pytest.warns(UserWarning) as record:
            with pytest.raises(RuntimeError, match=r"Function 'sqrtBackward' returned nan values "
                                                   r"in its 0th output\."):
                gp.sum(y).backward()
    msg = _forward_warning(record)
    assert "Error detected in sqrtBackward" in msg
    assert "test_anomaly_mode.py" in msg and "y = gp.sqrt(x)" in msg
    # torch's message for the same case
    tx = torch.tensor([4.0, -1.0], requires_grad=True)
    with pytest.warns(UserWarning), torch.autograd.detect_anomaly():
        with pytest.raises(RuntimeError, match=r"Function 'SqrtBackward0' returned nan values "
                                               r"in its 0th output\."):
            torch.sqrt(tx).sum().backward()


def test_the_output_index_is_the_input_position(device):
    a = gp.asarray([NAN, 1.0], device=device)
    b = gp.asarray([1.0, 2.0], device=device).requires_grad_()
    with detect_anomaly(), pytest.warns(UserWarning, match="Error detected in multiplyBackward"):
        with pytest.raises(RuntimeError, match=r"'multiplyBackward' returned nan values in its "
                                               r"1th output"):
            gp.autograd.grad(gp.sum(a * b), b)
    ta, tb = torch.tensor([NAN, 1.0]), torch.tensor([1.0, 2.0], requires_grad=True)
    with pytest.warns(UserWarning), torch.autograd.detect_anomaly():
        with pytest.raises(RuntimeError, match="'MulBackward0' returned nan values in its 1th"):
            (ta * tb).sum().backward()


def test_a_layer_function_is_watched(device):
    lin = nn.Linear(2, 3).to(device)
    x = gp.asarray([[1.0, NAN]], device=device)
    with detect_anomaly():
        y = lin(x)
        with pytest.warns(UserWarning) as record:
            with pytest.raises(RuntimeError, match=r"Function '\w*Linear\w*Backward' returned "
                                                   r"nan values in its 1th output"):
                gp.sum(y).backward()
    assert "y = lin(x)" in _forward_warning(record)


def test_off_or_without_nan_check_nothing_raises(device):
    x = gp.asarray([4.0, -1.0], device=device).requires_grad_()
    gp.sum(gp.sqrt(x)).backward()
    assert np.isnan(x.grad.numpy()[1])
    x.grad = None
    with detect_anomaly(check_nan=False):
        assert is_anomaly_enabled() and not gp.autograd.is_anomaly_check_nan_enabled()
        gp.sum(gp.sqrt(x)).backward()
    assert np.isnan(x.grad.numpy()[1])
    # finite gradients pass through unchanged
    x = gp.asarray([4.0, 1.0], device=device).requires_grad_()
    with detect_anomaly():
        gp.sum(gp.sqrt(x) * 2.0).backward()
    np.testing.assert_allclose(x.grad.numpy(), [0.5, 1.0])


class _Fails(gp.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2.0

    @staticmethod
    def backward(ctx, g):
        raise ValueError("broken backward")


def test_a_failing_backward_shows_the_forward_stack(device):
    x = gp.ones((2,), device=device).requires_grad_()
    with detect_anomaly():
        y = _Fails.apply(x)
        with pytest.warns(UserWarning) as record:
            with pytest.raises(ValueError, match="broken backward"):
                gp.sum(y).backward()
    msg = _forward_warning(record)
    assert "Error detected in _FailsBackward" in msg and "y = _Fails.apply(x)" in msg


def test_switches():
    original = Node.__init__
    assert not is_anomaly_enabled()
    with pytest.warns(UserWarning, match="Anomaly Detection has been enabled"):
        mode = detect_anomaly()
    with mode:
        assert is_anomaly_enabled() and Node.__init__ is not original
        with set_detect_anomaly(False):
            assert not is_anomaly_enabled() and Node.__init__ is original
        assert is_anomaly_enabled()
    assert not is_anomaly_enabled() and Node.__init__ is original
    set_detect_anomaly(True)
    try:
        assert is_anomaly_enabled()
    finally:
        set_detect_anomaly(False)
    assert Node.__init__ is original

    @detect_anomaly()
    def f():
        return is_anomaly_enabled()

    assert f() and not is_anomaly_enabled()
