"""A training job's hyperparameters, apart from the training loop (:mod:`.train`) so that
what only reads or writes them (the job's form, its stored copy) never imports torch."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class TrainConfig:
    """Hyperparameters, frozen with the job."""

    learning_rate: float = 1e-3
    weight_decay: float = 1e-2
    batch_size: int = 64  # pairs per step
    accumulate: int = 1  # gradient accumulation (full mode: the paper's 4 to 128)
    epochs: int = 40
    patience: int = 5  # epochs without a better validation accuracy before stopping
    seed: int = 0
    max_seconds: float | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)
