"""What a correlation matrix depends on besides the data: the level, the statistic and its
options, the resampling, and whose judgments make the human side (:class:`MatrixParams`,
parsed from a page's or command's query), with the statistics' names and labels."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import asdict, dataclass, replace
from typing import Any
from urllib.parse import urlencode

from scoring.stats import TIE_COEFFICIENTS, Average, Coefficient, Level, Unsupported, unsupported
from studies.models import Dataset

COEFFICIENT_NAMES = {
    "pearson": Coefficient.PEARSON,
    "spearman": Coefficient.SPEARMAN,
    "kendall": Coefficient.KENDALL_B,
    "kendall_c": Coefficient.KENDALL_C,
    "kendall_23": Coefficient.KENDALL_23,
    "acc23": Coefficient.ACC23,
    "kendall_like": Coefficient.KENDALL_LIKE,
    "pdp": Coefficient.PDP,
    "spa": Coefficient.SPA,
}
COEFFICIENT_LABELS = {
    Coefficient.PEARSON: "Pearson r",
    Coefficient.SPEARMAN: "Spearman ρ",
    Coefficient.KENDALL_B: "Kendall τ-b",
    Coefficient.KENDALL_C: "Kendall τ-c",
    Coefficient.KENDALL_23: "Kendall τ23",
    Coefficient.ACC23: "Pairwise accuracy acc23",
    Coefficient.KENDALL_LIKE: "Kendall-like τ (WMT20)",
    Coefficient.PDP: "Pairwise difference Pearson",
    Coefficient.SPA: "Soft pairwise accuracy (SPA)",
}
AVERAGES = ("macro", "micro")
SOURCE_PATTERN = re.compile(r"(import|campaign):[0-9]{1,12}|file:[^\x00-\x1f]{1,255}")
DEFAULT_MIN_COVERAGE = 0.9


@dataclass(frozen=True)
class MatrixParams:
    """Everything a matrix depends on besides the data."""

    level: str = "sample"
    coefficient: str = "spearman"
    ci: bool = True
    resamples: int = 1000
    unit: str = "documents"
    seed: int = 0
    policy: str = "skip"
    average: str = "macro"  # sample level: documents count the same (macro) or by size (micro)
    tie_calibration: bool = False  # acc23, kendall_23: metric ties within the best ε
    exclude_flagged: bool = False  # leave out annotators flagged on gold items
    weight_by_competence: bool = False  # mean of judgments weighted by MACE competence
    test_of: int = 0  # a trained metric's id: only its test documents (0: every document)
    # whose judgments make the human side: "" (all), "import:<job id>" (one uploaded
    # file), "file:<name>" (a file imported without a job, e.g. by the import command)
    # or "campaign:<id>" (the answers given in one campaign)
    source: str = ""
    # a run scoring less than this share of a column's judged outputs is greyed, never best
    min_coverage: float = DEFAULT_MIN_COVERAGE

    @classmethod
    def from_query(cls, query: Any) -> MatrixParams:
        """Parse request/command values; unknown ones fall back to the defaults, and an
        option that does not apply to the chosen statistic (tie calibration, micro
        averaging) is dropped. A statistic asked at a level where it does not exist
        stays, for :attr:`problem` to explain."""
        params = cls()
        level = query.get("level", params.level)
        coefficient = query.get("coef", params.coefficient)
        average = query.get("average", params.average)
        test_of = str(query.get("testof", "") or "")
        min_coverage = parse_min_coverage(query.get("mincov"))
        source = str(query.get("source", "") or "")
        return replace(
            params,
            level=level if level in {lv.value for lv in Level} else params.level,
            coefficient=coefficient if coefficient in COEFFICIENT_NAMES else params.coefficient,
            average=average if average in AVERAGES else params.average,
            tie_calibration=query.get("ties") == "calibrate",
            exclude_flagged=query.get("flagged") == "exclude",
            weight_by_competence=query.get("weights") == "competence",
            test_of=int(test_of) if test_of.isdigit() else 0,
            source=source if SOURCE_PATTERN.fullmatch(source) else "",
            min_coverage=params.min_coverage if min_coverage is None else min_coverage,
        ).applicable()

    def applicable(self) -> MatrixParams:
        """These parameters without the options the statistic ignores."""
        params = self
        if params.tie_calibration and self.coefficient_enum not in TIE_COEFFICIENTS:
            params = replace(params, tie_calibration=False)
        if params.average != "macro" and unsupported(
            self.coefficient_enum, self.level_enum, average=Average(params.average)
        ):
            params = replace(params, average="macro")
        return params

    @property
    def problem(self) -> Unsupported | None:
        """Why these parameters name no statistic (e.g. SPA at sample level), or None."""
        return unsupported(
            self.coefficient_enum,
            self.level_enum,
            average=self.average_enum,
            tie_calibration=self.tie_calibration,
        )

    @property
    def level_enum(self) -> Level:
        return Level(self.level)

    @property
    def coefficient_enum(self) -> Coefficient:
        return COEFFICIENT_NAMES[self.coefficient]

    @property
    def average_enum(self) -> Average:
        return Average(self.average)

    @property
    def label(self) -> str:
        """The statistic's name with its options (tie calibration, micro average)."""
        label = COEFFICIENT_LABELS[self.coefficient_enum]
        if self.tie_calibration:
            label += ", tie-calibrated"
        if self.average == "micro":
            label += ", micro-averaged"
        return label

    @property
    def query(self) -> str:
        """The page's choices as a query string, for links that keep them."""
        choices = {"level": self.level, "coef": self.coefficient}
        if self.average != "macro":
            choices["average"] = self.average
        if self.tie_calibration:
            choices["ties"] = "calibrate"
        if self.exclude_flagged:
            choices["flagged"] = "exclude"
        if self.weight_by_competence:
            choices["weights"] = "competence"
        if self.test_of:
            choices["testof"] = str(self.test_of)
        if self.source:
            choices["source"] = self.source
        if self.min_coverage != DEFAULT_MIN_COVERAGE:
            choices["mincov"] = f"{self.min_coverage * 100:g}"
        return urlencode(choices)

    def key(self, dataset: Dataset) -> str:
        # created_at tells apart datasets that reuse a primary key (a rebuilt database)
        identity = [dataset.pk, dataset.created_at.isoformat(), dataset.data_version]
        raw = json.dumps([*identity, asdict(self)], sort_keys=True)
        return "corr:" + hashlib.sha256(raw.encode()).hexdigest()[:32]


def parse_min_coverage(value: Any) -> float | None:
    """``mincov``, a percentage from 0 to 100, as a share; None when absent or not one."""
    try:
        percent = float(value)
    except (TypeError, ValueError):
        return None
    return round(percent / 100, 6) if 0 <= percent <= 100 else None
