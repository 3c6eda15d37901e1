"""A trained metric in use: the backbone, the head and the instruction, turning an output
(with its source or dialogue history) into a score."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from scoring.learned.backbone import Backbone
from scoring.learned.cache import FeatureCache
from scoring.learned.head import RewardHead
from scoring.learned.inputs import Formatted, format_input
from scoring.metrics.base import Item


def context_of(item: Item) -> str:
    """The context an output answers: the dialogue history when there is one, else the source."""
    return "\n".join(item.history) if item.history else item.source


@dataclass
class LearnedScorer:
    """Scores inputs with a (frozen) backbone and a trained head."""

    backbone: Backbone
    head: RewardHead
    cache: FeatureCache | None = None

    def format(self, instruction: str, items: Sequence[Item]) -> list[Formatted]:
        return [
            format_input(
                instruction,
                context_of(i),
                i.hypothesis,
                count=self.backbone.count,
                limit=self.backbone.max_length,
            )
            for i in items
        ]

    def features(self, inputs: Sequence[Formatted]) -> np.ndarray[Any, Any]:
        def compute(chunk: Sequence[Formatted]) -> np.ndarray[Any, Any]:
            return np.asarray(self.backbone.features(chunk).cpu().numpy())

        if self.cache is None:
            return compute(inputs)
        return self.cache.features(inputs, compute)

    def score(self, instruction: str, items: Sequence[Item]) -> list[float]:
        """One score per item, in order."""
        if not items:
            return []
        vectors = torch.from_numpy(self.features(self.format(instruction, items)))
        self.head.eval()
        with torch.no_grad():
            values: list[float] = self.head(
                vectors.to(next(self.head.parameters()).device)
            ).tolist()
        return values
