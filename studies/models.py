"""Concordia's domain model: datasets of system outputs, aspects, human judgments,
prompt templates and metric runs with their scores.

Aspects and prompt templates are versioned: every change to the text a metric or an
annotator reads creates a new immutable version row, and runs point at the version
they used, so editing a definition never rewrites history.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import RegexValidator
from django.db import models, transaction
from django.db.models import F, Q

from scoring.prompts import TemplateError, validate_template


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


class VersionedModel(models.Model):
    """Keeps a history row for each change of the fields in ``versioned_fields``.

    ``save()`` compares those fields with the values loaded from the database and,
    when one changed (or on creation), bumps ``version`` and writes a snapshot to
    ``history_model`` in the same transaction. Set ``_changed_by`` to record who.
    """

    versioned_fields: ClassVar[tuple[str, ...]] = ()
    history_model: ClassVar[str] = ""
    history_fk: ClassVar[str] = ""

    version = models.PositiveIntegerField(default=0, editable=False)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        abstract = True

    @classmethod
    def from_db(cls, db: Any, field_names: Any, values: Any) -> Any:
        instance = super().from_db(db, field_names, values)
        instance._loaded = {
            f: getattr(instance, f) for f in cls.versioned_fields if f in field_names
        }
        return instance

    def _snapshot(self) -> dict[str, Any]:
        return {f: getattr(self, f) for f in self.versioned_fields}

    def has_versioned_changes(self) -> bool:
        loaded = getattr(self, "_loaded", None)
        return self._state.adding or loaded is None or loaded != self._snapshot()

    def save(self, *args: Any, **kwargs: Any) -> None:
        with transaction.atomic():
            changed = self.has_versioned_changes()
            if changed:
                self.version = (self.version or 0) + 1
            super().save(*args, **kwargs)
            if changed:
                history = self._meta.apps.get_model("studies", self.history_model)
                history.objects.create(
                    **{self.history_fk: self},
                    version=self.version,
                    created_by=getattr(self, "_changed_by", None),
                    **self._snapshot(),
                )
                self._loaded = self._snapshot()

    def current_version(self) -> Any:
        """The history row matching the current text (both history models use ``versions``)."""
        return self.versions.get(version=self.version)  # type: ignore[attr-defined]


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


class Snapshot(models.Model):
    """Common fields of a version row: its number, when and by whom it was saved."""

    version = models.PositiveIntegerField()
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        abstract = True


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


class PromptTemplate(VersionedModel):
    """A prompt for one task × aspect × scoring dimension of a metric.

    ``text`` is everything before the scored target; ``target`` is what the model is
    scored on (``{hypo}``, ``{ref}``, or a literal such as ``Yes.``; empty for G-Eval,
    which scores the next rating token).
    """

    versioned_fields = ("text", "target")
    history_model = "PromptTemplateVersion"
    history_fk = "template"

    class Kind(models.TextChoices):
        GPTSCORE = "gptscore", "GPTScore"
        GEVAL = "geval", "G-Eval"

    class Dimension(models.TextChoices):
        SRC_HYPO = "src_hypo", "src→hypo"
        REF_HYPO = "ref_hypo", "ref→hypo"
        HYPO_REF = "hypo_ref", "hypo→ref"

    class Setting(models.TextChoices):
        VAL = "VAL", "VAL (no instruction)"
        IST = "IST", "IST (instruction)"

    class Variant(models.TextChoices):
        NONE = "", "—"
        TURN = "turn", "turn-level"
        DIALOGUE = "dialogue", "dialogue-level"

    task = models.ForeignKey(TaskKind, on_delete=models.PROTECT, related_name="templates")
    aspect = models.ForeignKey(
        Aspect,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="templates",
        help_text="Empty for VAL templates, which carry no aspect instruction.",
    )
    dimension = models.CharField(max_length=16, choices=Dimension.choices)
    kind = models.CharField(max_length=16, choices=Kind.choices, default=Kind.GPTSCORE)
    setting = models.CharField(max_length=8, choices=Setting.choices, default=Setting.IST)
    variant = models.CharField(max_length=16, choices=Variant.choices, default="", blank=True)
    text = models.TextField()
    target = models.CharField(max_length=200, blank=True, default="{hypo}")
    source = models.TextField(blank=True)
    notes = models.TextField(blank=True)

    class Meta:
        ordering = ["task", "kind", "aspect", "dimension", "variant"]
        constraints = [
            models.UniqueConstraint(
                fields=["task", "aspect", "dimension", "kind", "setting", "variant"],
                condition=Q(aspect__isnull=False),
                name="template_unique_with_aspect",
            ),
            models.UniqueConstraint(
                fields=["task", "dimension", "kind", "setting", "variant"],
                condition=Q(aspect__isnull=True),
                name="template_unique_without_aspect",
            ),
        ]

    def __str__(self) -> str:
        aspect = self.aspect.code if self.aspect_id else "—"
        return f"{self.kind} {self.task.code} {aspect} {self.dimension} {self.setting}"

    def clean(self) -> None:
        errors = {}
        for field in ("text", "target"):
            try:
                validate_template(getattr(self, field))
            except TemplateError as exc:
                errors[field] = str(exc)
        if errors:
            raise ValidationError(errors)

    def save(self, *args: Any, **kwargs: Any) -> None:
        # Enforced here too, so code paths that skip full_clean() cannot store an unsafe template.
        validate_template(self.text)
        validate_template(self.target)
        super().save(*args, **kwargs)


class PromptTemplateVersion(Snapshot):
    """An immutable snapshot of a prompt template's text."""

    template = models.ForeignKey(PromptTemplate, on_delete=models.CASCADE, related_name="versions")
    text = models.TextField()
    target = models.CharField(max_length=200, blank=True)

    class Meta:
        ordering = ["template", "-version"]
        constraints = [
            models.UniqueConstraint(fields=["template", "version"], name="templateversion_unique")
        ]

    def __str__(self) -> str:
        return f"{self.template} v{self.version}"


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
        constraints = [
            models.UniqueConstraint(
                fields=["owner", "name"],
                condition=Q(owner__isnull=False),
                name="dataset_unique_name_per_owner",
            ),
            models.UniqueConstraint(
                fields=["name"], condition=Q(owner__isnull=True), name="dataset_unique_unowned_name"
            ),
        ]

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


