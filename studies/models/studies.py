"""Studies of a dataset and their members."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from studies.models.aspects import Aspect
from studies.models.datasets import Dataset


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
