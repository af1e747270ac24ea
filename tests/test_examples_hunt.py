"""Running the examples as a new user would (a helper's hunt, 2026-11-27): every script in
examples/ ran to completion on cpu and lavapipe. The blitz example's accuracy figure moved (0.978
-> 0.975 on cpu) with the day's shuffle-stream and max-pool-tie changes; this checks that its
training itself is torch's, step for step, from the same weights and batches (max-pool ties included: the
ReLU before the pool makes zeros that tie)."""
import importlib.util
import pathlib

import numpy as np
import pytest

import grilly as gp
from grilly import nn, optim


def _load_example(name: str):
    path = pathlib.Path(__file__).resolve().parents[1] / "examples" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"_hunt_{name}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_blitz_example_trains_as_torch(device):
    """The blitz Net with SGD(momentum=0.9) on padded digits: losses and final weights equal
    torch's for the same initial weights and batches."""
    pytest.importorskip("sklearn")
    torch = pytest.importorskip("torch")
    ex = _load_example("blitz_cnn_digits")
    xtr, ytr, _, _ = ex.load_digits_split(160, 0)
    gp.manual_seed(0)
    net = ex.Net().to(device)

    class TorchNet(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv1, self.pool = torch.nn.Conv2d(1, 6, 3), torch.nn.MaxPool2d(2, 2)
            self.conv2 = torch.nn.Conv2d(6, 16, 3)
            self.fc1, self.fc2, self.fc3 = (torch.nn.Linear(144, 120), torch.nn.Linear(120, 84),
                                            torch.nn.Linear(84, 10))

        def forward(self, x):
            x = self.pool(torch.relu(self.conv1(x)))
            x = torch.flatten(torch.relu(self.conv2(x)), 1)
            return self.fc3(torch.relu(self.fc2(torch.relu(self.fc1(x)))))

    tnet = TorchNet()
    tnet.load_state_dict({k: torch.tensor(v.numpy()) for k, v in net.state_dict().items()})
    opt = optim.SGD(net.parameters(), lr=0.02, momentum=0.9)
    topt = torch.optim.SGD(tnet.parameters(), lr=0.02, momentum=0.9)
    order = np.random.default_rng(1).permutation(len(xtr))
    for epoch in range(2):
        for s in range(0, len(xtr), 32):
            i = order[s:s + 32]
            opt.zero_grad()
            loss = nn.CrossEntropyLoss()(net(gp.asarray(xtr[i], device=device)),
                                         gp.asarray(ytr[i], device=device))
            loss.backward()
            opt.step()
            topt.zero_grad()
            tloss = torch.nn.CrossEntropyLoss()(tnet(torch.tensor(xtr[i])), torch.tensor(ytr[i]))
            tloss.backward()
            topt.step()
            np.testing.assert_allclose(loss.item(), tloss.item(), rtol=1e-5, atol=1e-6)
    tsd = tnet.state_dict()
    for k, v in net.state_dict().items():
        np.testing.assert_allclose(v.numpy(), tsd[k].numpy(), rtol=1e-4, atol=1e-5, err_msg=k)
