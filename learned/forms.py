"""The training form: what a researcher asks for on /learned/new/ and through the API
(same fields, same checks). The service validates the rest (pairs, backbone files)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.urls import reverse

from learned.services.data import judged_aspects
from learned.services.jobs import TrainingRequest, backbone_choices
from scoring.learned.pairs import DEFAULT_MARGIN
from studies.forms import MAX_ID, IdsField
from studies.models import Aspect, Dataset
from studies.permissions import dataset_aspects, visible_datasets
from studies.services.lookup import qualified_name

SETUP_CHOICES = [
    ("single", "Single-task: this dataset's judgments of the aspect"),
    ("multi", "Multi-task: every judged aspect, the target's included"),
    ("cross", "Cross-task: every judged aspect but the target"),
]
MODE_CHOICES = [
    ("head", "Head on frozen features (CPU workers)"),
    ("full", "Full fine-tuning (needs a GPU worker)"),
]
MAX_SEED = 2**31 - 1


class TrainForm(forms.Form):
    """A training job: the dataset and aspect it learns and is tested on, the setup, the
    backbone and the head's training options."""

    dataset = forms.ModelChoiceField(
        queryset=Dataset.objects.none(),
        help_text="The target dataset: a tenth of its documents are held out as the test set.",
    )
    aspect = forms.ModelChoiceField(
        queryset=Aspect.objects.none(),
        help_text="The target aspect: one the dataset has Likert judgments or pairwise answers "
        "for. The reported numbers are on its test documents.",
    )
    setup = forms.ChoiceField(
        choices=SETUP_CHOICES,
        initial="single",
        help_text="Single: train on the target aspect alone. Multi: train on every judged "
        "aspect of the dataset and the extra datasets, each input starting with its own "
        "aspect's instruction. Cross: the same without the target aspect (does the metric "
        "carry over to an aspect it never saw?). Every setup is tested on the target.",
    )
    datasets = IdsField(
        queryset=Dataset.objects.none(),
        required=False,
        label="Extra datasets",
        widget=forms.CheckboxSelectMultiple,
        help_text="Multi and cross only: more datasets whose judged aspects join the training.",
    )
    backbone = forms.ChoiceField(
        choices=backbone_choices,
        initial="default",
        error_messages={
            "invalid_choice": "Unknown backbone %(value)s: choose the default model, minilm, "
            "an installed model or a hub id an admin allowed."
        },
        help_text="The model whose features the head reads: the default decoder "
        "(SmolLM2-135M-Instruct), the encoder all-MiniLM-L6-v2, an installed model or a hub "
        "id an admin allowed.",
    )
    mode = forms.ChoiceField(
        choices=MODE_CHOICES,
        initial="head",
        help_text="Head: a linear head trains on the frozen backbone's features (cached, "
        "seconds per epoch). Full: fine-tunes the backbone with the head; it runs on the gpu "
        "queue and waits until a GPU worker takes it.",
    )
    margin = forms.FloatField(
        initial=DEFAULT_MARGIN,
        min_value=0,
        max_value=1000,
        help_text="Two outputs of a document make a pair when their mean Likert scores differ "
        "by more than this (ties and closer scores are dropped).",
    )
    seed = forms.IntegerField(
        initial=0,
        min_value=0,
        max_value=MAX_SEED,
        help_text="Seeds the split of documents (80/10/10) and the training.",
    )
    layer = forms.IntegerField(
        required=False,
        min_value=1,
        max_value=1000,
        label="Blocks used",
        help_text="Features after the backbone's first N blocks. Empty: 40% of a decoder's "
        "blocks in head mode (12 of the default model's 30, measured better than all 30 and "
        "at 40% of the cost), every block of an encoder or in full mode.",
    )
    max_minutes = forms.FloatField(
        required=False,
        min_value=0.1,
        max_value=7 * 24 * 60,
        label="Max minutes",
        help_text="Stop training after this long, keeping the best epoch. Empty: no limit.",
    )
    exclude_flagged = forms.BooleanField(
        required=False,
        label="Leave out annotators flagged on gold items",
    )

    def __init__(self, *args: Any, user: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.user = user
        datasets = visible_datasets(user).select_related("task", "owner").order_by("name", "pk")
        for name in ("dataset", "datasets"):
            self.fields[name].queryset = datasets  # type: ignore[attr-defined]
            self.fields[name].label_from_instance = self._dataset_label  # type: ignore[attr-defined]
        target, aspect = self._chosen_dataset(datasets), self.fields["aspect"]
        if target is not None:
            ids = [a.pk for a in judged_aspects(target)]
            aspect.queryset = dataset_aspects(target).filter(pk__in=ids)  # type: ignore[attr-defined]
        else:
            aspect.help_text = "Choose a dataset first: its judged aspects are listed."
        # choosing another dataset redraws the form with that dataset's aspects (htmx)
        self.fields["dataset"].widget.attrs.update(
            {
                "hx-get": reverse("learned:new"),
                "hx-trigger": "change",
                "hx-target": "#train-form",
                "hx-swap": "outerHTML",
                "hx-include": "#train-form [name]:not([name=csrfmiddlewaretoken])",
            }
        )

    def _dataset_label(self, dataset: Dataset) -> str:
        """A dataset's name, with its owner's when it is not the user's (names are unique
        per owner only)."""
        if dataset.owner_id == self.user.pk:
            return dataset.name
        return f"{dataset.name} ({qualified_name(dataset).split('/')[0]})"

    def _chosen_dataset(self, datasets: Any) -> Dataset | None:
        value = self.data.get(self.add_prefix("dataset")) if self.is_bound else None
        if value is None:
            value = self.initial.get("dataset")
        value = getattr(value, "pk", value)
        try:
            pk = int(str(value))
        except (TypeError, ValueError):
            return None
        if not 0 < pk <= MAX_ID:
            return None
        found: Dataset | None = datasets.filter(pk=pk).first()
        return found

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if data.get("datasets") and data.get("setup") == "single":
            self.add_error(
                "datasets", "Extra datasets are used by the multi and cross setups only."
            )
        return data

    def training_request(self) -> TrainingRequest:
        """The job the form asks for (no blocks asked: the job's :func:`default_layer`)."""
        data = self.cleaned_data
        return TrainingRequest(
            dataset=str(data["dataset"].pk),
            aspect=data["aspect"].code,
            setup=data["setup"],
            datasets=tuple(str(d.pk) for d in data["datasets"] if d.pk != data["dataset"].pk),
            backbone=data["backbone"],
            mode=data["mode"],
            margin=data["margin"],
            seed=data["seed"],
            max_minutes=data["max_minutes"],
            exclude_flagged=data["exclude_flagged"],
            layer=data["layer"],
        )


def initial_from_query(query: Any) -> dict[str, Any]:
    """A GET's parameters as the form's initial values (``?dataset=<pk>`` preselects a
    dataset; the htmx redraw sends every field)."""
    fields = TrainForm.base_fields
    return {
        name: query.getlist(name) if name == "datasets" else query.get(name)
        for name in fields
        if name in query
    }
