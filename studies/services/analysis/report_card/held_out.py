"""Tuned runs on the card and the gate: a run whose configuration names a study split
(``config["split"]``: tuned on its tune documents by a tuner, or a jury weighed on
them) is evaluated on that split's test documents only, and says so ("tuned on N
documents; evaluated on M test documents"). N counts the split's tune and dev
documents (all a tuner may read); M its test documents. A run whose split was since
replaced (``manage.py split --force``) has no known held-out documents: it is evaluated
on every document, and its row says that this is not held-out evidence."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from studies.models import MetricRun, SplitDocument


@dataclass(frozen=True)
class HeldOut:
    """Where a tuned run is evaluated: its split's test document keys (empty and
    ``replaced`` where the split is gone) and how many documents it was tuned on."""

    split: int
    tuned_on: int
    test_keys: frozenset[str]
    replaced: bool = False

    @property
    def text(self) -> str:
        if self.replaced:
            return (
                f"tuned on split {self.split}, since replaced: evaluated on every document "
                "(not held out)"
            )
        return (
            f"tuned on {self.tuned_on} documents; evaluated on {len(self.test_keys)} test documents"
        )

    def as_dict(self) -> dict[str, Any]:
        """What a card row's ``run.tuned`` holds (the API's and the exports' too)."""
        return {
            "split": self.split,
            "tuned_on_documents": self.tuned_on,
            "test_documents": len(self.test_keys),
            "replaced": self.replaced,
            "text": self.text,
        }


def split_of_run(run: MetricRun) -> int | None:
    """The split a run's configuration says it was tuned on, or None."""
    found = (run.config or {}).get("split")
    return found if isinstance(found, int) and not isinstance(found, bool) else None


def held_out(run: MetricRun) -> HeldOut | None:
    """Where ``run`` is evaluated, or None for a run not tuned on a split."""
    split = split_of_run(run)
    if split is None:
        return None
    parts = list(
        SplitDocument.objects.filter(split_id=split).values_list("document__doc_key", "part")
    )
    if not parts:
        return HeldOut(split, 0, frozenset(), replaced=True)
    test = frozenset(key for key, part in parts if part == "test")
    return HeldOut(split, len(parts) - len(test), test)


def held_out_of(runs: list[MetricRun]) -> dict[int, HeldOut]:
    """:func:`held_out` of each tuned run among ``runs``, by run id."""
    found = {run.pk: held_out(run) for run in runs}
    return {pk: h for pk, h in found.items() if h is not None}
