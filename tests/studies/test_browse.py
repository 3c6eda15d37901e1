"""Browsing the data: the output browser's search, filters, sorts and pages against
hand-computed expectations; the output page with every score and judgment and where each
came from; the drill-down's links to both; and who may see what."""

from __future__ import annotations

import pytest
from django.http import QueryDict
from django.urls import reverse

from studies.models import Aspect, Dataset, Judgment, MetricScore, Output
from studies.services import browse
from studies.services.analysis.drilldown import drilldown
from studies.services.analysis.params import MatrixParams
from studies.services.browse import BadQuery, BrowseQuery
from tests.factories import DatasetFactory, DocumentFactory, MetricRunFactory, OutputFactory

pytestmark = pytest.mark.django_db

# (doc, system): text; the scores of run one and two; the COH judgments
OUTPUTS = {
    ("alpha-doc", "A"): ("first alpha text", 0.5, 2.0, [3.0, 5.0]),
    ("alpha-doc", "B"): ("second beta text", 0.9, 1.0, [2.0]),
    ("beta-doc", "A"): ("third gamma text", 0.1, 3.0, [4.5]),
    ("beta-doc", "B"): ("fourth delta cat", None, 4.0, []),
}
SOURCES = {"alpha-doc": "The cat sat on the mat.", "beta-doc": "A dog ran away."}


@pytest.fixture
def world(cast):  # type: ignore[no-untyped-def]
    dataset = DatasetFactory(name="browse", owner=cast["owner"])
    one = MetricRunFactory(dataset=dataset, label="one", metric="geval")
    two = MetricRunFactory(dataset=dataset, label="two", kind="imported")
    coh = Aspect.objects.get(code="COH", owner=None)
    docs = {k: DocumentFactory(dataset=dataset, doc_key=k, source=s) for k, s in SOURCES.items()}
    outputs = {}
    for (doc, system), (text, s1, s2, coherence) in OUTPUTS.items():
        output = OutputFactory(document=docs[doc], system_id=system, text=text)
        outputs[doc, system] = output
        if s1 is not None:
            dist = {"1": 0.1, "2": 0.2, "3": 0.7}
            MetricScore.objects.create(
                run=one, output=output, value=s1, details={"distribution": dist}
            )
        MetricScore.objects.create(run=two, output=output, value=s2)
        for k, value in enumerate(coherence):
            source = {"annotator": cast["annotator"]} if k == 0 else {"import_file": "humans.jsonl"}
            Judgment.objects.create(output=output, aspect=coh, value=value, **source)
    return {"dataset": dataset, "one": one, "two": two, "coh": coh, "outputs": outputs}


def keys(found):  # type: ignore[no-untyped-def]
    return [(o.document.doc_key, o.system_id) for o in found]


def query(world, **params):  # type: ignore[no-untyped-def]
    offered = browse.choices(world["dataset"])
    q = QueryDict(mutable=True)
    for k, v in params.items():
        q[k] = str(v)
    return browse.parse_query(q, offered), offered


def run_query(world, **params):  # type: ignore[no-untyped-def]
    q, offered = query(world, **params)
    return keys(browse.outputs(world["dataset"], q, offered))


def expected_order(value, descending):  # type: ignore[no-untyped-def]
    """The outputs ordered by ``value(row)`` the textbook way: missing values last,
    ties by document then system."""
    rows = [(k, value(v)) for k, v in OUTPUTS.items()]
    present = [r for r in rows if r[1] is not None]
    present.sort(key=lambda r: r[0])
    present.sort(key=lambda r: r[1], reverse=descending)  # stable: ties keep doc, system
    return [k for k, _ in present] + sorted(k for k, v in rows if v is None)


def mean(values):  # type: ignore[no-untyped-def]
    return sum(values) / len(values) if values else None


def test_default_order_is_document_then_system(world):
    assert run_query(world) == sorted(OUTPUTS)


def test_search_looks_in_output_source_and_document_key(world):
    assert run_query(world, q="cat") == [("alpha-doc", "A"), ("alpha-doc", "B"), ("beta-doc", "B")]
    assert run_query(world, q="GAMMA") == [("beta-doc", "A")]
    assert run_query(world, q="beta-d") == [("beta-doc", "A"), ("beta-doc", "B")]
    assert run_query(world, q="nowhere") == []


def test_system_filter(world):
    assert run_query(world, system="B") == [("alpha-doc", "B"), ("beta-doc", "B")]


