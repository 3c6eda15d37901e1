"""The one path that serves human labels to a tuner, and the one that reads held-out
labels to measure a tuned judge.

A tuner gets a :class:`TuneLabels`: it answers for documents of the parts it was opened
on (tune, and dev where the tuner chooses among candidates) and raises
:class:`HeldOutLabel` for any other output, a test document's or one the split never
saw, before reading a single judgment. Test labels are read only by
:func:`held_out_labels`, after a tuner has returned, to measure what it made.

An output's human value is the mean of its judgments on the aspect (every annotator,
account or imported); for a binary aspect, :func:`positive` reads it as 1 where most of
them gave the positive label.

Adjudicated values (:class:`~studies.models.Adjudication`, the split's study's) are gold a
tuner may read through the same refusal: :meth:`TuneLabels.adjudicated` and
:meth:`TuneLabels.gold` answer for tune/dev documents only, never a test document's. A
tuner learns from :meth:`TuneLabels.gold`: the human values (``gold="humans"``, the
default), or with ``gold="adjudicated"`` (the tuning request's ``gold`` option) each
output's adjudicated value where the study has one, its human value elsewhere.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.db.models import Avg

from studies.models import Adjudication, Aspect, Judgment, Output, SplitDocument, StudySplit

LEARNABLE = ("tune", "dev")
GOLDS = ("humans", "adjudicated")  # what a tuner learns from (see the module)


class HeldOutLabel(PermissionError):
    """A tuner asked for the human label of an output it may not see."""


def _parts(split: StudySplit, output_ids: Iterable[int]) -> dict[int, str]:
    """Each output's part ("" where its document is not in the split)."""
    ids = list(output_ids)
    docs = dict(Output.objects.filter(pk__in=ids).values_list("pk", "document_id"))
    parts = dict(
        SplitDocument.objects.filter(split=split, document_id__in=set(docs.values())).values_list(
            "document_id", "part"
        )
    )
    return {pk: parts.get(docs.get(pk, -1), "") for pk in ids}


def _means(aspect: Aspect, output_ids: Iterable[int]) -> dict[int, float]:
    return {
        pk: float(mean)
        for pk, mean in Judgment.objects.filter(aspect=aspect, output_id__in=list(output_ids))
        .values_list("output_id")
        .annotate(mean=Avg("value"))
    }


def _judged_outputs(split: StudySplit, aspect: Aspect, parts: Iterable[str]) -> dict[int, str]:
    rows = Judgment.objects.filter(
        aspect=aspect,
        output__document__split_parts__split=split,
        output__document__split_parts__part__in=list(parts),
    ).values_list("output_id", "output__document__split_parts__part")
    return dict(rows)


class TuneLabels:
    """Human labels of one aspect for the outputs of a split's ``parts`` (tune and/or
    dev), and nothing else; ``gold``: what :meth:`gold` serves (one of :data:`GOLDS`)."""

    def __init__(
        self,
        split: StudySplit,
        aspect: Aspect,
        parts: Iterable[str] = LEARNABLE,
        gold: str = "humans",
    ):
        chosen = tuple(parts)
        if not chosen or any(p not in LEARNABLE for p in chosen):
            raise HeldOutLabel(f"a tuner reads only {' and '.join(LEARNABLE)} labels, not {chosen}")
        if gold not in GOLDS:
            raise ValueError(f"gold must be one of {', '.join(GOLDS)}, not {gold!r}")
        self.split, self.aspect, self.parts, self.source = split, aspect, chosen, gold
        self._outputs = _judged_outputs(split, aspect, chosen)

    def outputs(self, part: str | None = None) -> list[int]:
        """The judged outputs of ``part`` (default: every part this was opened on)."""
        if part is not None and part not in self.parts:
            raise HeldOutLabel(f"this tuner may not read {part!r} labels")
        return sorted(pk for pk, p in self._outputs.items() if part is None or p == part)

    def human(self, output_ids: Iterable[int]) -> dict[int, float]:
        """Each output's mean human value. Raises :class:`HeldOutLabel`, reading nothing,
        when any output is not in this tuner's parts (a test document's above all)."""
        ids = self._allowed(output_ids)
        return _means(self.aspect, ids)

    def adjudicated(self, output_ids: Iterable[int]) -> dict[int, float]:
        """The study's adjudicated value of each output that has one; refused, reading
        nothing, as :meth:`human` is for an output outside this tuner's parts."""
        ids = self._allowed(output_ids)
        rows = Adjudication.objects.filter(
            study_id=self.split.study_id, aspect=self.aspect, output_id__in=ids
        )
        return {pk: float(v) for pk, v in rows.values_list("output_id", "value")}

    def gold(self, output_ids: Iterable[int]) -> dict[int, float]:
        """What a tuner learns from: each output's mean human value, or (``gold``
        "adjudicated") its adjudicated value where the study has one, else its mean human
        value; refused, reading nothing, as :meth:`human` is."""
        ids = self._allowed(output_ids)
        if self.source != "adjudicated":
            return _means(self.aspect, ids)
        return {**_means(self.aspect, ids), **self.adjudicated(ids)}

    def gold_summary(self) -> dict[str, object]:
        """What a tuning records of its gold: which, and how many of the tune/dev outputs
        had an adjudicated value it served."""
        used = self.adjudicated(self.outputs()) if self.source == "adjudicated" else {}
        return {"source": self.source, "adjudicated_outputs": len(used)}

    def _allowed(self, output_ids: Iterable[int]) -> list[int]:
        ids = list(output_ids)
        parts = _parts(self.split, ids)
        refused = sorted(pk for pk, part in parts.items() if part not in self.parts)
        if refused:
            named = ", ".join(f"{pk} ({parts[pk] or 'not in the split'})" for pk in refused[:5])
            raise HeldOutLabel(
                f"{len(refused)} output(s) are outside this tuner's {'/'.join(self.parts)} "
                f"documents: {named}; their human labels are held out"
            )
        return ids


def held_out_labels(split: StudySplit, aspect: Aspect, part: str = "test") -> dict[int, float]:
    """The mean human value of every judged output of ``part``: for measuring a tuned
    judge after it is made, never for a tuner."""
    return _means(aspect, _judged_outputs(split, aspect, [part]))


def positive(aspect: Aspect, value: float) -> float:
    """A binary aspect's value (a label position, or a mean of them) as 1 where the
    positive label has it, else 0."""
    codes = aspect.label_codes()
    at = codes.get(aspect.positive, 1)
    return float(value >= 0.5) if at == 1 else float(value < 0.5)
