"""Datasets: documents, the systems' outputs for them and the human judgments of
those outputs."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import F, Q

from studies.models.aspects import Aspect, TaskKind


def unique_name_per_owner(per_owner: str, unowned: str) -> list[models.UniqueConstraint]:
    """Names unique per owner, and among the rows with no owner (the constraints'
    names): datasets and served endpoints."""
    return [
        models.UniqueConstraint(
            fields=["owner", "name"], condition=Q(owner__isnull=False), name=per_owner
        ),
        models.UniqueConstraint(fields=["name"], condition=Q(owner__isnull=True), name=unowned),
    ]


class Dataset(models.Model):
    """A set of documents with the outputs of several systems for each. Names are unique
    per owner: pages address a dataset by id, commands by id, ``owner/name`` or name."""

    name = models.SlugField(max_length=100)
    task = models.ForeignKey(TaskKind, on_delete=models.PROTECT, related_name="datasets")
    description = models.TextField(blank=True)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="datasets",
    )
    data_version = models.PositiveBigIntegerField(
        default=0,
        editable=False,
        help_text="Bumped whenever its outputs, judgments or metric scores change; "
        "cached correlations are keyed by it.",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name", "pk"]
        constraints = unique_name_per_owner(
            "dataset_unique_name_per_owner", "dataset_unique_unowned_name"
        )

    def __str__(self) -> str:
        return self.name

    def bump_data_version(self) -> None:
        """Invalidate cached results: call in the transaction that changes the data."""
        Dataset.objects.filter(pk=self.pk).update(data_version=F("data_version") + 1)


class Document(models.Model):
    """A source with its references (the papers' "sample"), keyed by ``doc_key``."""

    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="documents")
    doc_key = models.CharField(max_length=255)
    source = models.TextField()
    references = models.JSONField(default=list, blank=True)
    context = models.JSONField(null=True, blank=True, help_text="e.g. the dialogue history.")

    class Meta:
        ordering = ["dataset", "doc_key"]
        constraints = [
            models.UniqueConstraint(fields=["dataset", "doc_key"], name="document_unique_key")
        ]

    def __str__(self) -> str:
        return self.doc_key


class Output(models.Model):
    """One system's text for one document (the papers' "hypothesis")."""

    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="outputs")
    system_id = models.CharField(max_length=255)
    text = models.TextField()

    class Meta:
        ordering = ["document", "system_id"]
        constraints = [
            models.UniqueConstraint(fields=["document", "system_id"], name="output_unique_system")
        ]

    def __str__(self) -> str:
        return f"{self.document.doc_key}/{self.system_id}"


class Judgment(models.Model):
    """A human score of one output on one aspect, made by an annotator account or
    imported from a file (``import_file`` names it)."""

    output = models.ForeignKey(Output, on_delete=models.CASCADE, related_name="judgments")
    aspect = models.ForeignKey(Aspect, on_delete=models.PROTECT, related_name="judgments")
    value = models.FloatField()
    annotator = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="judgments",
    )
    import_file = models.CharField(max_length=255, blank=True, default="")
    aspect_version = models.ForeignKey(
        "AspectVersion",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="judgments",
        help_text="The aspect's definition the annotator saw (a campaign answer: the version "
        "current when the item was handed out); empty for imported and older rows.",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=(Q(annotator__isnull=False) & Q(import_file=""))
                | (Q(annotator__isnull=True) & ~Q(import_file="")),
                name="judgment_one_source",
            ),
            # output first: lookups go by output ids (imports, annotation pages)
            models.UniqueConstraint(
                fields=["output", "aspect", "annotator"],
                condition=Q(annotator__isnull=False),
                name="judgment_unique_per_annotator",
            ),
            models.UniqueConstraint(
                fields=["output", "aspect", "import_file"],
                condition=Q(annotator__isnull=True),
                name="judgment_unique_per_import",
            ),
        ]
        indexes = [models.Index(fields=["aspect", "output"], name="judgment_aspect_output")]

    def __str__(self) -> str:
        return f"{self.output} {self.aspect.code}={self.value}"

    @property
    def made_by(self) -> str:
        return self.annotator.get_username() if self.annotator_id else f"import: {self.import_file}"
