"""A three-layer perceptron: Linear, ReLU, Linear, ReLU, Linear."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_features: int, hidden_features: int, out_features: int):
        super().__init__()
        self.fc1 = nn.Linear(in_features, hidden_features)
        self.fc2 = nn.Linear(hidden_features, hidden_features)
        self.fc3 = nn.Linear(hidden_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.fc1(x))
        x = torch.relu(self.fc2(x))
        return self.fc3(x)


# Sizes for the GPU.
batch_size = 1024
in_features = 1024
hidden_features = 4096
out_features = 1024

# Small sizes for CPU checks in the Triton interpreter.
SMALL_SIZES = {"batch_size": 5, "in_features": 19, "hidden_features": 70, "out_features": 11}


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, hidden_features, out_features]
