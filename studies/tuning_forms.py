"""The run page's *Tune this judge* form: the aspect, the study whose split to tune on,
the tuner and its options. Each tuner's options are fields derived from the options it
declares (as ``manage.py tune_judge``'s flags and the API's fields are), grouped under
the tuner: ``<tuner>__<option>`` (``few-shot__k``); only the chosen tuner's are read."""

from __future__ import annotations

from typing import Any

from django import forms
from django.db.models import Exists, OuterRef, QuerySet

from studies.models import Aspect, Judgment, MetricRun, Study
from studies.option_forms import option_field
from studies.permissions import dataset_aspects
from studies.services.tuning.registry import names, tuner

SEED_MAX = 2**32 - 1  # numpy's seeds


def option_name(tuner_name: str, option: str) -> str:
    """The form field of a tuner's option: ``few-shot__k``."""
    return f"{tuner_name}__{option}"


def judged_aspects(run: MetricRun) -> QuerySet[Aspect]:
    """The aspects the run's dataset has human judgments on (of those a run on it may
    use): a tuner reads their labels."""
    judged = Judgment.objects.filter(aspect=OuterRef("pk"), output__document__dataset=run.dataset)
    return dataset_aspects(run.dataset).filter(Exists(judged)).order_by("code")


def split_studies(run: MetricRun) -> QuerySet[Study]:
    """The studies of the run's dataset that have a split (tune / dev / test)."""
    return Study.objects.filter(dataset_id=run.dataset_id, split__isnull=False).order_by("pk")


class TuneForm(forms.Form):
    """What starts a tuning of ``run`` from its page, as ``POST /api/runs/<id>/tune/``
    does: the aspect, the study with the split, the tuner, the seed and resamples of the
    test Δ, and the chosen tuner's options (the other tuners' fields are ignored)."""

    aspect = forms.ModelChoiceField(queryset=Aspect.objects.none(), empty_label=None)
    study = forms.ModelChoiceField(
        queryset=Study.objects.none(),
        empty_label=None,
        help_text="The study whose split to use: the tuner reads its tune (and dev) "
        "documents' labels; the tuned run is measured on its test documents.",
    )
    tuner = forms.ChoiceField(widget=forms.RadioSelect)
    seed = forms.IntegerField(initial=0, min_value=0, max_value=SEED_MAX)
    resamples = forms.IntegerField(
        initial=1000,
        min_value=1,
        max_value=100_000,
        help_text="Paired bootstrap resamples of the test Δ, by document.",
    )

    def __init__(self, *args: Any, run: MetricRun, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        aspects = judged_aspects(run)
        self.fields["aspect"].queryset = aspects  # type: ignore[attr-defined]
        if run.aspect_version_id:  # the run's own aspect first
            self.fields["aspect"].initial = run.aspect_version.aspect_id  # type: ignore[union-attr]
        studies = split_studies(run)
        self.fields["study"].queryset = studies  # type: ignore[attr-defined]
        self.fields["study"].initial = studies.values_list("pk", flat=True).first()
        self.fields["tuner"].choices = [(n, tuner(n).label) for n in names()]  # type: ignore[attr-defined]
        self.fields["tuner"].initial = names()[0]
        for name in names():
            for option in tuner(name).options:
                unset = option.default in (None, "")  # its help says what empty means
                said = option.help if unset else f"{option.help} (default {option.default})"
                field = option_field(option, said, prefill=False)
                self.fields[option_name(name, option.name)] = field

    def has_split(self) -> bool:
        """Whether a study of the run's dataset has a split to tune on."""
        return self.fields["study"].initial is not None  # the first of them

    def request_fields(self) -> list[forms.BoundField]:
        """The aspect and the study (the tuners follow, then :meth:`test_fields`)."""
        return [self["aspect"], self["study"]]

    def test_fields(self) -> list[forms.BoundField]:
        """The seed and the resamples of the test Δ."""
        return [self["seed"], self["resamples"]]

    def tuners(self) -> list[tuple[Any, list[forms.BoundField]]]:
        """Each tuner's radio button with its options' fields, for the template."""
        return [
            (radio, [self[option_name(name, o.name)] for o in tuner(name).options])
            for radio, name in zip(self["tuner"], names(), strict=True)
        ]

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        chosen = data.get("tuner")
        for name in names():  # another tuner's fields: not read, so never an error
            if name != chosen:
                for option in tuner(name).options:
                    self._errors.pop(option_name(name, option.name), None)
        return data

    def options(self) -> dict[str, Any]:
        """The chosen tuner's options that were given (the rest take its defaults)."""
        name = self.cleaned_data["tuner"]
        given = {
            o.name: self.cleaned_data.get(option_name(name, o.name)) for o in tuner(name).options
        }
        return {k: v for k, v in given.items() if v not in (None, "")}
