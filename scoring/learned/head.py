"""The scalar head on a backbone's features, and the pairwise loss."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn


class RewardHead(nn.Module):
    """r = w · standardise(x) + b, or a small MLP (one hidden GELU layer) when ``hidden``.

    The feature mean and scale are buffers set from the training features
    (:meth:`fit_scaling`), so a checkpoint carries them and scoring needs nothing else.
    """

    def __init__(self, dim: int, hidden: int = 0) -> None:
        super().__init__()
        self.dim = dim
        self.hidden = hidden
        self.mean: torch.Tensor
        self.scale: torch.Tensor
        self.register_buffer("mean", torch.zeros(dim))
        self.register_buffer("scale", torch.ones(dim))
        self.net: nn.Module = (
            nn.Sequential(nn.Linear(dim, hidden), nn.GELU(), nn.Linear(hidden, 1))
            if hidden
            else nn.Linear(dim, 1)
        )

    @property
    def kind(self) -> str:
        return f"mlp-{self.hidden}" if self.hidden else "linear"

    def fit_scaling(self, features: torch.Tensor) -> None:
        """Standardise by the given (training) features' mean and standard deviation."""
        with torch.no_grad():
            self.mean.copy_(features.mean(0))
            self.scale.copy_(features.std(0).clamp(min=1e-6))

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.net((features - self.mean) / self.scale).squeeze(-1)
        return out


def pair_loss(r_good: torch.Tensor, r_bad: torch.Tensor) -> torch.Tensor:
    """HEAP's loss, mean over pairs: log(1 + exp(r_bad − r_good)) (softplus, stable)."""
    loss: torch.Tensor = nn.functional.softplus(r_bad - r_good).mean()
    return loss


def describe(head: RewardHead) -> dict[str, Any]:
    return {"kind": head.kind, "dim": head.dim, "hidden": head.hidden}