@pytest.mark.parametrize("descending", [False, True])
def test_sort_by_a_runs_score_both_ways(world, descending):
    sign = "-" if descending else ""
    assert run_query(world, sort=f"{sign}run:{world['one'].pk}") == expected_order(
        lambda v: v[1], descending
    )
    assert run_query(world, sort=f"{sign}run:{world['two'].pk}") == expected_order(
        lambda v: v[2], descending
    )


@pytest.mark.parametrize("descending", [False, True])
def test_sort_by_an_aspects_mean_judgment_both_ways(world, descending):
    sign = "-" if descending else ""
    found = run_query(world, sort=f"{sign}aspect:coh")  # the code in any case
    assert found == expected_order(lambda v: mean(v[3]), descending)
    assert found[-1] == ("beta-doc", "B")  # never judged: last either way


def test_score_and_judgment_ranges(world):
    one = world["one"].pk
    in_range = [k for k, v in OUTPUTS.items() if v[1] is not None and 0.2 <= v[1] <= 0.9]
    assert run_query(world, run=one, min="0.2", max="0.9") == in_range
    assert run_query(world, run=one) == [k for k, v in OUTPUTS.items() if v[1] is not None]
    judged = [k for k, v in OUTPUTS.items() if v[3] and mean(v[3]) >= 3]
    assert run_query(world, aspect="COH", hmin=3) == judged
    assert run_query(world, aspect="COH", hmax="2") == [("alpha-doc", "B")]
    both = run_query(world, run=one, max=0.6, aspect="COH", hmin=4, sort="-aspect:COH")
    assert both == [("beta-doc", "A"), ("alpha-doc", "A")]  # means 4.5, 4.0


def test_pages_rows_and_their_values(world):
    q, offered = query(world, sort=f"-run:{world['two'].pk}")
    first = browse.browse(world["dataset"], q, offered, per_page=3)
    assert first.count == 4 and first.page.paginator.num_pages == 2 and first.previous_url is None
    assert [r.output.system_id for r in first.rows] == ["B", "A", "A"]  # 4.0, 3.0, 2.0
    top = first.rows[0]
    assert top.scores == [None, 4.0] and top.means == [None]
    assert first.next_url is not None and "page=2" in first.next_url
    assert f"sort=-run%3A{world['two'].pk}" in first.next_url  # the sort travels with the page
    q2, _ = query(world, sort=f"-run:{world['two'].pk}", page=2)
    second = browse.browse(world["dataset"], q2, offered, per_page=3)
    [row] = second.rows
    assert (row.output.document.doc_key, row.output.system_id) == ("alpha-doc", "B")
    assert row.scores == [0.9, 1.0] and row.means == [2.0]
    assert row.href == reverse("studies:output-detail", args=[row.output.pk])
    late, _ = query(world, page=99)  # past the end: the last page
    assert browse.browse(world["dataset"], late, offered, per_page=3).page.number == 2
    assert query(world, page="x")[0].page == 1


def test_column_headers_sort_descending_first_then_toggle(world):
    key = f"run:{world['one'].pk}"
    q, offered = query(world, system="A")
    header = browse.browse(world["dataset"], q, offered).runs[0]
    assert header["sort"] == f"-{key}" and header["arrow"] == "" and "system=A" in header["url"]
    q, _ = query(world, sort=f"-{key}")
    header = browse.browse(world["dataset"], q, offered).runs[0]
    assert header["sort"] == key and header["arrow"] == "▼"
    q, _ = query(world, sort=key)
    assert browse.browse(world["dataset"], q, offered).runs[0]["sort"] == f"-{key}"


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"sort": "bogus"}, "sort must be run:<id> or aspect:<code>"),
        ({"sort": "run:abc"}, "sort must be a run id"),
        ({"run": "999999"}, "no run 999999"),
        ({"run": "RUN", "min": "0.5", "max": "0.1"}, "min (0.5) is above max (0.1)"),
        ({"run": "RUN", "min": "lots"}, "min must be a number"),
        ({"run": "RUN", "max": "inf"}, "max must be a finite number"),
        ({"min": "0.1"}, "needs a run"),
        ({"hmin": "3"}, "needs an aspect"),
        ({"aspect": "FLU"}, "No judgments on an aspect 'FLU'"),
        ({"system": "Z"}, "no system 'Z'"),
        ({"q": "x" * 201}, "longer than 200"),
    ],
)
def test_bad_parameters_are_named(world, params, message):
    params = {k: str(world["one"].pk) if v == "RUN" else v for k, v in params.items()}
    with pytest.raises(BadQuery) as caught:
        query(world, **params)
    assert message in str(caught.value)


