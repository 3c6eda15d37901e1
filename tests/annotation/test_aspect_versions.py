"""Judgments record the aspect version the annotator saw; the campaign page flags answers
given under an older definition; the correlations page filters judgments by source."""

from __future__ import annotations

import numpy as np
import pytest
from django.urls import reverse

from annotation.models import Campaign
from annotation.services import answers, assignment
from studies.models import Aspect, AspectVersion, ImportJob, Judgment, MetricScore
from studies.services.analysis.dashboards import frame_for, judgment_sources
from studies.services.analysis.params import MatrixParams
from tests.annotation.conftest import likert_answers
from tests.factories import MetricRunFactory

pytestmark = pytest.mark.django_db


def _edit(aspect: Aspect, text: str) -> Aspect:
    aspect.definition = text
    aspect.save()
    return aspect


def test_an_answer_records_the_version_shown_when_the_item_was_handed_out(
    make_campaign, annotators
):
    campaign = make_campaign(aspect_codes=("COH",))
    coh = Aspect.objects.get(code="COH")
    shown = coh.current_version()
    lease = assignment.claim_next(campaign, annotators[0])
    _edit(coh, "Is the summary well structured? (edited while the item was open)")
    assert answers.submit(lease.pk, annotators[0], likert_answers(campaign, 3))
    judgment = Judgment.objects.get(output_id=lease.item.output_a_id)
    assert judgment.aspect_version == shown and shown.version == coh.version - 1

    # the next item is handed out under the new definition
    following = assignment.claim_next(campaign, annotators[0])
    answers.submit(following.pk, annotators[0], likert_answers(campaign, 4))
    assert Judgment.objects.get(output_id=following.item.output_a_id).aspect_version == (
        coh.current_version()
    )
    # changing an answer now records the definition current now
    answers.submit(lease.pk, annotators[0], likert_answers(campaign, 5))
    assert Judgment.objects.get(pk=judgment.pk).aspect_version == coh.current_version()


def test_the_campaign_page_flags_answers_given_under_an_older_definition(
    make_campaign, annotators, client, cast
):
    campaign = make_campaign(aspect_codes=("COH",))
    coh = Aspect.objects.get(code="COH")
    old = coh.version
    given = []
    for annotator in annotators[:2]:
        for _ in range(2):
            lease = assignment.claim_next(campaign, annotator)
            answers.submit(lease.pk, annotator, likert_answers(campaign, 2))
            given.append(lease.item.output_a_id)
    client.force_login(cast["owner"])
    page = client.get(reverse("annotation:campaign-detail", args=[campaign.pk])).content.decode()
    assert "given under" not in page  # nothing edited yet

    _edit(coh, "A new definition of coherence.")
    page = client.get(reverse("annotation:campaign-detail", args=[campaign.pk])).content.decode()
    n = Judgment.objects.filter(aspect=coh, aspect_version__version=old).count()
    assert n == len(given) == 4
    assert (
        f"{n} answers were given under {coh.name} v{old}; the definition is now v{coh.version}."
        in page
    )
    assert page.count(f"(v{old})</li>") == n  # each answer listed


def test_answers_without_a_recorded_version_are_not_flagged(make_campaign, annotators):
    from annotation.services.report import outdated_answers

    campaign = make_campaign(aspect_codes=("COH",))
    lease = assignment.claim_next(campaign, annotators[0])
    answers.submit(lease.pk, annotators[0], likert_answers(campaign, 2))
    Judgment.objects.update(aspect_version=None)  # as rows from before versions were kept
    _edit(Aspect.objects.get(code="COH"), "Edited.")
    assert outdated_answers(campaign) == []


# --- the correlations' source filter ---------------------------------------------------


@pytest.fixture
def sourced(study, make_campaign, annotators, cast):  # type: ignore[no-untyped-def]
    """Every output judged by an imported file (value 1 + its index % 5) and two by a
    campaign (value 5); one metric run scoring every output."""
    dataset = study.dataset
    coh = Aspect.objects.get(code="COH")
    outputs = list(dataset.documents.order_by("doc_key").values_list("outputs__pk", flat=True))
    outputs.sort()
    Judgment.objects.bulk_create(
        Judgment(output_id=pk, aspect=coh, value=1 + k % 5, import_file="human.jsonl")
        for k, pk in enumerate(outputs)
    )
    job = ImportJob.objects.create(
        upload="uploads/human.jsonl",
        original_name="human.jsonl",
        file_format="jsonl",
        dataset_name=dataset.name,
        task=dataset.task,
        dataset=dataset,
        status="succeeded",
        created_by=cast["owner"],
    )
    campaign = make_campaign(aspect_codes=("COH",))
    judged = []
    for _ in range(2):
        lease = assignment.claim_next(campaign, annotators[0])
        answers.submit(lease.pk, annotators[0], likert_answers(campaign, 5))
        judged.append(lease.item.output_a_id)
    run = MetricRunFactory(dataset=dataset, status="succeeded")
    MetricScore.objects.bulk_create(
        MetricScore(run=run, output_id=pk, value=float(k)) for k, pk in enumerate(outputs)
    )
    return {
        "dataset": dataset,
        "job": job,
        "campaign": campaign,
        "judged": judged,
        "outputs": outputs,
    }


