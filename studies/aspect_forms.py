"""The admin's aspect form: an aspect's labels one per line, its kind and judged labels
checked by the model (studies/models/aspects.py)."""

from __future__ import annotations

from typing import Any

from django import forms

from studies.models import Aspect


class LabelsField(forms.CharField):
    """An aspect's labels, one per line (blank lines dropped), as a list."""

    widget = forms.Textarea(attrs={"rows": 4})

    def prepare_value(self, value: Any) -> Any:
        return "\n".join(str(v) for v in value) if isinstance(value, list) else value

    def to_python(self, value: Any) -> list[str]:  # type: ignore[override]
        if isinstance(value, list):
            return [str(v) for v in value]
        text = super().to_python(value) or ""
        return [line.strip() for line in str(text).splitlines() if line.strip()]


class AspectForm(forms.ModelForm):  # type: ignore[type-arg]
    """An aspect's definition, scale or labels (the admin's form). The model's checks
    run on save: a binary aspect has two labels and a positive one, and an aspect with
    judgments keeps its kind and the places of the labels they use (a field error says
    why)."""

    labels = LabelsField(
        required=False,
        help_text="Binary and categorical aspects: one label per line, in order. A judgment "
        "stores its label's position: once judged, labels may only be appended.",
    )

    class Meta:
        model = Aspect
        fields = [
            "code",
            "name",
            "owner",
            "definition",
            "kind",
            "scale_min",
            "scale_max",
            "anchors",
            "labels",
            "positive",
            "ordered",
            "tasks",
            "source",
        ]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["kind"].required = False  # left out: the aspect's own (new: a scale)

    def clean_kind(self) -> str:
        return str(self.cleaned_data.get("kind") or self.instance.kind or Aspect.Kind.SCALE)
