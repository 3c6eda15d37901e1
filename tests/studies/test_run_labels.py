"""Runs that share a label are told apart wherever they are listed (the matrix, the
dataset page): by template version, aspect version, documents covered, else their id;
and a run can be renamed on its page and through the API."""

from __future__ import annotations

import pytest

from studies.models import MetricRun, PromptTemplateVersion
from studies.services.runs.labels import RenameError, distinct_labels, rename_run, with_traits
from tests.factories import DatasetFactory, MetricRunFactory

pytestmark = pytest.mark.django_db

LABEL = "gptscore:SmolLM2-135M-Instruct:IST:src_hypo:COH"


@pytest.fixture
def alike(cast):  # type: ignore[no-untyped-def]
    """The issue's three runs: template v1, template v2, and v2 over one document."""
    dataset = DatasetFactory(name="alike", owner=cast["owner"])
    v1 = PromptTemplateVersion.objects.order_by("pk").first()
    assert v1 is not None  # the default templates
    newest = v1.template.versions.order_by("-version").first()
    v2 = PromptTemplateVersion.objects.create(
        template=v1.template, version=newest.version + 1, text=v1.text, target=v1.target
    )
    runs = [
        MetricRunFactory(dataset=dataset, label=LABEL, template_version=v1),
        MetricRunFactory(dataset=dataset, label=LABEL, template_version=v2),
        MetricRunFactory(
            dataset=dataset, label=LABEL, template_version=v2, config={"limit_docs": 1}
        ),
        MetricRunFactory(dataset=dataset, label="rougeL"),
    ]
    return dataset, runs, (v1, v2)


def test_runs_sharing_a_label_show_what_differs_and_a_lone_run_keeps_its_label(alike):
    dataset, runs, (v1, v2) = alike
    names = distinct_labels(with_traits(MetricRun.objects.filter(dataset=dataset)))
    first, second, short, rouge = (names[r.pk] for r in runs)
    assert first == f"{LABEL} [template v{v1.version}, all docs]"
    assert second == f"{LABEL} [template v{v2.version}, all docs]"
    assert short == f"{LABEL} [template v{v2.version}, 1 docs]"
    assert rouge == "rougeL"
    rouge_pk = runs[3].pk
    twin = MetricRunFactory(dataset=dataset, label="rougeL")  # alike in everything: the id
    names = distinct_labels(with_traits(MetricRun.objects.filter(dataset=dataset)))
    assert names[twin.pk] == f"rougeL [run {twin.pk}]"
    assert names[rouge_pk] == f"rougeL [run {rouge_pk}]"
    assert len(set(names.values())) == len(names)


def test_the_dataset_page_lists_them_apart_with_the_run_id_on_hover(alike, client, cast):
    dataset, runs, (v1, v2) = alike
    client.force_login(cast["owner"])
    page = client.get(f"/datasets/{dataset.pk}/").content.decode()
    assert f"{LABEL} [template v{v1.version}, all docs]" in page
    assert f"{LABEL} [template v{v2.version}, 1 docs]" in page
    assert f'title="run {runs[0].pk}"' in page


def test_a_rename_on_the_page_and_through_the_api(alike, client, cast):
    dataset, runs, _ = alike
    client.force_login(cast["owner"])
    client.post(f"/runs/{runs[2].pk}/rename/", {"label": "  GPTScore   one doc "})
    assert MetricRun.objects.get(pk=runs[2].pk).label == "GPTScore one doc"
    page = client.get(f"/datasets/{dataset.pk}/").content.decode()
    assert "GPTScore one doc</a>" in page
    answer = client.post(
        f"/api/runs/{runs[0].pk}/rename/", {"label": "rougeL"}, content_type="application/json"
    )
    assert answer.status_code == 409 and "Another run of this dataset" in answer.json()["detail"]
    answer = client.post(
        f"/api/runs/{runs[0].pk}/rename/", {"label": 0}, content_type="application/json"
    )
    assert answer.status_code == 400 and "label" in answer.json()["errors"]
    answer = client.post(
        f"/api/runs/{runs[0].pk}/rename/", {"label": "v1"}, content_type="application/json"
    )
    assert answer.status_code == 200 and answer.json()["label"] == "v1"
    client.force_login(cast["outsider"])  # not their dataset: as if it did not exist
    assert client.post(f"/runs/{runs[1].pk}/rename/", {"label": "x"}).status_code == 404
    assert MetricRun.objects.get(pk=runs[1].pk).label == LABEL


def test_a_bad_name_changes_nothing_and_says_why(alike):
    _, runs, _ = alike
    with pytest.raises(RenameError, match="empty"):
        rename_run(runs[0], "   ")
    with pytest.raises(RenameError, match="at most 200"):
        rename_run(runs[0], "x" * 201)
    version = runs[0].dataset.data_version
    rename_run(runs[0], "fine")
    runs[0].dataset.refresh_from_db()
    assert runs[0].dataset.data_version > version  # cached tables show the new name
