"""A small study to annotate: 4 documents × 3 systems, the cast, two more annotators."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from annotation.models import Campaign
from annotation.services import answers, assignment
from annotation.services.campaigns import CampaignSpec, create_campaign
from studies.models import Aspect, Study
from tests.factories import DatasetFactory, DocumentFactory, OutputFactory, UserFactory

SYSTEMS = ("s1", "s2", "s3")
HTMX = {"HTTP_HX_REQUEST": "true"}  # what htmx sends: the views answer with a partial


def make_study(owner: Any) -> Study:
    dataset = DatasetFactory(name="annot", owner=owner)
    for d in range(4):
        doc = DocumentFactory(
            dataset=dataset,
            doc_key=f"d{d}",
            source=f"Source text {d}.",
            references=[f"Reference text {d}."],
        )
        for system in SYSTEMS:
            OutputFactory(document=doc, system_id=system, text=f"Output of {system} for d{d}.")
    return Study.objects.create(name="Annotated study", dataset=dataset, owner=owner)


def new_campaign(study: Study, owner: Any, annotators: list[Any], **overrides: Any) -> Campaign:
    codes = overrides.pop("aspect_codes", ("COH", "FLU"))
    spec = CampaignSpec(
        name=overrides.pop("name", "Campaign"),
        aspects=list(Aspect.objects.filter(code__in=codes)),
        annotators=annotators,
        **overrides,
    )
    return create_campaign(study, spec, owner)


@pytest.fixture
def study(cast) -> Study:  # type: ignore[no-untyped-def]
    return make_study(cast["owner"])


@pytest.fixture
def annotators(cast) -> list[Any]:  # type: ignore[no-untyped-def]
    """Three annotator accounts: the cast's, ann2 and ann3."""
    return [cast["annotator"]] + [UserFactory(username=f"ann{k}", role="annotator") for k in (2, 3)]


@pytest.fixture
def make_campaign(study, cast, annotators) -> Callable[..., Campaign]:  # type: ignore[no-untyped-def]
    def make(**overrides: Any) -> Campaign:
        invited = overrides.pop("annotators", annotators)
        return new_campaign(study, cast["owner"], invited, **overrides)

    return make


def likert_answers(campaign: Campaign, value: float = 4) -> dict[int, float]:
    return {aspect.pk: value for aspect in campaign.aspects.all()}


def label_aspect(code: str = "PASS", **fields: Any) -> Aspect:
    """A binary aspect (fail, pass; pass positive) unless ``fields`` say otherwise."""
    values: dict[str, Any] = {
        "code": code,
        "name": code.title(),
        "definition": f"Does the output {code.lower()}?",
        "kind": "binary",
        "labels": ["fail", "pass"],
        "positive": "pass",
    }
    aspect = Aspect(**(values | fields))
    aspect.full_clean()
    aspect.save()
    return aspect


def form_data(campaign: Campaign, value: str = "4") -> dict[str, str]:
    return {f"aspect-{a.pk}": value for a in campaign.aspects.all()}


def answer_all(campaign, user, value_of) -> None:  # type: ignore[no-untyped-def]
    """Answer every item the queue gives ``user`` with ``value_of(output)`` on every aspect."""
    while (lease := assignment.claim_next(campaign, user)) is not None:
        value = value_of(lease.item.output_a)
        answers.submit(lease.pk, user, {a.pk: value for a in campaign.aspects.all()})
