"""Django admin: admins edit aspects and prompt templates; each edit makes a new
version, and the history inline shows every version with the runs that used it."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html, format_html_join

from studies import models
from studies.aspect_forms import AspectForm
from studies.forms import EndpointForm
from studies.services.catalog import endpoint_policy, endpoints


def _runs_of(version: Any) -> str:
    runs = list(version.runs.all())
    if not runs:
        return "—"
    return format_html_join(
        ", ",
        '<a href="{}">{}</a>',
        ((reverse("admin:studies_metricrun_change", args=[r.pk]), r.label) for r in runs),
    )


class ReadOnlyVersionMixin:
    """Versions are history: nobody adds or edits one by hand."""

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.display(description="runs that used this version")
    def used_by_runs(self, version: Any) -> str:
        return _runs_of(version)


class VersionInline(ReadOnlyVersionMixin, admin.TabularInline):
    extra = 0
    can_delete = False
    show_change_link = False
    ordering = ("-version",)


class AspectVersionInline(VersionInline):
    model = models.AspectVersion
    fields = readonly_fields = (
        "version",
        "name",
        "definition",
        "scale_min",
        "scale_max",
        "kind",
        "labels",
        "positive",
        "created_at",
        "created_by",
        "used_by_runs",
    )
    verbose_name_plural = "history (every saved version; runs keep the version they used)"


class PromptTemplateVersionInline(VersionInline):
    model = models.PromptTemplateVersion
    fields = readonly_fields = (
        "version",
        "text",
        "target",
        "created_at",
        "created_by",
        "used_by_runs",
    )
    verbose_name_plural = "history (every saved version; runs keep the version they used)"


class VersionedAdmin(admin.ModelAdmin):
    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        obj._changed_by = request.user
        super().save_model(request, obj, form, change)


@admin.register(models.TaskKind)
class TaskKindAdmin(admin.ModelAdmin):
    list_display = ("code", "name", "description")


@admin.register(models.Aspect)
class AspectAdmin(VersionedAdmin):
    form = AspectForm  # labels one per line; kind and judged labels checked by the model
    list_display = (
        "code",
        "name",
        "key",
        "owner",
        "definition",
        "kind",
        "scale_min",
        "scale_max",
        "version",
        "updated_at",
    )
    list_filter = ("kind", "tasks", ("owner", admin.EmptyFieldListFilter))
    search_fields = ("code", "name", "key", "definition")
    filter_horizontal = ("tasks",)
    readonly_fields = ("key", "aliases", "version", "updated_at")
    inlines = [AspectVersionInline]


@admin.register(models.PromptTemplate)
class PromptTemplateAdmin(VersionedAdmin):
    list_display = (
        "__str__",
        "task",
        "aspect",
        "dimension",
        "kind",
        "setting",
        "variant",
        "version",
    )
    list_filter = ("kind", "task", "setting", "dimension")
    search_fields = ("text", "aspect__code")
    readonly_fields = ("version", "updated_at")
    inlines = [PromptTemplateVersionInline]


@admin.register(models.AspectVersion)
class AspectVersionAdmin(ReadOnlyVersionMixin, admin.ModelAdmin):
    list_display = ("aspect", "version", "name", "created_at", "created_by")
    list_filter = ("aspect",)
    readonly_fields = [f.name for f in models.AspectVersion._meta.fields] + ["used_by_runs"]


class OutputInline(admin.TabularInline):
    model = models.Output
    extra = 0
    fields = ("system_id", "text")


@admin.register(models.Dataset)
class DatasetAdmin(admin.ModelAdmin):
    list_display = ("name", "task", "owner", "created_at")
    list_filter = ("task",)
    search_fields = ("name",)


@admin.register(models.Document)
class DocumentAdmin(admin.ModelAdmin):
    list_display = ("doc_key", "dataset")
    list_filter = ("dataset",)
    search_fields = ("doc_key", "source")
    inlines = [OutputInline]


@admin.register(models.Output)
class OutputAdmin(admin.ModelAdmin):
    list_display = ("__str__", "system_id")
    list_select_related = ("document",)
    search_fields = ("system_id", "document__doc_key")
    raw_id_fields = ("document",)


@admin.register(models.Judgment)
class JudgmentAdmin(admin.ModelAdmin):
    list_display = ("output", "aspect", "value", "made_by", "updated_at")
    list_filter = ("aspect",)
    list_select_related = ("output__document", "aspect", "annotator")
    raw_id_fields = ("output", "annotator")


@admin.register(models.Adjudication)
class AdjudicationAdmin(admin.ModelAdmin):
    list_display = ("output", "aspect", "value", "study", "adjudicator", "updated_at")
    list_filter = ("aspect",)
    list_select_related = ("output__document", "aspect", "study", "adjudicator")
    raw_id_fields = ("output", "run", "adjudicator")


@admin.register(models.ImportedPreference)
class ImportedPreferenceAdmin(admin.ModelAdmin):
    list_display = ("output_a", "output_b", "aspect", "winner", "rater", "import_file")
    list_filter = ("aspect", "winner")
    list_select_related = ("output_a__document", "output_b__document", "aspect")
    raw_id_fields = ("output_a", "output_b")


class StudyMemberInline(admin.TabularInline):
    model = models.StudyMember
    extra = 1


@admin.register(models.Study)
class StudyAdmin(admin.ModelAdmin):
    list_display = ("name", "dataset", "owner", "created_at")
    filter_horizontal = ("aspects",)
    inlines = [StudyMemberInline]


@admin.register(models.MetricRun)
class MetricRunAdmin(admin.ModelAdmin):
    list_display = (
        "label",
        "dataset",
        "metric",
        "kind",
        "status",
        "done",
        "total",
        "aspect_version_link",
    )
    list_filter = ("kind", "status", "metric", "dataset")
    readonly_fields = ("created_at", "started_at", "finished_at")
    raw_id_fields = ("aspect_version", "template_version", "steps")

    @admin.display(description="aspect version")
    def aspect_version_link(self, run: models.MetricRun) -> str:
        if run.aspect_version_id is None:
            return "—"
        version = run.aspect_version
        url = reverse("admin:studies_aspectversion_change", args=[version.pk])
        return format_html('<a href="{}">{} v{}</a>', url, version.aspect.code, version.version)


@admin.register(models.EvaluationSteps)
class EvaluationStepsAdmin(admin.ModelAdmin):
    """Read-only: steps change through the steps page, where an edit is a new version."""

    list_display = (
        "task",
        "aspect_version",
        "version",
        "origin",
        "owner",
        "created_by",
        "created_at",
    )
    list_filter = ("task", "origin")
    readonly_fields = [f.name for f in models.EvaluationSteps._meta.fields]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(models.ImportJob)
class ImportJobAdmin(admin.ModelAdmin):
    list_display = ("original_name", "dataset_name", "status", "created_by", "created_at")
    list_filter = ("status",)


@admin.register(models.UnsentTask)
class UnsentTaskAdmin(admin.ModelAdmin):
    """Messages the broker did not take when their work committed; the sweeper sends them."""

    list_display = ("name", "args", "queue", "attempts", "error", "created_at")


@admin.register(models.StepsGeneration)
class StepsGenerationAdmin(admin.ModelAdmin):
    """Requests to generate evaluation steps: what STEPS_MAX_PENDING and _PER_HOUR count."""

    list_display = ("requested_by", "task", "aspect_version", "status", "created_at")
    list_filter = ("status",)


@admin.register(models.WorkerHeartbeat)
class WorkerHeartbeatAdmin(admin.ModelAdmin):
    list_display = ("hostname", "pid", "note", "created_at")


@admin.register(models.AllowedModel)
class AllowedModelAdmin(admin.ModelAdmin):
    """Hub ids researchers may name as a run's model (installed models need no entry)."""

    list_display = ("hub_id", "note", "created_at")
    search_fields = ("hub_id", "note")


