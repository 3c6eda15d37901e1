"""Does a G-Eval model follow the form? Signs, read from a run's stored label
distributions, that the model is too small to answer with a rating.

Three checks, each with its threshold (a warning, never a change to the scores):

* **label mass**: the median share of the next-token probability that the model put on
  the rating labels at all (for sampled runs, the share of answers that named a label).
  Below :data:`LABEL_MASS_MIN` (50 %) the model mostly answers the form with something
  else than a rating, and the normalised distribution is built from crumbs.
* **flatness**: the median entropy of the normalised distribution over the labels, as a
  share of its maximum ln K. Above :data:`FLATNESS_MAX` (75 %) the distributions are
  close to uniform: an even split between two neighbouring labels of a 1–5 scale is
  43 %, between three 68 %, so above 75 % the model barely prefers any rating.
* **one argmax**: the share of outputs whose most probable label is the commonest one.
  From :data:`SAME_ARGMAX_MAX` (90 %), with at least :data:`MIN_OUTPUTS` outputs, the
  argmax score cannot tell the outputs apart (SmolLM2-135M-Instruct gives ``1`` to
  every output of the demo).
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

LABEL_MASS_MIN = 0.5
FLATNESS_MAX = 0.75
SAME_ARGMAX_MAX = 0.9
MIN_OUTPUTS = 10


@dataclass(frozen=True)
class FormCheck:
    """Medians over a run's outputs, and the problems found (empty: no warning)."""

    n_outputs: int
    n_labels: int
    label_mass: float | None  # median; None when no output recorded it
    entropy: float  # median, in nats
    flatness: float  # median entropy / ln(n_labels)
    top_label: str  # the commonest most probable label
    top_share: float  # share of outputs whose most probable label it is
    problems: tuple[str, ...]

    @property
    def warns(self) -> bool:
        return bool(self.problems)


def _ordered(distribution: Mapping[str, float]) -> list[tuple[str, float]]:
    """Labels in scale order (a database may store a JSON object's keys in any order)."""

    def number(label: str) -> float:
        try:
            return float(label)
        except ValueError:
            return math.inf

    return sorted(distribution.items(), key=lambda kv: (number(kv[0]), kv[0]))


def _entropy(probs: Sequence[float]) -> float:
    return -math.fsum(p * math.log(p) for p in probs if p > 0)


def check_distributions(
    distributions: Sequence[Mapping[str, float]], label_masses: Sequence[float | None]
) -> FormCheck | None:
    """Check aligned lists of label distributions and label masses (``None`` where not
    recorded). ``None`` when there is no distribution of two or more labels."""
    if len(distributions) != len(label_masses):
        raise ValueError("one label mass (or None) per distribution is needed")
    kept = [(_ordered(d), m) for d, m in zip(distributions, label_masses, strict=True)]
    kept = [(d, m) for d, m in kept if len(d) >= 2]
    if not kept:
        return None
    n_labels = max(len(d) for d, _ in kept)
    entropies = [_entropy([p for _, p in d]) for d, _ in kept]
    flatness = [h / math.log(len(d)) for h, (d, _) in zip(entropies, kept, strict=True)]
    tops = Counter(max(d, key=lambda kv: kv[1])[0] for d, _ in kept)  # first label on ties
    top_label, top_count = tops.most_common(1)[0]
    masses = [m for _, m in kept if m is not None]
    mass = statistics.median(masses) if masses else None
    check = FormCheck(
        n_outputs=len(kept),
        n_labels=n_labels,
        label_mass=mass,
        entropy=statistics.median(entropies),
        flatness=statistics.median(flatness),
        top_label=top_label,
        top_share=top_count / len(kept),
        problems=(),
    )
    return replace(check, problems=_problems(check))


def _problems(check: FormCheck) -> tuple[str, ...]:
    problems = []
    if check.label_mass is not None and check.label_mass < LABEL_MASS_MIN:
        problems.append(
            f"a median {check.label_mass:.1%} of the model's probability went to the rating "
            f"labels (warning below {LABEL_MASS_MIN:.0%}): it mostly answers the form with "
            "something other than a rating"
        )
    if check.flatness > FLATNESS_MAX:
        problems.append(
            f"its label distributions are nearly flat: median entropy {check.entropy:.2f} "
            f"nats, {check.flatness:.0%} of the maximum ln {check.n_labels} = "
            f"{math.log(check.n_labels):.2f} (warning above {FLATNESS_MAX:.0%})"
        )
    if check.n_outputs >= MIN_OUTPUTS and check.top_share >= SAME_ARGMAX_MAX:
        problems.append(
            f"the most probable label is {check.top_label} for {check.top_share:.0%} of the "
            f"{check.n_outputs} outputs (warning from {SAME_ARGMAX_MAX:.0%}, with at least "
            f"{MIN_OUTPUTS} outputs)"
        )
    return tuple(problems)