def test_the_source_filter_keeps_one_files_or_one_campaigns_judgments(sourced):
    dataset, outputs = sourced["dataset"], sourced["outputs"]
    imported = np.array([1 + k % 5 for k in range(len(outputs))], dtype=float)
    campaign_only = np.full(len(outputs), np.nan)
    for pk in sourced["judged"]:
        campaign_only[outputs.index(pk)] = 5.0
    both = imported.copy()
    for pk in sourced["judged"]:
        both[outputs.index(pk)] = (both[outputs.index(pk)] + 5.0) / 2

    def human(source: str) -> np.ndarray:
        frame = frame_for(dataset, MatrixParams.from_query({"source": source}))
        assert list(frame.output_ids) == outputs
        return frame.human[:, 0]

    np.testing.assert_allclose(human(""), both)
    np.testing.assert_allclose(human(f"import:{sourced['job'].pk}"), imported)
    np.testing.assert_allclose(human("file:human.jsonl"), imported)  # the same file by name
    np.testing.assert_allclose(human(f"campaign:{sourced['campaign'].pk}"), campaign_only)
    # a campaign or a file of another dataset keeps nothing: no aspect is judged
    assert frame_for(dataset, MatrixParams(source="campaign:999999")).aspects == []
    assert frame_for(dataset, MatrixParams(source="import:999999")).aspects == []


def test_the_source_is_in_the_query_string_and_the_cache_key_and_bad_values_are_dropped(sourced):
    dataset = sourced["dataset"]
    chosen = MatrixParams.from_query({"source": f"campaign:{sourced['campaign'].pk}"})
    assert f"source=campaign%3A{sourced['campaign'].pk}" in chosen.query
    assert chosen.key(dataset) != MatrixParams().key(dataset)
    for bad in ("campaign:", "import:x", "user:1", "campaign:1;drop", "file:", "file:a\nb"):
        assert MatrixParams.from_query({"source": bad}).source == ""


def test_the_correlations_page_lists_the_files_and_campaigns_and_keeps_the_choice(
    sourced, client, cast
):
    dataset, campaign, job = sourced["dataset"], sourced["campaign"], sourced["job"]
    assert judgment_sources(dataset) == [
        (f"import:{job.pk}", "imported file human.jsonl"),
        (f"campaign:{campaign.pk}", f"campaign {campaign.name}"),
    ]
    # a second campaign of the same name: both are told apart (study, date, id)
    twin = Campaign.objects.get(pk=campaign.pk)
    twin.pk = None
    twin.save()
    dataset.bump_data_version()
    dataset.refresh_from_db()
    labels = dict(judgment_sources(dataset))
    first, second = labels[f"campaign:{campaign.pk}"], labels[f"campaign:{twin.pk}"]
    assert first != second and first.endswith(f"#{campaign.pk})") and f"#{twin.pk})" in second
    assert first.startswith(f"campaign {campaign.name} ({campaign.study.name}, ")
    twin.delete()
    Judgment.objects.filter(import_file="human.jsonl").update(import_file="=cli file.jsonl")
    dataset.bump_data_version()  # as every import does: the cached choices are stale
    dataset.refresh_from_db()
    assert ("file:=cli file.jsonl", "imported file =cli file.jsonl") in judgment_sources(dataset)
    Judgment.objects.filter(import_file="=cli file.jsonl").update(import_file="human.jsonl")
    dataset.bump_data_version()
    client.force_login(cast["owner"])
    url = reverse("studies:correlations", args=[dataset.pk])
    page = client.get(url, {"source": f"campaign:{campaign.pk}"}).content.decode()
    assert f'<option value="campaign:{campaign.pk}" selected>' in page
    assert f'<option value="import:{job.pk}">imported file human.jsonl</option>' in page
    assert f"judgments of campaign:{campaign.pk} only" in page
    outsider = client.get(url, {"source": f"campaign:{campaign.pk}"})
    client.force_login(cast["outsider"])
    assert client.get(url).status_code == 404 and outsider.status_code == 200


def test_an_aspect_version_is_protected_while_judgments_name_it(make_campaign, annotators):
    from django.db.models import ProtectedError

    campaign = make_campaign(aspect_codes=("COH",))
    lease = assignment.claim_next(campaign, annotators[0])
    answers.submit(lease.pk, annotators[0], likert_answers(campaign, 3))
    version = Judgment.objects.get().aspect_version
    assert isinstance(version, AspectVersion)
    with pytest.raises(ProtectedError):
        version.delete()
