"""Forms of the researcher's pages."""

from __future__ import annotations

import copy
from typing import Any

from django import forms
from django.conf import settings
from django.core.exceptions import ValidationError
from django.utils.functional import lazy

from scoring.lm.served.batch import FORMATS as BATCH_FORMATS
from studies.hooks import pairwise_campaign_choices
from studies.models import Aspect, Endpoint, TaskKind
from studies.models.endpoints import LIMIT_FIELDS, check_base_url
from studies.option_forms import MAX_ID, option_field
from studies.permissions import (
    dataset_aspects,
    shareable_datasets,
    visible_aspects,
    visible_endpoints,
)
from studies.services.catalog import endpoint_policy
from studies.services.imports.converted import CONCORDIA, FORMAT_CHOICES, is_adapter
from studies.services.imports.records import detect_format
from studies.services.imports.scales import parse_ranges
from studies.services.options import Option
from studies.services.runs import (
    RunRequest,
    labels_using,
    metric_choices,
    option_help,
    per_aspect,
    request_of,
    run_options,
)
from studies.services.studies import task_aspects


def _used_by(field: str, then: str = " only") -> str:
    """The metrics that read a run form field (from the runs registry), then ``then``."""
    return " and ".join(labels_using(field)) + then


used_by = lazy(_used_by, str)  # read when the form is shown: apps add runners


def _size(limit: int) -> str:
    return f"{limit / 2**20:.4g} MiB" if limit >= 2**20 else f"{limit / 1024:.4g} KiB"


def upload_too_large(limit: int) -> str:
    """The one message for an import file over the limit: the form's, and the 413 of the
    upload page and the API (studies/views/uploads.py)."""
    return (
        f"The file is larger than the import limit of {limit:,} bytes ({_size(limit)}, "
        "IMPORT_MAX_FILE_BYTES); nothing was imported."
    )


def body_too_large(limit: int) -> str:
    """The 413 of every route but the upload routes (studies/views/uploads.py)."""
    return (
        f"The request body is larger than the limit of {limit:,} bytes ({_size(limit)}, "
        "REQUEST_MAX_BODY_BYTES); nothing was read."
    )


class IdsField(forms.ModelMultipleChoiceField):
    """Model choices by id; an id beyond the database's integer range is an invalid
    choice (the database would otherwise fail on the lookup)."""

    def _check_values(self, value: Any) -> Any:
        for pk in value:
            try:
                in_range = 0 < int(pk) <= MAX_ID
            except (TypeError, ValueError):
                continue  # Django reports it as not a valid value
            if not in_range:
                raise forms.ValidationError(
                    self.error_messages["invalid_choice"],
                    code="invalid_choice",
                    params={"value": pk},
                )
        return super()._check_values(value)


def import_file_format(name: str) -> str:
    """The import format of a file, from its name (a ValidationError naming the formats)."""
    try:
        return detect_format(name)
    except ValueError as exc:
        raise forms.ValidationError(str(exc)) from exc


def check_import_size(size: int) -> None:
    """An import file's size: not empty, not above ``IMPORT_MAX_FILE_BYTES``."""
    limit = settings.CONCORDIA["IMPORT_MAX_FILE_BYTES"]
    if size > limit:
        raise forms.ValidationError(upload_too_large(limit), code="too_large")
    if size == 0:
        raise forms.ValidationError("The file is empty.")


