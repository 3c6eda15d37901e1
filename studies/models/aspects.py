"""Task kinds and aspects (the quality dimensions humans and metrics judge), with the
aspects' version history."""

from __future__ import annotations

import re
import unicodedata
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import F, Q

from studies.models.versioning import Snapshot, VersionedModel


class TaskKind(models.Model):
    """A kind of generation task (summarization, dialogue, ...) with its description,
    the task description *d* of GPTScore's prompts."""

    SUMMARIZATION = "summarization"
    DIALOGUE = "dialogue"
    DATA_TO_TEXT = "data_to_text"
    MACHINE_TRANSLATION = "machine_translation"
    CUSTOM = "custom"

    code = models.SlugField(max_length=40, unique=True)
    name = models.CharField(max_length=100)
    description = models.TextField(blank=True)

    class Meta:
        ordering = ["code"]

    def __str__(self) -> str:
        return self.name


def aspect_key(name: str) -> str:
    """The column key of an aspect name: ``"Semantic Coverage"`` → ``"semantic_coverage"``."""
    return re.sub(r"[^0-9a-z]+", "_", name.strip().lower()).strip("_")


MAX_LABELS = 50
MAX_LABEL_LENGTH = 100


def label_text(value: Any) -> str:
    """How a label is read, in an aspect's definition and in an import file: text,
    Unicode NFC, without the white space around it; a whole number as its digits
    (``1``, ``1.0`` and ``"1"`` are the label ``1``)."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return unicodedata.normalize("NFC", str(value)).strip()


class Aspect(VersionedModel):
    """A quality dimension judged by humans and metrics (e.g. COH, coherence).

    Its ``kind`` says what a judgment is: a point of the scale ``scale_min..scale_max``
    (``scale``), or one of the aspect's ``labels``: two for a ``binary`` aspect, one of
    them ``positive`` (pass/fail, yes/no, 0/1), two or more for a ``categorical`` one,
    ``ordered`` or not. A label judgment stores the label's position in ``labels`` as its
    value (0, 1, ...), so every numeric pipeline reads it unchanged; the scale of a label
    aspect is therefore ``0..len(labels) - 1``, set on save. Once judgments exist the
    kind cannot change and the labels they use keep their positions: labels may be
    appended, and unused ones changed (:meth:`clean` says why not).

    Shared aspects (``owner`` empty: the defaults, edited by admins) are seen by everyone;
    an aspect created by a researcher's import belongs to that researcher. Codes, names
    and keys are unique per owner, and a researcher's may not take a shared one's.
    ``key`` names the aspect in import and export files and never changes; a rename
    keeps the old name in ``aliases``, which imports still accept.
    """

    class Kind(models.TextChoices):
        SCALE = "scale", "scale (a number)"
        BINARY = "binary", "binary (two labels, one positive)"
        CATEGORICAL = "categorical", "categorical (a list of labels)"

    versioned_fields = (
        "name",
        "definition",
        "scale_min",
        "scale_max",
        "anchors",
        "kind",
        "labels",
        "positive",
        "ordered",
    )
    history_model = "AspectVersion"
    history_fk = "aspect"

    code = models.CharField(max_length=32, help_text="Short code such as COH.")
    name = models.CharField(max_length=100)
    key = models.CharField(
        max_length=100,
        default="",
        editable=False,
        help_text="The column name in import and export files; set once from the first name.",
    )
    aliases = models.JSONField(
        default=list, blank=True, help_text="Earlier names, still accepted by imports."
    )
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="aspects",
        help_text="Empty for shared aspects; else the researcher whose import created it.",
    )
    definition = models.TextField(help_text="The question annotators and metrics read.")
    scale_min = models.FloatField(default=1)
    scale_max = models.FloatField(default=5)
    anchors = models.JSONField(
        default=dict,
        blank=True,
        help_text='Labels of scale points, e.g. {"1": "bad", "5": "good"}.',
    )
    kind = models.CharField(
        max_length=12,
        choices=Kind.choices,
        default=Kind.SCALE,
        help_text="What a judgment is: a number on the scale, or one of the labels. "
        "Fixed once the aspect has judgments.",
    )
    labels = models.JSONField(
        default=list,
        blank=True,
        help_text='Binary and categorical aspects: the labels in order, e.g. ["fail", '
        '"pass"]. A judgment stores its label\'s position; once judged, labels may only '
        "be appended.",
    )
    positive = models.CharField(
        max_length=MAX_LABEL_LENGTH,
        blank=True,
        default="",
        help_text="Binary aspects: the positive label (the one TPR and precision are of).",
    )
    ordered = models.BooleanField(
        default=False, help_text="Categorical aspects: whether the labels are ordered."
    )
    tasks = models.ManyToManyField(TaskKind, related_name="aspects", blank=True)
    source = models.TextField(blank=True, help_text="Where the definition is from.")

    class Meta:
        ordering = ["code"]
        constraints = [
            models.CheckConstraint(
                condition=Q(scale_min__lt=F("scale_max")), name="aspect_scale_min_below_max"
            ),
            models.CheckConstraint(
                condition=Q(kind__in=["scale", "binary", "categorical"]), name="aspect_kind_known"
            ),
            *[
                constraint
                for field in ("code", "name", "key")
                for constraint in (
                    models.UniqueConstraint(
                        fields=["owner", field],
                        condition=Q(owner__isnull=False),
                        name=f"aspect_unique_{field}_per_owner",
                    ),
                    models.UniqueConstraint(
                        fields=[field],
                        condition=Q(owner__isnull=True),
                        name=f"aspect_unique_shared_{field}",
                    ),
                )
            ],
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.code})"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self.key:
            self.key = aspect_key(self.name)
        if self.is_labelled and isinstance(self.labels, list) and len(self.labels) >= 2:
            # a label judgment stores the label's position
            self.scale_min, self.scale_max = 0.0, float(len(self.labels) - 1)
        old_name = getattr(self, "_loaded", {}).get("name")
        if old_name and old_name != self.name and old_name not in self.aliases:
            self.aliases = [*self.aliases, old_name]
        super().save(*args, **kwargs)

    @property
    def is_labelled(self) -> bool:
        """Whether judgments are labels (binary, categorical), not numbers."""
        return self.kind != self.Kind.SCALE

    @property
    def kind_summary(self) -> str:
        """What an annotator gives on this aspect, in words: ``Likert 1–5``,
        ``pass/fail labels`` (binary: its two labels), ``categorical: a, b, c``."""
        labels = [str(label) for label in self.labels or []]
        if self.kind == self.Kind.BINARY and len(labels) == 2:
            return f"{labels[0]}/{labels[1]} labels"
        if self.kind == self.Kind.CATEGORICAL and labels:
            return f"categorical{' (ordered)' if self.ordered else ''}: {', '.join(labels)}"
        if self.is_labelled:
            return f"{self.kind} labels"
        return f"Likert {self.scale_min:g}–{self.scale_max:g}"

    def label_codes(self) -> dict[str, int]:
        """Label text -> the value a judgment of it stores (its position)."""
        return {label_text(label): k for k, label in enumerate(self.labels or [])}

    def label_of(self, value: float) -> str | None:
        """The label a stored value stands for (None: not a label position)."""
        k = int(value)
        labels = self.labels or []
        return str(labels[k]) if value == k and 0 <= k < len(labels) else None

    def file_names(self) -> set[str]:
        """Every lower-cased name an import file may use for this aspect."""
        names = {self.code, self.name, self.key, *self.aliases}
        return {n.lower() for n in names} | {aspect_key(n) for n in names}

    def clean(self) -> None:
        if not isinstance(self.anchors, dict) or not all(
            isinstance(v, str) for v in self.anchors.values()
        ):
            raise ValidationError(
                {"anchors": 'Anchors must map scale points to labels, e.g. {"1": "bad"}.'}
            )
        # what judgments forbid first: a judged aspect's kind is not a matter of its labels
        refusal = judged_change_refusal(self) if self.pk is not None else {}
        problems = refusal or label_problems(self.kind, self.labels, self.positive, self.ordered)
        if problems:
            raise ValidationError(problems)
        self.labels = [label_text(label) for label in self.labels]
        self.positive = label_text(self.positive) if self.positive else ""
        if self.is_labelled:  # as save() sets it, before the constraints are checked
            self.scale_min, self.scale_max = 0.0, float(len(self.labels) - 1)
        if self.owner_id is not None:
            shared = Aspect.objects.filter(owner__isnull=True)
            for field in ("code", "name"):
                if shared.filter(**{f"{field}__iexact": getattr(self, field)}).exists():
                    raise ValidationError({field: f"A shared aspect already uses this {field}."})
        key = self.key or aspect_key(self.name)
        same_scope = Aspect.objects.filter(owner_id=self.owner_id).exclude(pk=self.pk)
        if same_scope.filter(key=key).exists():
            raise ValidationError({"name": f"Another aspect already has the file key {key!r}."})


def label_problems(kind: str, labels: Any, positive: str, ordered: bool) -> dict[str, str]:
    """What is wrong with an aspect's kind and labels, by field (empty: nothing)."""
    if kind not in Aspect.Kind.values:
        return {"kind": f"Unknown kind {kind!r}: use {', '.join(Aspect.Kind.values)}."}
    if kind == Aspect.Kind.SCALE:
        if labels or positive:
            return {"labels": "A scale aspect has no labels (its judgments are numbers)."}
        return {}
    if not isinstance(labels, list) or not all(
        isinstance(label, str | int) and not isinstance(label, bool) for label in labels
    ):
        return {"labels": 'Labels must be a list of texts, e.g. ["fail", "pass"].'}
    texts = [label_text(label) for label in labels]
    if any(not t for t in texts) or any(len(t) > MAX_LABEL_LENGTH for t in texts):
        return {"labels": f"Each label must be 1 to {MAX_LABEL_LENGTH} characters."}
    if len(set(texts)) != len(texts):
        twice = next(t for t in texts if texts.count(t) > 1)
        return {"labels": f"The label {twice!r} is listed twice."}
    if kind == Aspect.Kind.BINARY:
        if len(texts) != 2:
            return {"labels": f"A binary aspect has exactly two labels, not {len(texts)}."}
        if label_text(positive) not in texts:
            return {"positive": f"Mark one of {texts[0]!r} and {texts[1]!r} as positive."}
        return {}
    if not 2 <= len(texts) <= MAX_LABELS:
        return {"labels": f"A categorical aspect has 2 to {MAX_LABELS} labels."}
    if positive:
        return {"positive": "Only a binary aspect has a positive label."}
    return {}


