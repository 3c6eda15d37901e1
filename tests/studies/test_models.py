"""Model invariants: defaults, constraints, versioning."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, transaction

from scoring.prompts import TemplateError
from studies.models import Aspect, Judgment, MetricScore, PromptTemplate, TaskKind
from tests.factories import MetricRunFactory, OutputFactory

pytestmark = pytest.mark.django_db


def test_defaults_hold_gptscore_aspects_templates_and_geval_criteria():
    assert set(TaskKind.objects.values_list("code", flat=True)) == {
        "summarization",
        "dialogue",
        "data_to_text",
        "machine_translation",
        "custom",
    }
    assert Aspect.objects.count() == 22
    assert Aspect.objects.get(code="COV").definition.startswith("How many semantic content units")
    geval = PromptTemplate.objects.filter(kind="geval")
    assert sorted(geval.values_list("aspect__code", flat=True)) == ["COH", "CON", "FLU", "REL"]
    fac = PromptTemplate.objects.get(
        task__code="summarization", aspect__code="FAC", dimension="src_hypo", kind="gptscore"
    )
    assert (
        fac.text
        == "Generate a summary with consistent facts for the following text: {src}\n\nTl;dr"
    )
    assert PromptTemplate.objects.filter(task__code="dialogue", variant="dialogue").count() == 10
    assert all(t.versions.count() == 1 for t in PromptTemplate.objects.all())


def test_aspect_edit_creates_a_version_and_keeps_the_old_text():
    aspect = Aspect.objects.get(code="INT")
    first = aspect.current_version()
    aspect.definition = "Would a reader want to read on?"
    aspect.save()
    assert aspect.version == 2
    assert first.definition == "Is the generated text interesting?"
    assert aspect.current_version().definition == "Would a reader want to read on?"


def test_aspect_scale_must_be_increasing():
    with pytest.raises(IntegrityError):
        Aspect.objects.create(code="BAD", name="Bad", definition="?", scale_min=5, scale_max=1)


def test_output_is_unique_per_document_and_system():
    output = OutputFactory()
    with pytest.raises(IntegrityError):
        OutputFactory(document=output.document, system_id=output.system_id)


def test_judgment_is_unique_per_annotator_output_and_aspect(cast):
    output, aspect = OutputFactory(), Aspect.objects.get(code="COH")
    Judgment.objects.create(output=output, aspect=aspect, value=3, annotator=cast["annotator"])
    Judgment.objects.create(output=output, aspect=aspect, value=4, annotator=cast["owner"])
    with pytest.raises(IntegrityError):
        Judgment.objects.create(output=output, aspect=aspect, value=5, annotator=cast["annotator"])


def test_judgment_is_unique_per_import_file_output_and_aspect():
    output, aspect = OutputFactory(), Aspect.objects.get(code="COH")
    Judgment.objects.create(output=output, aspect=aspect, value=3, import_file="a.jsonl")
    Judgment.objects.create(output=output, aspect=aspect, value=3, import_file="b.jsonl")
    with pytest.raises(IntegrityError):
        Judgment.objects.create(output=output, aspect=aspect, value=5, import_file="a.jsonl")


@pytest.mark.parametrize("fields", [{}, {"import_file": "x.jsonl", "annotator": "annotator"}])
def test_judgment_needs_exactly_one_source(cast, fields):
    output, aspect = OutputFactory(), Aspect.objects.get(code="COH")
    if "annotator" in fields:
        fields = {**fields, "annotator": cast["annotator"]}
    with pytest.raises(IntegrityError):
        Judgment.objects.create(output=output, aspect=aspect, value=3, **fields)


def test_metric_score_is_unique_per_run_and_output_and_needs_a_value_or_error():
    run = MetricRunFactory()
    output = OutputFactory(document__dataset=run.dataset)
    MetricScore.objects.create(run=run, output=output, value=-1.25)
    with pytest.raises(IntegrityError), transaction.atomic():
        MetricScore.objects.create(run=run, output=output, value=0.0)
    other = OutputFactory(document__dataset=run.dataset)
    with pytest.raises(IntegrityError), transaction.atomic():
        MetricScore.objects.create(run=run, output=other)
    MetricScore.objects.create(run=run, output=other, error="context too long")


def test_run_progress_cannot_exceed_its_total():
    with pytest.raises(IntegrityError):
        MetricRunFactory(done=5, total=3)


def test_imported_run_label_is_unique_per_dataset():
    run = MetricRunFactory(kind="imported", label="rouge1")
    MetricRunFactory(dataset=run.dataset, kind="computed", label="rouge1")
    with pytest.raises(IntegrityError):
        MetricRunFactory(dataset=run.dataset, kind="imported", label="rouge1")


def test_template_with_unknown_placeholder_cannot_be_saved():
    template = PromptTemplate.objects.filter(kind="gptscore").first()
    assert template is not None
    template.text = "Rate {hypothesis}"
    with pytest.raises(TemplateError, match="Unknown placeholder"):
        template.save()


def test_every_default_template_is_safe_and_matches_the_defaults_file():
    from scoring.prompts import validate_template
    from studies.defaults import read_defaults

    data = read_defaults()
    assert PromptTemplate.objects.count() == len(data["templates"])
    for template in PromptTemplate.objects.all():
        validate_template(template.text)
        validate_template(template.target)


def test_restoring_defaults_twice_changes_nothing():
    from django.apps import apps

    from studies.defaults import load_defaults

    before = (Aspect.objects.count(), PromptTemplate.objects.count())
    load_defaults(apps)
    assert (Aspect.objects.count(), PromptTemplate.objects.count()) == before
    assert all(a.version == 1 and a.versions.count() == 1 for a in Aspect.objects.all())


def test_data_version_changes_when_scores_or_judgments_change(cast):
    output = OutputFactory()
    dataset = output.document.dataset

    def version() -> int:
        dataset.refresh_from_db()
        return dataset.data_version

    start = version()
    judgment = Judgment.objects.create(
        output=output, aspect=Aspect.objects.get(code="COH"), value=3, annotator=cast["annotator"]
    )
    after_judgment = version()
    judgment.value = 4
    judgment.save()
    after_edit = version()
    MetricScore.objects.create(run=MetricRunFactory(dataset=dataset), output=output, value=0.5)
    assert start < after_judgment < after_edit < version()
