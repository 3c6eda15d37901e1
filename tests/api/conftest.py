"""The API's world: the seven roles with tokens, an owner's scored dataset with a study
(a collaborator researches in it), a campaign and a lease, and an outside researcher's
dataset."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

import pytest
from rest_framework.test import APIClient

from annotation.models import Assignment, Campaign
from annotation.services import assignment
from annotation.services.campaigns import CampaignSpec, create_campaign
from studies.models import Aspect, Dataset, ImportJob, MetricRun, Study, StudyMember, TaskKind
from studies.services.imports import ImportOptions, import_file
from studies.services.tokens import token_for
from tests.factories import UserFactory

ROLES = (
    "anonymous",
    "annotator",
    "other_annotator",
    "owner",
    "collaborator",
    "other_researcher",
    "admin",
)


def scored_records(n_docs: int = 4, systems: int = 3, seed: int = 0) -> list[dict[str, Any]]:
    """Records with human scores and two imported metrics that follow them noisily."""
    rng = random.Random(seed)
    records = []
    for d in range(n_docs):
        for s in range(systems):
            quality = rng.uniform(1, 5)
            records.append(
                {
                    "doc_id": f"d{d}",
                    "system_id": f"s{s}",
                    "source": f"Source text {d}.",
                    "references": [f"Reference {d}."],
                    "output": f"Output {s} of {d}.",
                    "human": {
                        "coherence": round(quality, 2),
                        "fluency": round(rng.uniform(1, 5), 2),
                    },
                    "metrics": {
                        "m_good": quality + rng.gauss(0, 0.5),
                        "m_noise": rng.uniform(0, 1),
                    },
                }
            )
    return records


@dataclass
class World:
    users: dict[str, Any]
    dataset: Dataset
    other_dataset: Dataset
    study: Study
    campaign: Campaign
    lease: Assignment
    run: MetricRun
    job: ImportJob

    def client(self, role: str) -> APIClient:
        client = APIClient()
        if role != "anonymous":
            client.credentials(HTTP_AUTHORIZATION=f"Token {token_for(self.users[role]).key}")
        return client


def build_world(cast: dict[str, Any], write_jsonl: Any) -> World:
    users = {
        "annotator": cast["annotator"],
        "other_annotator": UserFactory(username="ann-other", role="annotator"),
        "owner": cast["owner"],
        "collaborator": UserFactory(username="collab", role="researcher"),
        "other_researcher": cast["outsider"],
        "admin": cast["admin"],
    }
    path = write_jsonl(scored_records(), "scored.jsonl")
    import_file(
        path,
        ImportOptions(
            dataset="scored",
            task="summarization",
            file_format="jsonl",
            file_name="scored.jsonl",
            owner=cast["owner"],
        ),
    )
    dataset = Dataset.objects.get(name="scored")
    path = write_jsonl(scored_records(2, 2, seed=1), "theirs.jsonl")
    import_file(
        path,
        ImportOptions(
            dataset="theirs",
            task="summarization",
            file_format="jsonl",
            file_name="theirs.jsonl",
            owner=cast["outsider"],
        ),
    )
    other = Dataset.objects.get(name="theirs")
    study = Study.objects.create(name="Study", dataset=dataset, owner=cast["owner"])
    coh, flu = Aspect.objects.get(code="COH"), Aspect.objects.get(code="FLU")
    study.aspects.set([coh, flu])
    campaign = create_campaign(
        study,
        CampaignSpec(
            name="Campaign", aspects=[coh, flu], overlap=2, annotators=[cast["annotator"]]
        ),
        cast["owner"],
    )
    lease = assignment.claim_next(campaign, cast["annotator"])
    assert lease is not None
    # the other annotator works in a campaign of the other researcher's study
    other_study = Study.objects.create(name="Theirs", dataset=other, owner=cast["outsider"])
    create_campaign(
        other_study,
        CampaignSpec(name="Theirs", aspects=[coh], annotators=[users["other_annotator"]]),
        cast["outsider"],
    )
    run = MetricRun.objects.filter(dataset=dataset).order_by("pk").first()
    assert run is not None
    job = ImportJob.objects.create(
        upload="uploads/none.jsonl",
        original_name="none.jsonl",
        file_format="jsonl",
        dataset_name="scored",
        dataset=dataset,
        task=TaskKind.objects.get(code="summarization"),
        created_by=cast["owner"],
        status=ImportJob.Status.SUCCEEDED,
    )
    StudyMember.objects.get_or_create(
        study=study, user=cast["owner"], defaults={"role": "researcher"}
    )
    # a researcher the owner shared the study with: reads, runs and exports the dataset
    StudyMember.objects.create(study=study, user=users["collaborator"], role="researcher")
    return World(users, dataset, other, study, campaign, lease, run, job)


@pytest.fixture
def world(cast, write_jsonl) -> World:  # type: ignore[no-untyped-def]
    return build_world(cast, write_jsonl)


def errors_body(response: Any) -> dict[str, Any]:
    """The error body, checked for its shape."""
    body = response.json()
    assert set(body) >= {"detail", "errors"}, body
    assert isinstance(body["detail"], str) and isinstance(body["errors"], dict), body
    return dict(body)
