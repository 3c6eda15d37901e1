"""A study for informative routing: 20 documents × 4 systems and two finished runs that
rank the outputs alike on documents d00-d09 and in reverse on d10-d19."""

from __future__ import annotations

from typing import Any

from annotation.models import Campaign
from annotation.services.campaigns import CampaignSpec, create_campaign
from studies.models import Aspect, MetricRun, MetricScore, Study
from tests.factories import DatasetFactory, DocumentFactory, MetricRunFactory, OutputFactory

SYSTEMS = ("s1", "s2", "s3", "s4")
AGREE = tuple(f"d{k:02d}" for k in range(10))
DISAGREE = tuple(f"d{k:02d}" for k in range(10, 20))


def make_routed_study(owner: Any) -> tuple[Study, MetricRun, MetricRun]:
    dataset = DatasetFactory(name="routed", owner=owner)
    run_a = MetricRunFactory(dataset=dataset, label="ROUGE-2", status=MetricRun.Status.SUCCEEDED)
    run_b = MetricRunFactory(dataset=dataset, label="ROUGE-L", status=MetricRun.Status.SUCCEEDED)
    scores = []
    for key in AGREE + DISAGREE:
        doc = DocumentFactory(dataset=dataset, doc_key=key, source=f"Source of {key}.")
        for rank, system in enumerate(SYSTEMS):
            output = OutputFactory(document=doc, system_id=system, text=f"{system} on {key}.")
            other = rank if key in AGREE else len(SYSTEMS) - 1 - rank
            scores += [
                MetricScore(run=run_a, output=output, value=rank / 10),
                MetricScore(run=run_b, output=output, value=other / 10),
            ]
    MetricScore.objects.bulk_create(scores)
    study = Study.objects.create(name="Routed study", dataset=dataset, owner=owner)
    return study, run_a, run_b


def informative_campaign(
    study: Study,
    owner: Any,
    annotators: list[Any],
    run_a: MetricRun,
    run_b: MetricRun,
    **overrides: Any,
) -> Campaign:
    coherence = Aspect.objects.get(code="COH")
    fields: dict[str, Any] = {
        "name": "Routed",
        "aspects": [coherence],
        "annotators": annotators,
        "routing": Campaign.Routing.INFORMATIVE,
        "question_run_a": run_a,
        "question_run_b": run_b,
        "question_aspect": coherence,
    }
    return create_campaign(study, CampaignSpec(**{**fields, **overrides}), owner)
