"""Annotation campaigns and their work queue.

A :class:`Campaign` puts items (one output for Likert, two outputs of the same document
for pairwise) in front of invited annotators. Each annotator's claim on an item is an
:class:`Assignment`: a short lease first, then done or skipped. Likert answers are stored
as ``studies.Judgment`` rows (so the dashboards read them like imported judgments);
pairwise answers as :class:`PairwiseJudgment`. Every changed answer leaves an
:class:`AnswerRevision`.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import F, Q

from studies.models import Aspect, Document, MetricRun, Output, Study


class Campaign(models.Model):
    """A researcher's request for judgments of chosen outputs on chosen aspects."""

    class Mode(models.TextChoices):
        LIKERT = "likert", "Likert (one output, a score per aspect)"
        PAIRWISE = "pairwise", "Pairwise (two outputs, the better one per aspect)"

    class Selection(models.TextChoices):
        ALL = "all", "All outputs"
        RANDOM = "random", "A random subset (seeded)"
        SYSTEMS = "systems", "Chosen systems"

    class Status(models.TextChoices):
        OPEN = "open", "Open"
        CLOSED = "closed", "Closed"

    class Routing(models.TextChoices):
        RANDOM = "random", "Random (the seeded queue order)"
        INFORMATIVE = (
            "informative",
            "Informative first (where the question's interval narrows most)",
        )

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="campaigns")
    name = models.CharField(max_length=200)
    mode = models.CharField(max_length=16, choices=Mode.choices, default=Mode.LIKERT)
    aspects = models.ManyToManyField(Aspect, related_name="campaigns")
    overlap = models.PositiveSmallIntegerField(default=3, help_text="Annotators per item.")
    show_references = models.BooleanField(default=False)
    selection = models.CharField(max_length=16, choices=Selection.choices, default=Selection.ALL)
    systems = models.JSONField(default=list, blank=True, help_text="Systems kept (empty: all).")
    sample_size = models.PositiveIntegerField(null=True, blank=True)
    seed = models.IntegerField(default=0, help_text="Seeds the subset, queue order and sides.")
    lease_seconds = models.PositiveIntegerField(default=300)
    gold_threshold = models.FloatField(
        default=0.7, help_text="Annotators whose gold agreement is below this are flagged."
    )
    gold_min_answers = models.PositiveSmallIntegerField(default=1)
    annotators = models.ManyToManyField(
        settings.AUTH_USER_MODEL, through="CampaignAnnotator", related_name="campaigns"
    )
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.OPEN)
    routing = models.CharField(max_length=16, choices=Routing.choices, default=Routing.RANDOM)
    # The question informative routing serves: run A vs run B on one aspect (sample-level
    # Spearman). Deleting a run leaves the campaign in the seeded random order.
    question_run_a = models.ForeignKey(
        MetricRun, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    question_run_b = models.ForeignKey(
        MetricRun, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    question_aspect = models.ForeignKey(
        Aspect, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(condition=Q(overlap__gte=1), name="campaign_overlap_positive"),
            models.CheckConstraint(
                condition=Q(gold_threshold__gte=0) & Q(gold_threshold__lte=1),
                name="campaign_gold_threshold_fraction",
            ),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def is_open(self) -> bool:
        return self.status == self.Status.OPEN

    @property
    def is_pairwise(self) -> bool:
        return self.mode == self.Mode.PAIRWISE

    @property
    def is_informative(self) -> bool:
        """Informative-first routing with its question still complete."""
        return self.routing == self.Routing.INFORMATIVE and None not in (
            self.question_run_a_id,
            self.question_run_b_id,
            self.question_aspect_id,
        )

    @property
    def mode_summary(self) -> str:
        """The campaign's kind of judgment in words: pairwise, Likert, or (one output per
        item with a label aspect among its aspects) each aspect's kind instead of
        “Likert” (``Faithful: pass/fail labels · Coherence: Likert 1–5``)."""
        if self.is_pairwise:
            return str(self.get_mode_display())
        aspects = self.aspect_list()
        if not any(a.is_labelled for a in aspects):
            return str(self.get_mode_display())
        return "One output · " + " · ".join(f"{a.name}: {a.kind_summary}" for a in aspects)

    def aspect_list(self) -> list[Aspect]:
        """The campaign's aspects by code, read once per instance."""
        if not hasattr(self, "_aspect_list"):
            if "aspects" in getattr(self, "_prefetched_objects_cache", {}):  # a list page's
                self._aspect_list = sorted(self.aspects.all(), key=lambda a: a.code)
            else:
                self._aspect_list = list(self.aspects.order_by("code"))
        return self._aspect_list


class CampaignAnnotator(models.Model):
    """An invited annotator of a campaign."""

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="invitations")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    invited_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["campaign", "user"], name="campaignannotator_unique")
        ]

    def __str__(self) -> str:
        return f"{self.user} in {self.campaign}"


