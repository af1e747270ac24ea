"""The seed's grilly.utils and functional snippets, run as written (the import path aside).

    python examples/utils_quickstart.py

Uses the Vulkan device where there is one; without one, the Vulkan transfer snippet says why
and the rest runs on the default device (grilly never falls back silently)."""
from __future__ import annotations

import numpy as np

import grilly
import grilly.utils as utils


def main() -> None:
    # Device management
    try:
        device = utils.get_device_manager()
        print("Vulkan devices:", [(d["device"], d["name"], d["type"]) for d in device.devices])
        backend = utils.get_vulkan_backend()
        print("backend:", backend.name)
    except RuntimeError as e:
        print("no Vulkan backend:", e)

    # Tensor conversion
    numpy_array = np.random.randn(4, 3).astype(np.float32)
    try:
        vulkan_tensor = utils.to_vulkan(numpy_array)
        back = utils.from_vulkan(vulkan_tensor)
        print("round trip through", vulkan_tensor.device, "equal:", np.array_equal(back,
                                                                                  numpy_array))
    except RuntimeError as e:
        print(e)

    # PyTorch compatibility
    batch_size, features, hidden_dim = 8, 16, 32
    tensor = utils.tensor([1, 2, 3])
    zeros = utils.zeros((batch_size, features))
    randn = utils.randn((hidden_dim,))
    print("tensor", tensor, "zeros", zeros.shape, "randn", randn.shape)

    # the functional snippet of the seed's README
    linear_layer = grilly.nn.Linear(in_features=768, out_features=512)
    x = np.random.randn(32, 768).astype(np.float32)
    output = grilly.functional.linear(x, linear_layer.weight, linear_layer.bias)
    activated = grilly.functional.relu(output)
    attention = grilly.nn.Attention(embed_dim=512, num_heads=8)
    attended_output = attention(activated)
    print(f"Output shape: {attended_output.shape}")


if __name__ == "__main__":
    main()
