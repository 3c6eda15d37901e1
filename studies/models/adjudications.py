"""Adjudicated labels: a researcher's decision on an output where a judge and the humans,
or the humans among themselves, disagree. A source of its own, beside the judgments it
settles, which it never changes."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from studies.models.aspects import Aspect
from studies.models.datasets import Output
from studies.models.runs import MetricRun
from studies.models.studies import Study


class Adjudication(models.Model):
    """One adjudicated value of an output on an aspect in a study: a point of a scale
    aspect's scale, or a label's position (as a :class:`Judgment`'s ``value``). One per
    (study, output, aspect): adjudicating again replaces the decision, never a judgment.
    ``run`` is the judge whose disagreement queue it was decided from (kept as a note)."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="adjudications")
    output = models.ForeignKey(Output, on_delete=models.CASCADE, related_name="adjudications")
    aspect = models.ForeignKey(Aspect, on_delete=models.PROTECT, related_name="adjudications")
    value = models.FloatField()
    run = models.ForeignKey(
        MetricRun, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    adjudicator = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="adjudications"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["study", "output", "aspect"], name="adjudication_unique_per_study"
            ),
        ]
        indexes = [models.Index(fields=["aspect", "output"], name="adjudication_aspect_output")]

    def __str__(self) -> str:
        return f"{self.output} {self.aspect.code}={self.value} (adjudicated)"
