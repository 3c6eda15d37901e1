"""Task kinds and aspects (the quality dimensions humans and metrics judge), with the
aspects' version history."""

from __future__ import annotations

import re
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


class Aspect(VersionedModel):
    """A quality dimension judged by humans and metrics (e.g. COH, coherence).

    Shared aspects (``owner`` empty: the defaults, edited by admins) are seen by everyone;
    an aspect created by a researcher's import belongs to that researcher. Codes, names
    and keys are unique per owner, and a researcher's may not take a shared one's.
    ``key`` names the aspect in import and export files and never changes; a rename
    keeps the old name in ``aliases``, which imports still accept.
    """

    versioned_fields = ("name", "definition", "scale_min", "scale_max", "anchors")
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
    tasks = models.ManyToManyField(TaskKind, related_name="aspects", blank=True)
    source = models.TextField(blank=True, help_text="Where the definition is from.")

    class Meta:
        ordering = ["code"]
        constraints = [
            models.CheckConstraint(
                condition=Q(scale_min__lt=F("scale_max")), name="aspect_scale_min_below_max"
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
        old_name = getattr(self, "_loaded", {}).get("name")
        if old_name and old_name != self.name and old_name not in self.aliases:
            self.aliases = [*self.aliases, old_name]
        super().save(*args, **kwargs)

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
        if self.owner_id is not None:
            shared = Aspect.objects.filter(owner__isnull=True)
            for field in ("code", "name"):
                if shared.filter(**{f"{field}__iexact": getattr(self, field)}).exists():
                    raise ValidationError({field: f"A shared aspect already uses this {field}."})
        key = self.key or aspect_key(self.name)
        same_scope = Aspect.objects.filter(owner_id=self.owner_id).exclude(pk=self.pk)
        if same_scope.filter(key=key).exists():
            raise ValidationError({"name": f"Another aspect already has the file key {key!r}."})


class AspectVersion(Snapshot):
    """An immutable snapshot of an aspect's text and scale."""

    aspect = models.ForeignKey(Aspect, on_delete=models.CASCADE, related_name="versions")
    name = models.CharField(max_length=100)
    definition = models.TextField()
    scale_min = models.FloatField()
    scale_max = models.FloatField()
    anchors = models.JSONField(default=dict)

    class Meta:
        ordering = ["aspect", "-version"]
        constraints = [
            models.UniqueConstraint(fields=["aspect", "version"], name="aspectversion_unique")
        ]

    def __str__(self) -> str:
        return f"{self.aspect.code} v{self.version}"