def judged_change_refusal(aspect: Aspect) -> dict[str, str]:
    """Why the change of ``aspect``'s kind or labels (unsaved) would break its stored
    judgments, by field (empty: it would not). A judgment stores a label's position,
    so the kind stays, and every position a judgment uses keeps its label."""
    stored = Aspect.objects.filter(pk=aspect.pk).values("kind", "labels").first()
    if stored is None:
        return {}
    judged = aspect.judgments.all()  # type: ignore[attr-defined]
    if stored["kind"] != aspect.kind:
        n = judged.count()
        if n:
            return {
                "kind": f"{aspect.code} has {n:,} judgments as a {stored['kind']} aspect; its "
                f"kind cannot change to {aspect.kind} (their values would change meaning). "
                "Create a new aspect instead."
            }
        return {}
    if aspect.kind == Aspect.Kind.SCALE or not isinstance(aspect.labels, list):
        return {}
    before, after = list(stored["labels"] or []), [label_text(x) for x in aspect.labels]
    moved = [k for k in range(len(before)) if k >= len(after) or after[k] != before[k]]
    if not moved:
        return {}
    used = set(
        judged.filter(value__in=[float(k) for k in moved])
        .order_by()
        .values_list("value", flat=True)
        .distinct()
    )
    if not used:
        return {}
    names = ", ".join(repr(before[int(v)]) for v in sorted(used))
    return {
        "labels": f"Judgments of {aspect.code} use the labels {names}, which would be removed "
        "or moved: judged labels keep their positions; append new labels after them."
    }


class AspectVersion(Snapshot):
    """An immutable snapshot of an aspect's text, scale or labels."""

    aspect = models.ForeignKey(Aspect, on_delete=models.CASCADE, related_name="versions")
    name = models.CharField(max_length=100)
    definition = models.TextField()
    scale_min = models.FloatField()
    scale_max = models.FloatField()
    anchors = models.JSONField(default=dict)
    kind = models.CharField(max_length=12, default=Aspect.Kind.SCALE)
    labels = models.JSONField(default=list)
    positive = models.CharField(max_length=MAX_LABEL_LENGTH, blank=True, default="")
    ordered = models.BooleanField(default=False)

    class Meta:
        ordering = ["aspect", "-version"]
        constraints = [
            models.UniqueConstraint(fields=["aspect", "version"], name="aspectversion_unique")
        ]

    def __str__(self) -> str:
        return f"{self.aspect.code} v{self.version}"