class AdminEndpointForm(EndpointForm):
    """The researcher's endpoint form with the owner (empty: shared with everyone) and,
    for a shared endpoint, the environment variable its key is read from (one that
    ``ENDPOINT_KEY_ENV_ALLOWED`` lists), bound on a superuser's save to the base URL
    saved with it (:meth:`EndpointAdmin.save_model`)."""

    class Meta(EndpointForm.Meta):
        fields = ("owner", *EndpointForm.Meta.fields, "api_key_env")


@admin.register(models.Endpoint)
class EndpointAdmin(admin.ModelAdmin):
    form = AdminEndpointForm
    list_display = ("name", "owner", "model_id", "base_url", "key", "probed_at", "probe_error")
    list_filter = ("protocol",)
    search_fields = ("name", "model_id", "base_url")
    readonly_fields = ("key", "capabilities", "probed_at", "probe_error", "created_at")
    actions = ("probe",)

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        """Staff who are not superusers do not choose which secret a worker sends."""
        fields = tuple(super().get_readonly_fields(request, obj))
        return fields if request.user.is_superuser else (*fields, "api_key_env")

    @admin.display(description="API key")
    def key(self, endpoint: models.Endpoint) -> str:
        if endpoint.has_api_key:
            return "stored (encrypted)"
        return f"from ${endpoint.api_key_env}" if endpoint.api_key_env else "none"

    @admin.action(description="Probe what the selected endpoints can do")
    def probe(self, request: HttpRequest, queryset: Any) -> None:
        for endpoint in queryset:
            endpoints.request_probe(endpoint)
        self.message_user(request, f"{len(queryset)} probe(s) sent to an io worker.")

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        if request.user.is_superuser:  # an admin's save: the environment key goes here only
            endpoint_policy.bind_key_env(obj)
        super().save_model(request, obj, form, change)
        endpoints.request_probe(obj)  # probed on save, by an io worker
