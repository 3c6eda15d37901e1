"""A trained metric loaded for scoring: its backbone (with the fine-tuned weights in full
mode), its head and the shared feature cache."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings

from learned.services.training import feature_cache, load_backbone
from scoring.learned.checkpoint import load_checkpoint
from scoring.learned.head import RewardHead
from scoring.learned.scorer import LearnedScorer


def load_trained(checkpoint: str, sha256: str) -> LearnedScorer:
    """Read the checkpoint (refused if its sha256 changed) and build the scorer."""
    payload = load_checkpoint(Path(settings.DATA_DIR) / checkpoint, sha256)
    config = payload["config"]
    backbone = load_backbone(config)
    head = RewardHead(**payload["head_config"])
    head.load_state_dict(payload["head"])
    if "backbone" in payload:  # full mode: fine-tuned weights, so cached features do not apply
        backbone.model.load_state_dict(payload["backbone"])
        return LearnedScorer(backbone, head)
    return LearnedScorer(backbone, head, feature_cache(config))