def test_a_run_of_another_dataset_is_refused(world, cast):
    other = MetricRunFactory(dataset=DatasetFactory(owner=cast["outsider"]))
    with pytest.raises(BadQuery):
        query(world, sort=f"run:{other.pk}")


def test_query_urls_keep_every_parameter_and_reset_the_page():
    q = BrowseQuery(q="a b", system="S", sort="-aspect:COH", run=3, low=0.5, aspect="COH", page=4)
    assert q.url(sort="run:3") == "?q=a+b&system=S&sort=run%3A3&run=3&min=0.5&aspect=COH&page=4"
    assert "page" not in q.url(page=1)


def test_output_details_name_each_judgments_source_and_the_geval_distribution(world, cast):
    output = world["outputs"]["alpha-doc", "A"]
    found = browse.output_details(output)
    assert [(j["value"], j["source"]) for j in found["judgments"]] == [
        (3.0, cast["annotator"].username),
        (5.0, "imported from humans.jsonl"),
    ]
    assert found["means"] == {"COH": 4.0}
    by_label = {s["run"].label: s for s in found["scores"]}
    assert by_label["one"]["value"] == 0.5 and by_label["two"]["distribution"] is None
    bars = by_label["one"]["distribution"]
    assert [(b["label"], b["p"], b["width"]) for b in bars] == [
        ("1", 0.1, 14),
        ("2", 0.2, 29),
        ("3", 0.7, 100),
    ]
    assert [s["system_id"] for s in found["siblings"]] == ["B"]


# --- pages ---------------------------------------------------------------------------------


def test_output_browser_page_and_partial(client, world, cast):
    client.force_login(cast["owner"])
    url = reverse("studies:dataset-outputs", args=[world["dataset"].pk])
    page = client.get(url, {"system": "A", "sort": f"-run:{world['one'].pk}"})
    body = page.content.decode()
    assert page.status_code == 200 and "<html" in body and 'id="outputs-table"' in body
    assert body.index("third gamma text") > body.index("first alpha text")  # 0.5 before 0.1
    assert "second beta text" not in body and "2 outputs" in body
    detail = reverse("studies:output-detail", args=[world["outputs"]["alpha-doc", "A"].pk])
    assert f'href="{detail}"' in body
    partial = client.get(
        url, {"q": "delta"}, headers={"HX-Request": "true", "HX-Target": "outputs"}
    )
    text = partial.content.decode()
    assert partial.status_code == 200 and "<html" not in text and "fourth delta cat" in text
    assert text.strip().startswith('<div id="outputs"')
    dataset_page = client.get(reverse("studies:dataset-detail", args=[world["dataset"].pk]))
    assert f'href="{url}"' in dataset_page.content.decode()


def test_bad_parameters_give_a_message_not_a_server_error(client, world, cast):
    client.force_login(cast["owner"])
    url = reverse("studies:dataset-outputs", args=[world["dataset"].pk])
    page = client.get(url, {"run": world["one"].pk, "min": "2", "max": "1"})
    assert page.status_code == 400 and "min (2) is above max (1)" in page.content.decode()
    partial = client.get(
        url, {"sort": "nope"}, headers={"HX-Request": "true", "HX-Target": "outputs"}
    )
    assert partial.status_code == 200 and 'id="outputs-problem"' in partial.content.decode()


def test_output_page_shows_source_scores_and_judgments(client, world, cast):
    client.force_login(cast["owner"])
    output = world["outputs"]["alpha-doc", "A"]
    output.document.context = ["Hi there.", "Hello!"]
    output.document.save()
    body = client.get(reverse("studies:output-detail", args=[output.pk])).content.decode()
    assert "The cat sat on the mat." in body and "A reference." in body and "Hello!" in body
    assert "first alpha text" in body and "0.5000" in body and "4.0000" not in body
    assert f'href="{reverse("studies:run-detail", args=[world["one"].pk])}"' in body
    assert "imported from humans.jsonl" in body and cast["annotator"].username in body
    assert body.count("<meter") == 3 and "0.700" in body


