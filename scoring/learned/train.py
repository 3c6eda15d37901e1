"""The training loop: minibatches of preference pairs, HEAP's loss, validation pairwise
accuracy after each epoch, early stopping with a patience, and a state that can be
saved after any epoch and resumed from.

The loop is the same for both modes; only ``score`` differs: in head mode it reads
frozen features, in full mode it runs the backbone with gradients.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Hashable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import torch

from scoring.learned.config import TrainConfig as TrainConfig  # where callers find it
from scoring.learned.evaluate import pairwise_accuracy
from scoring.learned.head import pair_loss
from scoring.learned.pairs import Pair


@dataclass
class TrainState:
    """Everything needed to go on after an epoch: saved in each checkpoint."""

    epoch: int = 0  # epochs finished
    step: int = 0
    curves: list[dict[str, float]] = field(default_factory=list)
    best_accuracy: float = -1.0
    best_epoch: int = 0
    best_params: dict[str, Any] | None = None
    optimizer: dict[str, Any] | None = None
    stopped: str = ""  # why training ended: "patience", "epochs", "time"

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


Score = Callable[[Sequence[Hashable]], torch.Tensor]
OnEpoch = Callable[[TrainState, dict[str, Any]], bool]  # False: stop now (cancelled)


def fit(
    module: torch.nn.Module,
    score: Score,
    train: Sequence[Pair],
    validation: Sequence[Pair],
    config: TrainConfig,
    *,
    state: TrainState | None = None,
    on_epoch: OnEpoch | None = None,
    on_step: Callable[[TrainState, float], None] | None = None,
) -> TrainState:
    """Train ``module`` (whose parameters ``score`` uses) on ``train``; keep the weights of
    the epoch with the best validation accuracy (loaded back at the end).

    ``state`` resumes a run from a checkpoint: the epoch count, curves, the best weights
    and the optimizer go on from there. Each epoch's shuffle is seeded by (seed, epoch),
    so a resumed run sees the same batches as an uninterrupted one.
    """
    if not train:
        raise ValueError("no training pairs")
    state = state or TrainState()
    params = [p for p in module.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=config.learning_rate, weight_decay=config.weight_decay)
    if state.optimizer:
        optimizer.load_state_dict(state.optimizer)
    started = time.monotonic()
    while state.epoch < config.epochs:
        module.train()
        order = torch.randperm(
            len(train), generator=torch.Generator().manual_seed(config.seed * 1000 + state.epoch)
        ).tolist()
        total, batches = 0.0, 0
        optimizer.zero_grad()
        for b, start in enumerate(range(0, len(order), config.batch_size)):
            batch = [train[k] for k in order[start : start + config.batch_size]]
            keys = [p.good for p in batch] + [p.bad for p in batch]
            r = score(keys)
            loss = pair_loss(r[: len(batch)], r[len(batch) :])
            (loss / config.accumulate).backward()  # type: ignore[no-untyped-call]
            if (b + 1) % config.accumulate == 0 or start + config.batch_size >= len(order):
                optimizer.step()
                optimizer.zero_grad()
                state.step += 1
            total += float(loss.detach())
            batches += 1
            if on_step:
                on_step(state, float(loss.detach()))
        state.epoch += 1
        accuracy = evaluate_pairs(module, score, validation)
        state.curves.append(
            {
                "epoch": state.epoch,
                "loss": total / batches,
                "validation_accuracy": accuracy,
                "step": state.step,
            }
        )
        if accuracy > state.best_accuracy or math.isnan(state.best_accuracy):
            state.best_accuracy, state.best_epoch = accuracy, state.epoch
            state.best_params = {k: v.detach().clone() for k, v in module.state_dict().items()}
        state.optimizer = optimizer.state_dict()
        if state.epoch - state.best_epoch >= config.patience:
            state.stopped = "patience"
        elif config.max_seconds is not None and time.monotonic() - started > config.max_seconds:
            state.stopped = "time"
        elif state.epoch >= config.epochs:
            state.stopped = "epochs"
        if on_epoch is not None and not on_epoch(state, state.curves[-1]):
            state.stopped = "cancelled"
            return state
        if state.stopped:
            break
    if state.best_params is not None:
        module.load_state_dict(state.best_params)
    return state


def evaluate_pairs(module: torch.nn.Module, score: Score, pairs: Sequence[Pair]) -> float:
    """Pairwise accuracy of ``module`` on ``pairs`` (NaN without pairs)."""
    if not pairs:
        return math.nan
    keys = sorted({p.good for p in pairs} | {p.bad for p in pairs}, key=repr)
    module.eval()
    with torch.no_grad():
        values = score(keys).tolist()
    return pairwise_accuracy(dict(zip(keys, values, strict=True)), pairs)
