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
    source_info = models.JSONField(
        default=dict,
        blank=True,
        help_text="Where a loaded benchmark or converted export came from: title, licence, "
        "citation, homepage, provenance (load_benchmark; shown on the dataset's page).",
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
    references = models.JSONField(
        null=True,
        blank=True,
        help_text="This output's own references, where its line gave others than its "
        "document's (an output that is itself a reference is scored against the others); "
        "null: the document's.",
    )

    class Meta:
        ordering = ["document", "system_id"]
        constraints = [
            models.UniqueConstraint(fields=["document", "system_id"], name="output_unique_system")
        ]

    def __str__(self) -> str:
        return f"{self.document.doc_key}/{self.system_id}"

    def reference_texts(self) -> list[str]:
        """The references this output is scored against: its own, else its document's."""
        own = self.references
        return list(own) if own is not None else list(self.document.references or [])


MAX_RATER_LENGTH = 100


class Judgment(models.Model):
    """A human score of one output on one aspect, made by an annotator account or
    imported from a file (``import_file`` names it; ``rater``, the file's annotator when
    the file names one per judgment, else empty: the file as one annotator).

    ``value`` is a number on a scale aspect's scale, or the position of a label in a
    binary or categorical aspect's ``labels``. Who made it, as the analysis tells
    annotators apart, is :func:`studies.services.annotators.identity`."""

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
    rater = models.CharField(
        max_length=MAX_RATER_LENGTH,
        blank=True,
        default="",
        help_text="An imported judgment's annotator, as the file names them (per file: "
        "no account); empty when the file gives one value per output.",
    )
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
                condition=(Q(annotator__isnull=False) & Q(import_file="") & Q(rater=""))
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
                fields=["output", "aspect", "import_file", "rater"],
                condition=Q(annotator__isnull=True),
                name="judgment_unique_per_import_rater",
            ),
        ]
        indexes = [models.Index(fields=["aspect", "output"], name="judgment_aspect_output")]

    def __str__(self) -> str:
        return f"{self.output} {self.aspect.code}={self.value}"

    @property
    def made_by(self) -> str:
        if self.annotator_id:
            return str(self.annotator.get_username())
        return f"{self.rater} ({self.import_file})" if self.rater else f"import: {self.import_file}"


class ImportedPreference(models.Model):
    """A pairwise human judgment: one annotator's preference between two outputs of one
    document on one aspect, imported from a pairs file (a campaign's pairwise answers
    are ``annotation.PairwiseJudgment``): ``winner`` is ``a`` (``output_a`` is better), ``b`` or
    ``tie``, in the order the file gives (the order the annotator saw them in, where the
    source says). The annotator is ``rater`` of ``import_file``, as for a
    :class:`Judgment`; lines that share the pair and the aspect are one item judged by
    several annotators."""

    class Winner(models.TextChoices):
        A = "a", "a"
        B = "b", "b"
        TIE = "tie", "tie"

    output_a = models.ForeignKey(Output, on_delete=models.CASCADE, related_name="preferences_as_a")
    output_b = models.ForeignKey(Output, on_delete=models.CASCADE, related_name="preferences_as_b")
    aspect = models.ForeignKey(
        Aspect, on_delete=models.PROTECT, related_name="imported_preferences"
    )
    winner = models.CharField(max_length=3, choices=Winner.choices)
    import_file = models.CharField(max_length=255)
    rater = models.CharField(max_length=MAX_RATER_LENGTH, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=~Q(output_a=F("output_b")), name="preference_two_outputs"
            ),
            models.CheckConstraint(
                condition=Q(winner__in=["a", "b", "tie"]), name="preference_winner_known"
            ),
            models.CheckConstraint(condition=~Q(import_file=""), name="preference_from_a_file"),
            models.UniqueConstraint(
                fields=["output_a", "output_b", "aspect", "import_file", "rater"],
                name="preference_unique_per_import_rater",
            ),
        ]
        indexes = [models.Index(fields=["aspect", "output_a"], name="preference_aspect_output")]

    def __str__(self) -> str:
        return f"{self.output_a} vs {self.output_b} {self.aspect.code}: {self.winner}"

    @property
    def vote(self) -> int:
        """1 when ``output_a`` is better, 0 for a tie, -1 when ``output_b`` is."""
        return {"a": 1, "tie": 0, "b": -1}[self.winner]
