"""PyTorch-style neural network modules written against the grilly namespace."""
