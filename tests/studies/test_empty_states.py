"""Empty states say what is there and what to do next; every page links the favicon."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest
from django.contrib.staticfiles import finders
from django.template.loader import render_to_string
from django.urls import reverse

from studies.models import Dataset
from studies.services.contents import DatasetContents, dataset_contents
from studies.services.imports import ImportOptions, import_file
from tests.conftest import record
from tests.factories import MetricRunFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def judged_only(write_jsonl, cast) -> Dataset:  # type: ignore[no-untyped-def]
    """Three outputs with coherence judgments, two of them with fluency too; no metrics."""
    rows = [
        record("d1", "s1", human={"coherence": 4, "fluency": 3}, metrics={}),
        record("d1", "s2", human={"coherence": 2, "fluency": 5}, metrics={}),
        record("d2", "s1", human={"coherence": 3}, metrics={}),
    ]
    path = write_jsonl(rows)
    import_file(
        path,
        ImportOptions(
            dataset="judged",
            task="summarization",
            file_format="jsonl",
            file_name=path.name,
            owner=cast["owner"],
        ),
    )
    return Dataset.objects.get(name="judged")


def _matrix_text(client, dataset: Dataset) -> str:  # type: ignore[no-untyped-def]
    response = client.get(reverse("studies:correlations", args=[dataset.pk]))
    assert response.status_code == 200
    return " ".join(response.content.decode().split())


def test_contents_count_judgments_per_aspect_and_runs(judged_only):
    contents = dataset_contents(judged_only)
    assert contents.n_judgments == 5 and contents.aspects == ("Coherence", "Fluency")
    assert contents.n_runs == 0
    MetricRunFactory(dataset=judged_only, status="succeeded")
    MetricRunFactory(dataset=judged_only, status="running")
    later = dataset_contents(judged_only)
    assert (later.n_runs, later.n_runs_unfinished) == (2, 1)


@pytest.mark.parametrize(
    ("names", "text"),
    [
        ((), ""),
        (("Coherence",), "Coherence"),
        (("Coherence", "Fluency"), "Coherence and Fluency"),
        (("A", "B", "C"), "A, B and C"),
    ],
)
def test_aspect_list_reads_as_a_sentence(names, text):
    assert DatasetContents(0, names, 0, 0).aspect_list == text


def test_judgments_without_runs_say_how_many_on_which_aspects_and_link_a_new_run(
    client, cast, judged_only
):
    client.force_login(cast["owner"])
    text = _matrix_text(client, judged_only)
    assert "No metric runs or judgments" not in text
    assert "judged has 5 human judgments on Coherence and Fluency and no metric runs yet." in text
    assert f'href="{reverse("studies:run-new", args=[judged_only.pk])}"' in text
    assert 'id="empty-upload"' not in text  # it has judgments: no call to upload them


def test_runs_without_judgments_ask_for_judgments(client, cast):
    run = MetricRunFactory(dataset__owner=cast["owner"], dataset__name="scores-only")
    client.force_login(cast["owner"])
    text = _matrix_text(client, run.dataset)
    assert "scores-only has no human judgments and 1 metric run (1 not finished) yet." in text
    assert 'id="empty-upload"' in text and 'id="empty-campaign"' in text
    assert 'id="empty-start-run"' not in text


def test_thousands_are_grouped_and_four_aspects_listed():
    html = render_to_string(
        "studies/partials/matrix_empty.html",
        {
            "dataset": Dataset(pk=7, name="summeval"),
            "contents": DatasetContents(
                6400, ("Coherence", "Consistency", "Fluency", "Relevance"), 0, 0
            ),
        },
    )
    text = " ".join(html.split())
    assert (
        "summeval has 6,400 human judgments on Coherence, Consistency, Fluency and Relevance "
        "and no metric runs yet." in text
    )
    assert reverse("studies:run-new", args=[7]) in text


def test_dataset_page_says_what_to_do_when_it_has_no_runs(client, cast, judged_only):
    client.force_login(cast["owner"])
    page = client.get(reverse("studies:dataset-detail", args=[judged_only.pk])).content.decode()
    assert 'id="no-runs"' in page and reverse("studies:run-new", args=[judged_only.pk]) in page
    assert 'id="no-judgments"' not in page


def test_every_page_links_the_svg_favicon(client, cast):
    client.force_login(cast["annotator"])
    page = client.get(reverse("annotation:home")).content.decode()
    assert '<link rel="icon" href="/static/img/favicon.svg" type="image/svg+xml">' in page
    path = finders.find("img/favicon.svg")
    assert path is not None
    root = ET.parse(path).getroot()
    assert root.tag == "{http://www.w3.org/2000/svg}svg" and root.get("viewBox") == "0 0 32 32"
    assert client.get(reverse("login")).content.decode().count('rel="icon"') == 1