class Item(models.Model):
    """One unit of work: an output (Likert) or two outputs of a document (pairwise,
    stored in id order as A and B; each annotator sees its own random sides)."""

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="items")
    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="+")
    output_a = models.ForeignKey(Output, on_delete=models.CASCADE, related_name="+")
    output_b = models.ForeignKey(
        Output, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    system_key = models.CharField(max_length=512, help_text="System, or 'A vs B' for pairs.")
    position = models.PositiveIntegerField(help_text="Seeded random queue order.")
    gold_answer = models.JSONField(
        null=True,
        blank=True,
        help_text='Expected answers by aspect id, e.g. {"3": 4} or {"3": "a"}.',
    )
    gold_tolerance = models.FloatField(default=0)

    class Meta:
        ordering = ["campaign", "position"]
        constraints = [
            models.UniqueConstraint(
                fields=["campaign", "output_a"],
                condition=Q(output_b__isnull=True),
                name="item_unique_output",
            ),
            models.UniqueConstraint(
                fields=["campaign", "output_a", "output_b"],
                condition=Q(output_b__isnull=False),
                name="item_unique_pair",
            ),
            models.CheckConstraint(
                condition=Q(output_b__isnull=True) | Q(output_a__lt=F("output_b")),
                name="item_pair_in_id_order",
            ),
            models.CheckConstraint(condition=Q(gold_tolerance__gte=0), name="item_tolerance_ok"),
        ]
        indexes = [models.Index(fields=["campaign", "position"], name="item_queue")]

    def __str__(self) -> str:
        return f"item {self.pk} ({self.system_key}) of {self.campaign}"

    @property
    def is_gold(self) -> bool:
        return self.gold_answer is not None


class Assignment(models.Model):
    """An annotator's claim on an item: a lease until ``expires_at``, then done or
    skipped. Done assignments and unexpired leases count towards the overlap."""

    class Status(models.TextChoices):
        LEASED = "leased", "Leased"
        DONE = "done", "Done"
        SKIPPED = "skipped", "Skipped"

    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="assignments")
    annotator = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="assignments"
    )
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.LEASED)
    left_is_a = models.BooleanField(
        default=True, help_text="Pairwise: whether output A was shown on the left."
    )
    leased_at = models.DateTimeField()
    expires_at = models.DateTimeField()
    submitted_at = models.DateTimeField(null=True, blank=True)
    seconds = models.FloatField(null=True, blank=True, help_text="Lease to first answer.")
    skip_reason = models.CharField(max_length=500, blank=True)
    comment = models.CharField(
        max_length=1000, blank=True, default="", help_text="The annotator's optional note."
    )
    routing_score = models.FloatField(
        null=True, blank=True, help_text="Informative routing: the item's score when handed out."
    )
    routing_reason = models.CharField(
        max_length=300, blank=True, help_text="Informative routing: why the item was handed out."
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["item", "annotator"], name="assignment_unique")
        ]
        indexes = [
            models.Index(fields=["item", "status", "expires_at"], name="assignment_active"),
            models.Index(fields=["annotator", "status"], name="assignment_annotator"),
        ]

    def __str__(self) -> str:
        return f"{self.annotator} {self.status} {self.item_id}"


class PairwiseJudgment(models.Model):
    """Which of a pair's outputs an annotator preferred on an aspect (A, B or a tie)."""

    class Choice(models.TextChoices):
        A = "a", "A better"
        B = "b", "B better"
        TIE = "tie", "Tie"

    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="pairwise_judgments")
    aspect = models.ForeignKey(Aspect, on_delete=models.PROTECT, related_name="+")
    annotator = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    choice = models.CharField(max_length=3, choices=Choice.choices)
    left_output = models.ForeignKey(Output, on_delete=models.CASCADE, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["item", "aspect", "annotator"], name="pairwise_unique_per_annotator"
            )
        ]

    def __str__(self) -> str:
        return f"{self.item_id} {self.aspect_id} {self.choice}"


class AnswerRevision(models.Model):
    """Every distinct answer an annotator gave for an item and aspect, oldest first."""

    assignment = models.ForeignKey(Assignment, on_delete=models.CASCADE, related_name="revisions")
    aspect = models.ForeignKey(Aspect, on_delete=models.PROTECT, related_name="+")
    value = models.FloatField(null=True, blank=True)
    choice = models.CharField(max_length=3, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["assignment", "aspect", "pk"]

    def __str__(self) -> str:
        return f"{self.assignment_id} {self.aspect_id} {self.value or self.choice}"
