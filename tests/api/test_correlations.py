"""The API's correlations are the page's and the ``correlations`` command's numbers,
from the same cache: on the demo data and on a SummEval subset scored by ROUGE."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from django.core.cache import cache
from django.core.management import call_command

from studies.models import Dataset
from studies.services.analysis.dashboards import cached_matrix
from studies.services.analysis.params import MatrixParams
from studies.services.runs import execute_run
from tests.conftest import SHARED_DATA
from tests.factories import import_demo

pytestmark = pytest.mark.django_db
LEVELS = ("sample", "dataset", "system")


def numbers(result: dict[str, Any]) -> dict[str, Any]:
    """The matrix without its timing (which differs between two computations)."""
    return {
        k: v
        for k, v in json.loads(json.dumps(result)).items()
        if k not in ("seconds", "excluded_annotators")
    }


def three_ways(client: Any, api: Any, dataset: Dataset, level: str, coef: str, capsys: Any) -> None:
    """API, page and command, each computing afresh, then the cache they share."""
    dataset.refresh_from_db()  # the cache key carries the data version
    cache.clear()
    response = api.get(f"/api/datasets/{dataset.pk}/correlations/?level={level}&coef={coef}")
    assert response.status_code == 200
    from_api = response.json()
    params = MatrixParams.from_query({"level": level, "coef": coef})
    assert numbers(cached_matrix(dataset, params)) == numbers(from_api)  # what the page will read
    cache.clear()
    page = client.get(f"/datasets/{dataset.pk}/correlations/?level={level}&coef={coef}")
    assert numbers(page.context["result"]) == numbers(from_api)
    cache.clear()
    capsys.readouterr()
    call_command(
        "correlations",
        "--dataset",
        str(dataset.pk),
        "--level",
        level,
        "--coef",
        coef,
        "--ci",
        "--format",
        "json",
    )
    assert numbers(json.loads(capsys.readouterr().out)) == numbers(from_api)
    values = [c["value"] for col in from_api["columns"] for c in col["cells"]]
    assert any(v is not None for v in values)


def test_demo_data_correlations_are_the_same_from_the_api_the_page_and_the_command(
    world, client, tmp_path, capsys
):
    dataset = import_demo(world.users["owner"], tmp_path)
    client.force_login(world.users["owner"])
    for level, coef in itertools.product(LEVELS, ("spearman", "kendall")):
        three_ways(client, world.client("owner"), dataset, level, coef, capsys)


@pytest.mark.skipif(
    not (SHARED_DATA / "summeval.jsonl").exists(), reason="../shared/data is not here"
)
def test_summeval_subset_scored_through_the_api_gives_the_page_and_command_numbers(
    world, client, tmp_path, capsys
):
    lines = (SHARED_DATA / "summeval.jsonl").read_text().splitlines()
    docs: list[str] = []
    subset = []
    for line in lines:
        doc = json.loads(line)["doc_id"]
        if doc not in docs:
            if len(docs) == 4:
                break
            docs.append(doc)
        subset.append(line)
    path = tmp_path / "summeval-subset.jsonl"
    path.write_text("\n".join(subset) + "\n")
    api = world.client("owner")
    with path.open("rb") as fh:
        job = api.post(
            "/api/imports/?wait=30",
            {"file": fh, "dataset": "summeval-4", "task": "summarization"},
            format="multipart",
        )
    assert job.status_code == 201 and job.json()["status"] == "succeeded", job.content
    dataset = Dataset.objects.get(name="summeval-4")
    started = api.post("/api/runs/", {"dataset": dataset.pk, "metric": "rouge"}, format="json")
    assert started.status_code == 201
    for run in started.json():
        assert execute_run(run["id"]) == "succeeded"  # the worker's service, in this process
        assert api.get(f"/api/runs/{run['id']}/").json()["done"] == len(subset)
    client.force_login(world.users["owner"])
    for level in LEVELS:
        three_ways(client, api, dataset, level, "spearman", capsys)


def test_cell_paper_and_exports_are_the_pages_data(world, client):
    api, ds = world.client("owner"), world.dataset
    client.force_login(world.users["owner"])
    aspect = ds.documents.first().outputs.first().judgments.first().aspect_id
    cell = api.get(
        f"/api/datasets/{ds.pk}/correlations/cell/{world.run.pk}/{aspect}/?level=dataset"
    )
    page = client.get(f"/datasets/{ds.pk}/correlations/cell/{world.run.pk}/{aspect}/?level=dataset")
    assert cell.status_code == 200 and cell.json() == json.loads(json.dumps(page.context["d"]))
    assert api.get(f"/api/datasets/{ds.pk}/correlations/cell/999999/{aspect}/").status_code == 404
    paper = api.get(f"/api/datasets/{ds.pk}/correlations/paper/").json()
    page = client.get(f"/datasets/{ds.pk}/correlations/paper/")
    assert paper["geval"] == json.loads(json.dumps(page.context["geval"]))
    assert paper["gptscore"] == json.loads(json.dumps(page.context["gptscore"]))
    for file_format in ("csv", "json", "tex"):
        got = api.get(f"/api/datasets/{ds.pk}/correlations/export/?file_format={file_format}")
        want = client.get(f"/datasets/{ds.pk}/correlations/export.{file_format}")
        assert got.status_code == 200 and got.content == want.content


@pytest.mark.parametrize(
    "query",
    ["level=document", "coef=cosine", "ci=maybe", "flagged=yes", "average=median", "ties=loose"],
)
def test_unknown_matrix_choices_are_a_400_naming_the_parameter(world, query):
    response = world.client("owner").get(f"/api/datasets/{world.dataset.pk}/correlations/?{query}")
    assert response.status_code == 400 and query.split("=")[0] in response.json()["errors"]


@pytest.mark.parametrize(
    ("query", "parameter", "text"),
    [
        ("coef=spa&level=sample", "coef", "system-level statistic"),
        ("coef=acc23&level=system", "coef", "compares pairs of outputs"),
        ("coef=spearman&ties=calibrate", "ties", "acc23 and kendall_23 only"),
        ("average=micro&level=system", "average", "sample level only"),
    ],
)
def test_a_statistic_asked_where_it_does_not_exist_is_a_400_naming_the_parameter(
    world, query, parameter, text
):
    for path in ("", "paper/", "export/"):
        response = world.client("owner").get(
            f"/api/datasets/{world.dataset.pk}/correlations/{path}?{query}"
        )
        assert response.status_code == 400
        assert text in str(response.json()["errors"][parameter])


def test_tie_calibrated_acc23_is_the_same_from_the_api_the_page_and_the_command(
    world, client, capsys
):
    dataset = world.dataset
    query = "level=sample&coef=acc23&ties=calibrate&average=micro"
    cache.clear()
    from_api = world.client("owner").get(f"/api/datasets/{dataset.pk}/correlations/?{query}").json()
    cells = [c for col in from_api["columns"] for c in col["cells"]]
    assert all(("epsilon" in c) and ("rank" in c) for c in cells)
    assert any(c["epsilon"] is not None for c in cells)
    assert from_api["params"]["tie_calibration"] and from_api["params"]["average"] == "micro"
    cache.clear()
    client.force_login(world.users["owner"])
    page = client.get(f"/datasets/{dataset.pk}/correlations/?{query}")
    assert numbers(page.context["result"]) == numbers(from_api)
    cache.clear()
    capsys.readouterr()
    call_command(
        "correlations",
        "--dataset",
        str(dataset.pk),
        "--coef",
        "acc23",
        "--tie-calibration",
        "--average",
        "micro",
        "--ci",
        "--format",
        "json",
    )
    assert numbers(json.loads(capsys.readouterr().out)) == numbers(from_api)
    paper = world.client("owner").get(f"/api/datasets/{dataset.pk}/correlations/paper/?{query}")
    assert paper.status_code == 200 and "ranks" in paper.json()


def test_leaving_out_flagged_annotators_names_them(world):
    from annotation.services.answers import submit
    from annotation.services.gold import set_gold

    item = world.lease.item
    set_gold(item, {a.pk: 1.0 for a in world.campaign.aspects.all()})
    submit(
        world.lease.pk, world.users["annotator"], {a.pk: 5.0 for a in world.campaign.aspects.all()}
    )
    body = (
        world.client("owner")
        .get(f"/api/datasets/{world.dataset.pk}/correlations/?flagged=exclude")
        .json()
    )
    assert (
        body["excluded_annotators"] == ["annotator"] and body["params"]["exclude_flagged"] is True
    )
    plain = world.client("owner").get(f"/api/datasets/{world.dataset.pk}/correlations/").json()
    assert plain["excluded_annotators"] == []