def test_another_researchers_outputs_are_not_found(client, world, cast):
    client.force_login(cast["outsider"])
    output = world["outputs"]["alpha-doc", "A"]
    assert client.get(reverse("studies:output-detail", args=[output.pk])).status_code == 404
    url = reverse("studies:dataset-outputs", args=[world["dataset"].pk])
    assert client.get(url).status_code == 404
    client.force_login(cast["annotator"])
    assert client.get(url).status_code == 403


def test_drilldown_points_and_disagreements_link_to_output_pages(client, scored, cast):  # noqa: F811
    dataset = Dataset.objects.get(name="scored")
    run, coh = dataset.runs.get(label="good"), Aspect.objects.get(code="COH", owner=None)
    details = drilldown(dataset, run.pk, coh.pk, MatrixParams.from_query({}))
    assert details is not None
    for point in details["scatter"]["data"]["values"] + details["disagreements"]:
        output = Output.objects.select_related("document").get(pk=point["id"])
        assert (output.document.doc_key, output.system_id) == (point["doc"], point["system"])
        assert point["href"] == reverse("studies:output-detail", args=[point["id"]])
    client.force_login(cast["owner"])
    cell = reverse("studies:correlations-cell", args=[dataset.pk, run.pk, coh.pk])
    body = client.get(cell, headers={"HX-Request": "true"}).content.decode()
    assert 'id="cell-browse"' in body and details["disagreements"][0]["href"] in body
    listed = client.get(details["browse"])
    both = (
        Output.objects.filter(
            document__dataset=dataset,
            metric_scores__run=run,
            metric_scores__value__isnull=False,
            judgments__aspect=coh,
        )
        .distinct()
        .count()
    )
    assert listed.status_code == 200 and f"{both} outputs" in listed.content.decode()


# --- the API, through the same service ----------------------------------------------------


def test_api_lists_outputs_searched_filtered_and_sorted_like_the_page(world, cast):
    from rest_framework.test import APIClient

    client = APIClient()
    client.force_authenticate(cast["owner"])
    pk, one = world["dataset"].pk, world["one"].pk
    listed = client.get(
        "/api/outputs/", {"dataset": pk, "sort": f"-run:{one}", "include": "scores"}
    )
    assert listed.status_code == 200, listed.content
    rows = listed.json()["results"]
    assert [(r["doc_key"], r["system_id"]) for r in rows] == expected_order(lambda v: v[1], True)
    assert {s["value"] for s in rows[0]["scores"]} == {0.9, 1.0}
    ranged = client.get("/api/outputs/", {"dataset": pk, "aspect": "COH", "hmin": 3, "q": "text"})
    assert [(r["doc_key"], r["system_id"]) for r in ranged.json()["results"]] == [
        ("alpha-doc", "A"),
        ("beta-doc", "A"),
    ]
    plain = client.get("/api/outputs/", {"dataset": pk, "ordering": "-system_id"}).json()
    assert [r["system_id"] for r in plain["results"]] == ["B", "B", "A", "A"]  # DRF's own
    bad = client.get("/api/outputs/", {"dataset": pk, "run": one, "min": 3, "max": 1})
    assert bad.status_code == 400 and "min (3) is above max (1)" in bad.content.decode()
    assert client.get("/api/outputs/", {"sort": f"run:{one}"}).status_code == 400  # no dataset
    client.force_authenticate(cast["outsider"])
    hidden = client.get("/api/outputs/", {"dataset": pk, "sort": f"run:{one}"})
    assert hidden.status_code == 200 and hidden.json()["count"] == 0


def test_document_page_groups_its_outputs_with_their_scores(client, world, cast):
    client.force_login(cast["owner"])
    document = world["outputs"]["alpha-doc", "A"].document
    rows = browse.document_rows(document, browse.choices(world["dataset"]))
    assert [(r.output.system_id, r.scores, r.means) for r in rows] == [
        ("A", [0.5, 2.0], [4.0]),
        ("B", [0.9, 1.0], [2.0]),
    ]
    url = reverse("studies:document-detail", args=[document.pk])
    body = client.get(url).content.decode()
    assert "The cat sat on the mat." in body and "first alpha text" in body
    assert "second beta text" in body and "third gamma text" not in body
    for row in rows:
        assert f'href="{row.href}"' in body
    output_page = client.get(reverse("studies:output-detail", args=[rows[0].output.pk]))
    assert f'href="{url}"' in output_page.content.decode()
    client.force_login(cast["outsider"])
    assert client.get(url).status_code == 404
