"""What a report card depends on besides the data: the aspects, the correlation statistic
and level (as the matrix's), the alternative-annotator test's margin ε, the confidence
level of every interval, whether the reference-based baselines get rows, and the human
reference (the annotators, or the adjudicated values: :mod:`.reference`)."""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from typing import Any
from urllib.parse import urlencode

from scoring.stats import Unsupported
from studies.models import Dataset
from studies.services.analysis.params import MatrixParams

DEFAULT_EPSILON = 0.2  # the authors' margin for expert annotators
CONFIDENCES = (0.9, 0.95, 0.99)
ASPECT_CODE = re.compile(r"[A-Za-z0-9_-]{1,32}")


@dataclass(frozen=True)
class CardParams:
    """Everything a report card depends on besides the data. ``aspects``: the aspect
    codes it covers (empty: every judged aspect); ``all_runs``: the reference-based
    baselines (ROUGE, BLEU, chrF, BERTScore) get rows too."""

    level: str = "sample"
    coefficient: str = "spearman"
    epsilon: float = DEFAULT_EPSILON
    confidence: float = 0.95
    aspects: tuple[str, ...] = ()
    all_runs: bool = False
    resamples: int = 1000
    seed: int = 0
    # the study whose split a numeric judge's threshold on a binary aspect is chosen on
    # (None: cross-fitted document halves), and when that split was made (a redone split
    # is another card); see report_card.thresholds
    split: int | None = None
    split_made: str = ""
    # the human reference (see report_card.reference): "humans", or "adjudicated" with
    # whose adjudications (a study's; None: every study's of the dataset) and a
    # fingerprint of their values (they do not change the data version)
    reference: str = "humans"
    reference_study: int | None = None
    adjudicated: str = ""

    @classmethod
    def from_query(cls, query: Mapping[str, Any]) -> CardParams:
        """Parse a page's query (``level``, ``coef``, ``eps``, ``ci``, ``aspects`` as
        comma-separated codes, ``runs=all``, ``reference=adjudicated``); values that are
        not valid fall back to the defaults (the API validates them first, and names the bad one)."""
        matrix = MatrixParams.from_query(query)
        codes = str(query.get("aspects", "") or "").split(",")
        epsilon = parse_epsilon(query.get("eps"))
        confidence = parse_confidence(query.get("ci"))
        return cls(
            level=matrix.level,
            coefficient=matrix.coefficient,
            epsilon=DEFAULT_EPSILON if epsilon is None else epsilon,
            confidence=0.95 if confidence is None else confidence,
            aspects=tuple(sorted({c.strip() for c in codes if ASPECT_CODE.fullmatch(c.strip())})),
            all_runs=query.get("runs") == "all",
            reference="adjudicated" if query.get("reference") == "adjudicated" else "humans",
        )

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CardParams:
        """The parameters a task received (JSON: the aspects came back as a list)."""
        return cls(**{**data, "aspects": tuple(data.get("aspects") or ())})

    @property
    def matrix_params(self) -> MatrixParams:
        """The matrix whose sentinel marks and human ceiling the card shows (its cells'
        correlations and intervals are those of the card at 95 %)."""
        return MatrixParams(
            level=self.level,
            coefficient=self.coefficient,
            resamples=self.resamples,
            seed=self.seed,
        ).applicable()

    @property
    def problem(self) -> Unsupported | None:
        return self.matrix_params.problem

    @property
    def query(self) -> str:
        """The page's choices as a query string, for links that keep them."""
        choices = {"level": self.level, "coef": self.coefficient}
        if self.epsilon != DEFAULT_EPSILON:
            choices["eps"] = f"{self.epsilon:g}"
        if self.confidence != 0.95:
            choices["ci"] = f"{self.confidence:g}"
        if self.aspects:
            choices["aspects"] = ",".join(self.aspects)
        if self.all_runs:
            choices["runs"] = "all"
        if self.split is not None:
            choices["split"] = str(self.split)
        if self.reference != "humans":
            choices["reference"] = self.reference
        if self.reference_study is not None:
            choices["reference_study"] = str(self.reference_study)
        return urlencode(choices)

    def key(self, dataset: Dataset) -> str:
        identity = [dataset.pk, dataset.created_at.isoformat(), dataset.data_version]
        raw = json.dumps([*identity, asdict(self)], sort_keys=True)
        return "card:" + hashlib.sha256(raw.encode()).hexdigest()[:32]

    def on_split(self, split: int | None, made: str = "") -> CardParams:
        """These parameters with their thresholds chosen on study ``split``'s split."""
        return replace(self, split=split, split_made=made if split is not None else "")

    def on_reference(self, study: int | None, adjudicated: str) -> CardParams:
        """These parameters with the adjudications of study ``study`` (None: every study
        of the dataset) whose values' fingerprint is ``adjudicated``; unchanged when the
        reference is the annotators'."""
        if self.reference == "humans":
            return replace(self, reference_study=None, adjudicated="")
        return replace(self, reference_study=study, adjudicated=adjudicated)

    def only(self, aspects: tuple[str, ...]) -> CardParams:
        """These parameters for ``aspects`` alone (a study's)."""
        return replace(self, aspects=tuple(sorted(aspects)))


def parse_epsilon(value: Any) -> float | None:
    """ε, a margin from 0 to 1 (exclusive of 1); None when absent or not one."""
    try:
        epsilon = float(value)
    except (TypeError, ValueError):
        return None
    return epsilon if math.isfinite(epsilon) and 0.0 <= epsilon < 1.0 else None


def parse_confidence(value: Any) -> float | None:
    """One of :data:`CONFIDENCES` (0.95 or 95); None when absent or not one."""
    try:
        confidence = float(value)
    except (TypeError, ValueError):
        return None
    confidence = confidence / 100 if confidence > 1 else confidence
    return next((c for c in CONFIDENCES if math.isclose(c, confidence)), None)