class Study(models.Model):
    """A study of one dataset on chosen aspects, with its members."""

    name = models.CharField(max_length=200)
    dataset = models.ForeignKey(Dataset, on_delete=models.PROTECT, related_name="studies")
    aspects = models.ManyToManyField(Aspect, related_name="studies", blank=True)
    description = models.TextField(blank=True)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="owned_studies"
    )
    members = models.ManyToManyField(
        settings.AUTH_USER_MODEL, through="StudyMember", related_name="studies", blank=True
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        verbose_name_plural = "studies"
        # granted by an admin; lets a researcher create annotator accounts for a study
        permissions = [("create_annotator_accounts", "Can create annotator accounts")]

    def __str__(self) -> str:
        return self.name


class StudyMember(models.Model):
    """A user's role in a study."""

    class Role(models.TextChoices):
        RESEARCHER = "researcher", "Researcher"
        ANNOTATOR = "annotator", "Annotator"

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="study_memberships"
    )
    role = models.CharField(max_length=16, choices=Role.choices)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["study", "user"], name="studymember_unique")]

    def __str__(self) -> str:
        return f"{self.user} ({self.role}) in {self.study}"


class MetricRun(models.Model):
    """One run of a metric over a dataset, with the exact configuration it used."""

    class Kind(models.TextChoices):
        COMPUTED = "computed", "Computed"
        IMPORTED = "imported", "Imported"

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        RUNNING = "running", "Running"
        SUCCEEDED = "succeeded", "Succeeded"
        FAILED = "failed", "Failed"
        CANCELLED = "cancelled", "Cancelled"

    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="runs")
    metric = models.CharField(
        max_length=64, help_text="Registered metric name, or the imported column."
    )
    label = models.CharField(max_length=200, help_text="How tables and exports name this run.")
    kind = models.CharField(max_length=16, choices=Kind.choices, default=Kind.COMPUTED)
    config = models.JSONField(default=dict, blank=True, help_text="Frozen configuration.")
    aspect_version = models.ForeignKey(
        AspectVersion, null=True, blank=True, on_delete=models.PROTECT, related_name="runs"
    )
    template_version = models.ForeignKey(
        PromptTemplateVersion, null=True, blank=True, on_delete=models.PROTECT, related_name="runs"
    )
    steps = models.ForeignKey(
        "EvaluationSteps",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="runs",
        help_text="The G-Eval evaluation steps version a run used.",
    )
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    done = models.PositiveIntegerField(default=0)
    total = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True)
    timings = models.JSONField(default=dict, blank=True)
    provenance = models.JSONField(default=dict, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="Last sign of life: when it was enqueued (PENDING) or its worker last wrote "
        "(RUNNING). The sweeper takes back runs whose heartbeat is too old.",
    )

    class Meta:
        ordering = ["dataset", "label"]
        constraints = [
            models.CheckConstraint(condition=Q(done__lte=F("total")), name="run_done_within_total"),
            models.UniqueConstraint(
                fields=["dataset", "label"],
                condition=Q(kind="imported"),
                name="run_unique_imported_label",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.label} on {self.dataset}"

    @property
    def is_finished(self) -> bool:
        return self.status in {self.Status.SUCCEEDED, self.Status.FAILED, self.Status.CANCELLED}

    @property
    def is_partial(self) -> bool:
        """A computed run that ended without scoring every output (cancelled, failed or
        short): its correlations cover only what it scored."""
        return (
            self.kind == self.Kind.COMPUTED
            and self.is_finished
            and (self.status != self.Status.SUCCEEDED or self.done < self.total)
        )


class RunShard(models.Model):
    """Whole documents of a metric run that one worker scores at a time. Any number of
    workers share a run by claiming its shards (a conditional PENDING → RUNNING update);
    a shard whose worker stops writing is taken back after the run's lease."""

    class Status(models.TextChoices):
        PENDING = "pending"
        RUNNING = "running"
        DONE = "done"

    run = models.ForeignKey(MetricRun, on_delete=models.CASCADE, related_name="shards")
    index = models.PositiveIntegerField()
    doc_keys = models.JSONField(default=list)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    worker = models.CharField(max_length=200, blank=True, help_text="Who holds or finished it.")
    attempts = models.PositiveIntegerField(default=0)
    outputs = models.PositiveIntegerField(default=0, help_text="Outputs scored by its attempts.")
    tokens = models.PositiveBigIntegerField(default=0)
    seconds = models.FloatField(default=0.0)
    heartbeat_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["run", "index"]
        constraints = [
            models.UniqueConstraint(fields=["run", "index"], name="shard_unique_index"),
        ]
        indexes = [models.Index(fields=["run", "status"], name="shard_run_status")]

    def __str__(self) -> str:
        return f"shard {self.index} of run {self.run_id} ({self.status})"


class MetricScore(models.Model):
    """A metric's score of one output in one run; a failure stores ``error``, never 0."""

    run = models.ForeignKey(MetricRun, on_delete=models.CASCADE, related_name="scores")
    output = models.ForeignKey(Output, on_delete=models.CASCADE, related_name="metric_scores")
    value = models.FloatField(null=True, blank=True)
    details = models.JSONField(
        default=dict, blank=True, help_text="e.g. sum, token count, truncation."
    )
    error = models.TextField(blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["run", "output"], name="score_unique_per_run"),
            models.CheckConstraint(
                condition=Q(value__isnull=False) | ~Q(error=""), name="score_value_or_error"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.run.label} {self.output}={self.value}"


class ImportJob(models.Model):
    """An uploaded file waiting for, or done with, its import in a worker."""

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        RUNNING = "running", "Running"
        SUCCEEDED = "succeeded", "Succeeded"
        FAILED = "failed", "Failed"

    upload = models.FileField(upload_to="uploads/%Y/%m/")
    original_name = models.CharField(max_length=255)
    file_format = models.CharField(max_length=8)
    dataset_name = models.SlugField(max_length=100)
    task = models.ForeignKey(TaskKind, on_delete=models.PROTECT, related_name="+")
    create_aspects = models.BooleanField(default=False)
    scale_options = models.JSONField(
        default=dict,
        blank=True,
        help_text='Out-of-scale scores: {"rescale": {"name": [low, high]}, "widen_aspects": bool}.',
    )
    dataset = models.ForeignKey(
        Dataset, null=True, blank=True, on_delete=models.SET_NULL, related_name="import_jobs"
    )
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    summary = models.JSONField(default=dict, blank=True)
    errors = models.JSONField(default=list, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="import_jobs"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(
        null=True, blank=True, help_text="When it was last enqueued or claimed by a worker."
    )
    recoveries = models.PositiveIntegerField(
        default=0, help_text="Times the sweeper enqueued it again because its task was lost."
    )

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"import of {self.original_name} into {self.dataset_name}"

    @property
    def is_finished(self) -> bool:
        return self.status in {self.Status.SUCCEEDED, self.Status.FAILED}


class WorkerHeartbeat(models.Model):
    """Written by the ``heartbeat`` task: proof that a worker took a task and reached the database."""

    hostname = models.CharField(max_length=255)
    pid = models.PositiveIntegerField()
    note = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.hostname}:{self.pid} at {self.created_at:%Y-%m-%d %H:%M:%S}"


class EvaluationSteps(models.Model):
    """G-Eval's evaluation steps for one task × aspect-definition version, one row per
    version: generated once by a model from the task introduction and the criteria
    ("auto chain-of-thought", greedy, seed recorded) or edited by a researcher (an edit
    is a new version; runs point at the version they used)."""

    class Origin(models.TextChoices):
        GENERATED = "generated", "Generated by the model"
        EDITED = "edited", "Edited by a researcher"

    task = models.ForeignKey(TaskKind, on_delete=models.PROTECT, related_name="evaluation_steps")
    aspect_version = models.ForeignKey(
        AspectVersion, on_delete=models.PROTECT, related_name="evaluation_steps"
    )
    version = models.PositiveIntegerField()
    text = models.TextField()
    origin = models.CharField(max_length=16, choices=Origin.choices)
    generation = models.JSONField(
        default=dict,
        blank=True,
        help_text="How generated steps were made: model, its files' sha256, prompt, "
        "greedy decoding, seed, token limit, seconds.",
    )
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="+",
        help_text="Empty for the shared steps; else the researcher whose edit or "
        "generation this is, used by that researcher's runs only.",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["task", "aspect_version", "-version"]
        verbose_name_plural = "evaluation steps"
        constraints = [
            models.UniqueConstraint(
                fields=["task", "aspect_version", "version"], name="evaluationsteps_unique_version"
            ),
            models.CheckConstraint(condition=~Q(text=""), name="evaluationsteps_text_not_empty"),
        ]

    def __str__(self) -> str:
        return f"steps {self.task.code} {self.aspect_version} v{self.version}"


class AllowedModel(models.Model):
    """A hub model id an admin allows researchers to run (besides the installed ones)."""

    hub_id = models.CharField(
        max_length=200,
        unique=True,
        validators=[
            RegexValidator(r"^[\w.-]+/[\w.-]+$|^[\w.-]+$", "A hub id such as 'org/model-name'.")
        ],
    )
    note = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["hub_id"]

    def __str__(self) -> str:
        return self.hub_id
