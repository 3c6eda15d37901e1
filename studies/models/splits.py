"""A study's frozen split of its documents into tune / dev / test parts: what tuned
judges may learn from (tune, dev) and what they are measured on (test)."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from studies.models.aspects import Aspect
from studies.models.datasets import Document
from studies.models.studies import Study


class StudySplit(models.Model):
    """A seeded split of a study's documents, stratified by their mean human score on
    ``stratified_by``. Frozen once made: a tuner reads human labels of tune (and dev)
    documents only, and redoing the split (``manage.py split --force``) says which runs
    were tuned or weighed on it."""

    study = models.OneToOneField(Study, on_delete=models.CASCADE, related_name="split")
    seed = models.BigIntegerField()
    dev_share = models.FloatField(default=0.0)
    test_share = models.FloatField()
    stratified_by = models.ForeignKey(
        Aspect,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        help_text="The aspect whose mean human score per document the split is stratified by.",
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=Q(dev_share__gte=0) & Q(test_share__gt=0) & Q(test_share__lt=1),
                name="split_shares_valid",
            ),
        ]

    def __str__(self) -> str:
        return f"split of {self.study} (seed {self.seed})"


class SplitDocument(models.Model):
    """One document's part in a split."""

    class Part(models.TextChoices):
        TUNE = "tune", "tune"
        DEV = "dev", "dev"
        TEST = "test", "test"

    split = models.ForeignKey(StudySplit, on_delete=models.CASCADE, related_name="documents")
    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="split_parts")
    part = models.CharField(max_length=8, choices=Part.choices)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["split", "document"], name="split_document_unique"),
        ]
        indexes = [models.Index(fields=["split", "part"], name="split_part")]

    def __str__(self) -> str:
        return f"{self.document} in {self.part}"
