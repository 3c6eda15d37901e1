"""Admin views of campaigns: items, assignments and answer history, read-mostly."""

from __future__ import annotations

from django.contrib import admin

from annotation import models


class InvitationInline(admin.TabularInline):
    model = models.CampaignAnnotator
    extra = 0
    raw_id_fields = ("user",)


@admin.register(models.Campaign)
class CampaignAdmin(admin.ModelAdmin):
    list_display = ("name", "study", "mode", "overlap", "routing", "status", "created_at")
    list_filter = ("mode", "routing", "status")
    raw_id_fields = ("question_run_a", "question_run_b")
    inlines = [InvitationInline]
    filter_horizontal = ("aspects",)


@admin.register(models.Item)
class ItemAdmin(admin.ModelAdmin):
    list_display = ("pk", "campaign", "system_key", "position", "gold_tolerance")
    list_filter = ("campaign",)
    raw_id_fields = ("document", "output_a", "output_b")


@admin.register(models.Assignment)
class AssignmentAdmin(admin.ModelAdmin):
    list_display = (
        "item",
        "annotator",
        "status",
        "leased_at",
        "expires_at",
        "seconds",
        "routing_score",
    )
    list_filter = ("status",)
    raw_id_fields = ("item",)


@admin.register(models.AnswerRevision)
class AnswerRevisionAdmin(admin.ModelAdmin):
    list_display = ("assignment", "aspect", "value", "choice", "created_at")

    def has_change_permission(self, request, obj=None):  # type: ignore[no-untyped-def]
        return False


@admin.register(models.PairwiseJudgment)
class PairwiseJudgmentAdmin(admin.ModelAdmin):
    list_display = ("item", "aspect", "annotator", "choice", "left_output")
    raw_id_fields = ("item", "left_output")
