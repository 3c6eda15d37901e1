"""Forms of the researcher's pages."""

from __future__ import annotations

from typing import Any

from django import forms
from django.conf import settings

from studies.models import TaskKind
from studies.services.records import detect_format
from studies.services.scales import parse_ranges


class UploadForm(forms.Form):
    """Upload a JSONL or CSV file into a new or existing dataset."""

    file = forms.FileField(help_text="JSONL or CSV, UTF-8 (see the format help below).")
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

    def clean_file(self) -> Any:
        upload = self.cleaned_data["file"]
        try:
            self.file_format = detect_format(upload.name)
        except ValueError as exc:
            raise forms.ValidationError(str(exc)) from exc
        limit = settings.CONCORDIA["IMPORT_MAX_FILE_BYTES"]
        if upload.size > limit:
            raise forms.ValidationError(f"The file is larger than {limit} bytes.")
        if upload.size == 0:
            raise forms.ValidationError("The file is empty.")
        return upload

    def clean_rescale(self) -> dict[str, list[float]]:
        try:
            ranges = parse_ranges(self.cleaned_data["rescale"])
        except ValueError as exc:
            raise forms.ValidationError(str(exc)) from exc
        return {name: list(bounds) for name, bounds in ranges.items()}