class ImportFieldsForm(forms.Form):
    """Where and how a file is imported: the upload page's fields besides the file, and
    a resumable upload's (:class:`UploadSessionForm`)."""

    dataset = forms.SlugField(
        max_length=100, help_text="Name of a new dataset, or of one of your own datasets."
    )
    task = forms.ModelChoiceField(
        queryset=TaskKind.objects.all(), to_field_name="code", empty_label=None
    )
    create_aspects = forms.BooleanField(
        required=False,
        label="Create unknown aspects",
        help_text="Create an aspect for each human score name that matches none; its "
        "scale comes from the file's values.",
    )
    widen_aspects = forms.BooleanField(
        required=False,
        label="Widen aspects for out-of-scale scores",
        help_text="Scores outside an aspect's scale (e.g. 6 on a 1–5 aspect) go into a wider "
        "copy of the aspect ('Informativeness 1–6') instead of rejecting the file.",
    )
    format = forms.ChoiceField(
        required=False,
        initial=CONCORDIA,
        choices=FORMAT_CHOICES,
        help_text="Concordia's JSONL or CSV (by the file's name), or a tool's export "
        "(the manual's Importing data page says how to export from each tool).",
    )
    rescale = forms.CharField(
        required=False,
        max_length=1000,
        label="Rescale from",
        help_text="Map scores linearly onto the aspect's scale from a stated range, "
        "e.g. informativeness=1:6, naturalness=1:6.",
    )

    def __init__(self, *args: Any, user: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.user = user

    def file_format_of(self, name: str) -> str:
        """The import format of a file: the tool export format chosen, else by its name."""
        chosen = str(self.data.get("format") or "")
        return chosen if is_adapter(chosen) else import_file_format(name)

    def clean_rescale(self) -> dict[str, list[float]]:
        try:
            ranges = parse_ranges(self.cleaned_data["rescale"])
        except ValueError as exc:
            raise forms.ValidationError(str(exc)) from exc
        return {name: list(bounds) for name, bounds in ranges.items()}


class UploadForm(ImportFieldsForm):
    """Upload a JSONL or CSV file into a new or existing dataset."""

    file = forms.FileField(help_text="JSONL or CSV, UTF-8 (see the format help below).")
    field_order = ["file"]

    def clean_file(self) -> Any:
        upload = self.cleaned_data["file"]
        self.file_format = self.file_format_of(upload.name)
        check_import_size(upload.size)
        return upload


class UploadSessionForm(ImportFieldsForm):
    """A resumable upload's start: the file's name, size and (optionally) SHA-256, and the
    upload page's import fields. ``too_large`` says the size is above the limit (413)."""

    file_name = forms.CharField(max_length=255)
    size = forms.IntegerField(min_value=0, max_value=MAX_ID)
    sha256 = forms.RegexField(
        regex=r"^[0-9a-fA-F]{64}$",
        required=False,
        error_messages={"invalid": "Give the SHA-256 as 64 hexadecimal digits."},
    )
    field_order = ["file_name", "size", "sha256"]
    too_large = False

    def clean_file_name(self) -> str:
        name = self.cleaned_data["file_name"].replace("\\", "/").rsplit("/", 1)[-1].strip()
        if not name:
            raise forms.ValidationError("Name the file.")
        self.file_format = self.file_format_of(name)
        return name

    def clean_size(self) -> int:
        size: int = self.cleaned_data["size"]
        try:
            check_import_size(size)
        except forms.ValidationError as exc:
            self.too_large = exc.code == "too_large"
            raise
        return size

    def clean_sha256(self) -> str:
        return str(self.cleaned_data["sha256"]).lower()


def page_options() -> list[Option]:
    """The run options the page and the API take (the rest are the command's only)."""
    return [o for o in run_options() if not o.command_only]


class RunForm(forms.Form):
    """A metric run as the dataset page and the API ask for it (same fields, same checks):
    the metric, the aspects, then one field per run option, derived from the runners'
    declarations (:func:`~studies.services.runs.run_options`, read for each form made:
    apps add runners)."""

    metric = forms.ChoiceField(
        choices=metric_choices,  # the runs registry's, read each time (apps add runners)
        initial=RunRequest.metric,
        required=False,
    )
    aspects = IdsField(
        queryset=Aspect.objects.none(),
        widget=forms.CheckboxSelectMultiple,
        required=False,
        help_text=used_by("aspects", ": one run per aspect"),
    )

    def __init__(self, *args, dataset, user=None, **kwargs):  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        for option in page_options():
            self.fields[option.name] = option_field(option, option_help(option))
        # the shared aspects and the dataset owner's: another researcher's never show
        self.fields["aspects"].queryset = dataset_aspects(dataset).filter(tasks=dataset.task)
        if user is not None:  # a page: the endpoints the user may use, to pick from
            names = visible_endpoints(user).values_list("name", flat=True).distinct()
            choices = [("", "none: a local model"), *((n, n) for n in names)]
            self.fields["endpoint"].widget = forms.Select(choices=choices)
            campaigns = pairwise_campaign_choices(dataset)  # a page: pick one of the dataset's
            self.fields["campaign"].widget = forms.Select(
                choices=[("", "none"), *((str(pk), label) for pk, label in campaigns)]
            )

    def run_request(self) -> RunRequest:
        """The runs' shared configuration (one run per aspect is started from it)."""
        data = self.cleaned_data
        return request_of({o.name: data[o.name] for o in page_options()}, metric=data["metric"])

    def clean(self):  # type: ignore[no-untyped-def]
        data = super().clean()
        data["metric"] = data.get("metric") or RunRequest.metric
        for option in page_options():  # left empty: the declared default
            if data.get(option.name) in (None, ""):
                data[option.name] = option.default
        if per_aspect(data["metric"]) and not data.get("aspects"):
            labels = " or ".join(labels_using("aspects"))
            self.add_error("aspects", f"Choose at least one aspect for {labels}.")
        return data


class PairwiseReportForm(forms.Form):
    """What a pairwise judge run's report compares it with (its page; the API takes the
    same query): human preferences from a source, the Likert margin, the vote rule."""

    against = forms.ChoiceField(
        required=False,
        label="Human preferences",
        help_text="Imported pairwise judgments, Likert scores turned into preferences (a "
        "difference within the margin is a tie), or a pairwise campaign's answers",
    )
    margin = forms.FloatField(
        min_value=0.0, required=False, initial=0.0, help_text="Likert only: |Δ| ≤ margin is a tie"
    )
    rule = forms.ChoiceField(
        choices=[
            ("average", "the most probable answer, averaged over both orders"),
            ("consistent", "MT-Bench's swap rule: a win only when both orders agree"),
        ],
        required=False,
        label="The judge's vote",
    )
    interval = forms.ChoiceField(
        choices=[
            ("studentized", "studentized bootstrap (best coverage on many documents)"),
            ("percentile", "percentile bootstrap (for a handful of documents)"),
            ("bca", "BCa bootstrap"),
        ],
        required=False,
        label="Intervals",
    )

    def __init__(self, *args: Any, sources: list[tuple[str, str]], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["against"].choices = [("", "none"), *sources]
        # what the report compares with when nothing was chosen, and the control shows it
        self.fields["against"].initial = "likert" if any(v == "likert" for v, _ in sources) else ""

    def options(self) -> dict[str, Any]:
        """The report's options: the defaults (every Likert judgment, margin 0, votes by
        the averaged preference) unless the query chose others; a field the query got
        wrong counts as not chosen (its error shows beside the control, which then
        shows the first choice, "none": so no agreement is shown for it either)."""
        if not self.is_bound:
            return {
                "source": self.fields["against"].initial,
                "margin": 0.0,
                "rule": "average",
                "interval": "studentized",
            }
        self.is_valid()
        data = self.cleaned_data
        return {
            "source": data.get("against") or "",
            "margin": data.get("margin") or 0.0,
            "rule": data.get("rule") or "average",
            "interval": data.get("interval") or "studentized",
        }


class StudyForm(forms.Form):
    """Create a study on a dataset (the service checks the aspects are of its task)."""

    dataset = forms.ModelChoiceField(queryset=None)  # type: ignore[arg-type]
    name = forms.CharField(max_length=200)
    aspects = IdsField(
        queryset=Aspect.objects.order_by("code"),
        widget=forms.CheckboxSelectMultiple,
        required=False,
        help_text="The aspects annotators and metrics judge; only the dataset's task's "
        "aspects are allowed (none: every aspect of the task).",
    )
    description = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), required=False)

    def __init__(self, *args: Any, user: Any, dataset: Any = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        datasets = shareable_datasets(user)  # only the owner (or an admin) shares a dataset
        self.fields["dataset"].queryset = datasets.select_related("task").order_by("name")  # type: ignore[attr-defined]
        if dataset is not None:  # the page was opened for one dataset: its task's aspects
            self.fields["aspects"].queryset = task_aspects(dataset)  # type: ignore[attr-defined]
        else:
            tasks = datasets.values("task")
            self.fields["aspects"].queryset = (  # type: ignore[attr-defined]
                visible_aspects(user).filter(tasks__in=tasks).distinct().order_by("code")
            )


class MemberForm(forms.Form):
    """Invite an existing account to a study."""

    username = forms.CharField(max_length=150)
    role = forms.ChoiceField(
        choices=[("annotator", "Annotator"), ("researcher", "Researcher")], initial="annotator"
    )


class AnnotatorAccountForm(forms.Form):
    """Create an annotator account and add it to the study."""

    new_username = forms.CharField(max_length=150, label="Username")
    password = forms.CharField(
        widget=forms.PasswordInput, help_text="Give it to the annotator; they log in with it."
    )


class EndpointForm(forms.ModelForm):  # type: ignore[type-arg]
    """A served endpoint (the researcher's page; the admin's adds the owner and the
    environment key). The key is write-only: typed in, stored encrypted, never shown
    again; blank keeps the stored one, "clear" removes it. Names are unique per owner.
    The key and egress policies (:mod:`~studies.services.catalog.endpoint_policy`) are
    checked on the endpoint as it would be saved: a researcher's host must resolve to a
    public address (or one the operator allows)."""

    api_key = forms.CharField(
        required=False,
        strip=True,
        max_length=1000,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "off"}),
        help_text="Write-only: stored encrypted and never shown. Blank keeps the stored key.",
    )
    clear_api_key = forms.BooleanField(required=False, help_text="Remove the stored key.")

    class Meta:
        model = Endpoint
        fields = (
            "name",
            "protocol",
            "base_url",
            "model_id",
            "api_key",
            "clear_api_key",
            *LIMIT_FIELDS,
        )

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        owner = data.get("owner", self.instance.owner)
        name = data.get("name")
        taken = Endpoint.objects.filter(name=name, owner=owner).exclude(pk=self.instance.pk)
        if name and taken.exists():
            whose = "You already have an" if owner else "There is already a shared"
            self.add_error("name", f"{whose} endpoint named {name!r}.")
        if data.get("base_url") and not self.has_error("base_url"):
            try:
                check_base_url(data["base_url"])
            except ValidationError:
                return data  # the model's own check says what is wrong with it
            candidate = copy.copy(self.instance)
            for field in ("owner", "base_url", "api_key_env"):
                if field in data:
                    setattr(candidate, field, data[field] or ("" if field != "owner" else None))
            try:
                endpoint_policy.check_endpoint(candidate)
            except ValidationError as exc:
                for field, messages in exc.message_dict.items():
                    self.add_error(field if field in self.fields else None, messages)
        return data

    def save(self, commit: bool = True) -> Any:
        endpoint = super().save(commit=False)
        if self.cleaned_data.get("clear_api_key"):
            endpoint.set_api_key(None)
        elif self.cleaned_data.get("api_key"):
            endpoint.set_api_key(self.cleaned_data["api_key"])
        if commit:
            endpoint.save()
        return endpoint


class BatchRequestsForm(forms.Form):
    """A served run's batch request file: its format (the run page's download)."""

    batch_format = forms.ChoiceField(
        choices=[(name, name) for name in BATCH_FORMATS],
        initial=BATCH_FORMATS[0],
        help_text="openai-batch: a provider's Batch API or vllm run-batch",
    )


class BatchResultsForm(forms.Form):
    """A batch output file read into the served run waiting for it (the run page's
    upload; the format: the one its requests were written in, unless given)."""

    file = forms.FileField(help_text="The batch output file (JSON lines), matched by custom_id.")
    batch_format = forms.ChoiceField(
        choices=[("", "as written"), *((name, name) for name in BATCH_FORMATS)],
        required=False,
    )

    def clean_file(self) -> Any:
        upload = self.cleaned_data["file"]
        check_import_size(upload.size)
        return upload
