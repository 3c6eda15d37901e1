"""Forms of the researcher's campaign pages (the annotator's answers are read by
:func:`annotation.services.answers.parse_answers`)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.auth import get_user_model

from annotation.models import Campaign
from annotation.services.campaigns import CampaignSpec, pairwise_label_problem
from studies.forms import IdsField
from studies.models import Aspect, MetricRun, Study
from studies.permissions import ANNOTATOR, research_studies, visible_aspects, visible_datasets
from studies.services.studies import campaign_aspects, campaign_aspects_of, study_annotators

MAX_DB_INT = 2**31 - 1  # the integer columns' range on every database


class CampaignForm(forms.Form):
    study = forms.ModelChoiceField(queryset=None)  # type: ignore[arg-type]
    name = forms.CharField(max_length=200)
    mode = forms.ChoiceField(choices=Campaign.Mode.choices, initial=Campaign.Mode.LIKERT)
    aspects = IdsField(
        queryset=Aspect.objects.order_by("code"), widget=forms.CheckboxSelectMultiple
    )
    overlap = forms.IntegerField(
        min_value=1,
        max_value=50,
        initial=3,
        help_text="How many different annotators judge each item (at most the number of "
        "annotators invited below); agreement needs at least 2.",
    )
    selection = forms.ChoiceField(choices=Campaign.Selection.choices, initial="all")
    systems = forms.CharField(
        required=False, help_text="For chosen systems: their ids, separated by commas."
    )
    sample_size = forms.IntegerField(
        min_value=1,
        max_value=MAX_DB_INT,
        required=False,
        help_text="For a random subset: how many items.",
    )
    seed = forms.IntegerField(initial=0, min_value=-MAX_DB_INT, max_value=MAX_DB_INT)
    show_references = forms.BooleanField(required=False)
    annotators = IdsField(
        queryset=get_user_model().objects.filter(groups__name=ANNOTATOR).order_by("username"),
        widget=forms.CheckboxSelectMultiple,
        required=False,
    )
    lease_seconds = forms.IntegerField(
        min_value=30,
        max_value=3600,
        initial=300,
        label="Lease (seconds)",
        help_text="How long an item stays reserved for the annotator who opened it; an "
        "unanswered item goes back to the queue after this.",
    )
    gold_threshold = forms.FloatField(
        min_value=0,
        max_value=1,
        initial=0.7,
        help_text="Between 0 and 1: annotators who agree with the gold items' expected "
        "answers less often than this are flagged (and can be left out of the results).",
    )
    routing = forms.ChoiceField(
        choices=Campaign.Routing.choices,
        initial=Campaign.Routing.RANDOM,
        required=False,
        help_text="Informative first hands out the documents that narrow the interval of "
        "the question below fastest (run A vs run B on an aspect).",
    )
    question_run_a = forms.ModelChoiceField(
        queryset=None,
        required=False,
        label="Question: run A",  # type: ignore[arg-type]
        help_text="Informative first: a finished run of the study's dataset.",
    )
    question_run_b = forms.ModelChoiceField(
        queryset=None,
        required=False,
        label="Question: run B",  # type: ignore[arg-type]
    )
    question_aspect = forms.ModelChoiceField(
        queryset=None,
        required=False,
        label="Question: aspect",  # type: ignore[arg-type]
        help_text="Informative first: one of the campaign's aspects.",
    )

    def __init__(self, *args: Any, user: Any, study: Study | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        studies = research_studies(user).select_related("dataset")
        self.fields["study"].queryset = studies  # type: ignore[attr-defined]
        # only aspects of the study (or of its dataset's task) are offered; with no study
        # chosen yet, those of any of the user's studies (clean() checks the pair)
        aspects = campaign_aspects(study) if study else campaign_aspects_of(studies)
        # another researcher's imported aspects never show (admins see them all)
        aspects = aspects.filter(pk__in=visible_aspects(user).values("pk"))
        self.fields["aspects"].queryset = aspects  # type: ignore[attr-defined]
        self.fields["question_aspect"].queryset = aspects  # type: ignore[attr-defined]
        runs = MetricRun.objects.filter(
            dataset__in=visible_datasets(user), status=MetricRun.Status.SUCCEEDED
        ).select_related("dataset")
        if study is not None:
            self.fields["study"].initial = study.pk
            invited = [u.pk for u in study_annotators(study)]
            self.fields["annotators"].initial = invited
            # no more annotators per item than are invited (agreement needs 2: at most 3)
            self.fields["overlap"].initial = max(1, min(3, len(invited)))
            runs = runs.filter(dataset=study.dataset)  # the question is on its data
        for name in ("question_run_a", "question_run_b"):
            self.fields[name].queryset = runs.order_by("dataset__name", "label")  # type: ignore[attr-defined]

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        study, aspects = data.get("study"), data.get("aspects")
        if study is not None and aspects:
            allowed = set(campaign_aspects(study).values_list("pk", flat=True))
            wrong = sorted(a.code for a in aspects if a.pk not in allowed)
            if wrong:
                self.add_error(
                    "aspects", f"Not aspects of the study {study.name}: {', '.join(wrong)}."
                )
        problem = pairwise_label_problem(data.get("mode", ""), aspects or ())
        if problem:
            self.add_error("aspects", problem)
        for name in ("question_run_a", "question_run_b"):
            run = data.get(name)
            if study is not None and run is not None and run.dataset_id != study.dataset_id:
                self.add_error(name, f"Not a run on the study's dataset {study.dataset.name}.")
        overlap, annotators = data.get("overlap"), data.get("annotators")
        if overlap is not None and annotators is not None and overlap > len(annotators):
            self.add_error(
                "overlap",
                f"Overlap {overlap} needs at least {overlap} invited annotators; "
                f"{len(annotators)} invited: invite more or lower the overlap.",
            )
        return data

    def spec(self) -> CampaignSpec:
        data = self.cleaned_data
        systems = [s.strip() for s in data["systems"].split(",") if s.strip()]
        return CampaignSpec(
            name=data["name"],
            mode=data["mode"],
            aspects=list(data["aspects"]),
            overlap=data["overlap"],
            selection=data["selection"],
            systems=systems,
            sample_size=data["sample_size"],
            seed=data["seed"],
            show_references=data["show_references"],
            annotators=list(data["annotators"]),
            lease_seconds=data["lease_seconds"],
            gold_threshold=data["gold_threshold"],
            routing=data["routing"] or Campaign.Routing.RANDOM,
            question_run_a=data["question_run_a"],
            question_run_b=data["question_run_b"],
            question_aspect=data["question_aspect"],
        )


def _item_label(item: Any) -> str:
    gold = " (gold)" if item.gold_answer is not None else ""
    return f"{item.document.doc_key} · {item.system_key} · item {item.pk}{gold}"


class GoldForm(forms.Form):
    """An item's expected answer per aspect: a score (Likert), a label (a binary or
    categorical aspect) or a, b, tie (pairwise)."""

    item = forms.ModelChoiceField(
        queryset=None,  # type: ignore[arg-type]
        help_text="The output(s) to make a gold item: document · system (gold ones marked).",
        error_messages={"invalid_choice": "No such item in this campaign."},
    )
    tolerance = forms.FloatField(min_value=0, initial=0, required=False)

    def __init__(self, *args: Any, campaign: Campaign, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.campaign = campaign
        item = self.fields["item"]
        item.queryset = campaign.items.select_related("document").order_by(  # type: ignore[attr-defined]
            "document__doc_key", "system_key"
        )
        item.label_from_instance = _item_label  # type: ignore[attr-defined]
        for aspect in campaign.aspects.order_by("code"):
            if campaign.is_pairwise:
                field: forms.Field = forms.ChoiceField(
                    choices=[("a", "A better"), ("b", "B better"), ("tie", "Tie")]
                )
            elif aspect.is_labelled:  # the expected label, stored as its position
                labels = enumerate(aspect.labels or [])
                field = forms.TypedChoiceField(
                    choices=[(str(k), str(label)) for k, label in labels], coerce=float
                )
            else:
                field = forms.FloatField(min_value=aspect.scale_min, max_value=aspect.scale_max)
            field.label = f"{aspect.name} ({aspect.code})"
            self.fields[f"aspect-{aspect.pk}"] = field

    def expected(self) -> dict[int, Any]:
        return {
            int(name.removeprefix("aspect-")): value
            for name, value in self.cleaned_data.items()
            if name.startswith("aspect-")
        }
