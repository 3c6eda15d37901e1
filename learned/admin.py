from django.contrib import admin

from learned.models import TrainedMetric


@admin.register(TrainedMetric)
class TrainedMetricAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = ("pk", "label", "dataset", "aspect", "setup", "mode", "status", "created_at")
    list_filter = ("status", "setup", "mode")
    readonly_fields = (
        "config",
        "split",
        "pairs",
        "curves",
        "results",
        "checkpoint",
        "checkpoint_sha256",
        "version",
    )
