"""The judge report card, the correlation matrix and the pairs page on every file of
``../shared/data``: real means of several annotators (thirds, fifths, tenths of MQM
penalties), binary aspects, continuous scores, and pairwise judgments; no exception, and
what each shows is in its range.

Each file is cut to its first :data:`MAX_DOCUMENTS` documents (in the file's order: the
data-to-text files have one or two outputs per document, the others 5 to 24), so one
dataset's pages take a few seconds; the statistics see real values and real ties.
Imported as today's importer takes the files (:mod:`tests.studies.shared_datasets`),
with two imported judges per file: ``judge`` (the first aspect's mean plus noise,
rounded to one decimal: binned to the annotators' scale by rounding) and ``words`` (the
output's length: binned by rank). Every page is computed in the request.
"""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np
import pytest
from django.core.management import call_command
from django.urls import reverse

from studies.models import Aspect, Dataset, MetricRun, Output
from studies.services.analysis.report_card import CardParams, card_for
from tests.conftest import SHARED_DATA
from tests.factories import UserFactory, pairwise_campaign, pairwise_judge_run
from tests.studies.shared_datasets import (
    LIKERT_FILES,
    PAIRWISE_FILES,
    likert_records,
    pair_records,
    pairwise_answers,
    write_records,
)

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(
        not SHARED_DATA.is_dir(), reason="../shared/data is not beside the repository"
    ),
]

MAX_DOCUMENTS = 20
RANGES = {"kappa": (-1, 1), "ac1": (-1, 1), "alpha": (-1, 1)}
NOT_A_NUMBER = re.compile(r"\bnan\b|\binf\b")  # as floatformat writes them (INF: an aspect)


@pytest.fixture(autouse=True)
def inline(settings):  # type: ignore[no-untyped-def]
    """Every page computes in the request (no worker in these tests)."""
    settings.CONCORDIA = {**settings.CONCORDIA, "DASHBOARD_INLINE_SECONDS": 1e9}


def _import(
    tmp_path, owner, name: str, records: list[dict[str, Any]], task: str, options: list[str]
) -> Dataset:  # type: ignore[no-untyped-def]
    path = write_records(tmp_path / f"{name}.jsonl", records)
    call_command(
        "import_records",
        str(path),
        "--dataset",
        name,
        "--task",
        task,
        "--owner",
        owner.username,
        *options,
    )
    return Dataset.objects.get(name=name, owner=owner)


def _with_judges(records: list[dict[str, Any]], seed: int = 0) -> list[dict[str, Any]]:
    rng = np.random.default_rng(seed)
    first = next(iter(records[0]["human"]))
    values = np.array([r["human"][first] for r in records if first in r["human"]])
    spread = float(np.std(values)) or 1.0
    for found in records:
        metrics = {"words": float(len(found["output"].split()))}
        if first in found["human"]:
            noisy = found["human"][first] + rng.normal(0.0, 0.5 * spread)
            metrics["judge"] = round(float(np.clip(noisy, values.min(), values.max())), 1)
        found["metrics"] = metrics
    return records


def _judge_pairs(
    dataset: Dataset, run: MetricRun
) -> list[tuple[int, int, list[float], list[float]]]:
    """A pairwise judge that prefers the output the ``run`` scores higher, each
    neighbouring pair of a document's outputs (by system), a little biased to A."""
    scores = dict(run.scores.values_list("output_id", "value"))
    by_doc: dict[int, list[int]] = {}
    for output in Output.objects.filter(document__dataset=dataset).order_by(
        "document", "system_id"
    ):
        by_doc.setdefault(output.document_id, []).append(output.pk)
    pairs = []
    for ids in by_doc.values():
        for first, second in zip(ids, ids[1:], strict=False):
            delta = scores.get(first, 0.0) - scores.get(second, 0.0)
            p = 1.0 / (1.0 + math.exp(-2.0 * delta))
            pairs.append(
                (
                    first,
                    second,
                    [min(p + 0.1, 1.0), max(0.9 - p, 0.0)],
                    [max(0.9 - p, 0.0), min(p + 0.1, 1.0)],
                )
            )
    return pairs


def _page(client, url: str, query: dict[str, Any] | None = None) -> str:  # type: ignore[no-untyped-def]
    response = client.get(url, query or {})
    assert response.status_code == 200, (url, response.status_code)
    text = response.content.decode()
    assert not NOT_A_NUMBER.search(_visible(text)), (url, NOT_A_NUMBER.search(_visible(text)))
    return text


def _visible(html: str) -> str:
    """The page's text without its tags and attributes."""
    return re.sub(r"<[^>]*>", " ", html)


def _in_range(card: dict[str, Any]) -> None:
    for row in card["rows"]:
        agreed = row["agreement"]
        if agreed["problem"]:
            assert agreed["scale"] is None
            continue
        for key, (low, high) in RANGES.items():
            for side in ("", "human_"):
                found = agreed[side + key]
                for bound in ("value", "low", "high"):
                    if found[bound] is not None:
                        assert low - 1e-9 <= found[bound] <= high + 1e-9, (
                            row["aspect"],
                            key,
                            found,
                        )


@pytest.mark.parametrize("name", sorted(LIKERT_FILES))
def test_the_card_the_matrix_and_the_pairs_page_work_on_every_shared_file(
    name, client, cast, tmp_path
):  # type: ignore[no-untyped-def]
    shared = LIKERT_FILES[name]
    records = _with_judges(likert_records(name, MAX_DOCUMENTS))
    dataset = _import(tmp_path, cast["owner"], name, records, shared.task, shared.options)
    client.force_login(cast["owner"])

    page = _page(client, reverse("studies:dataset-report-card", args=[dataset.pk]))
    assert 'id="report-card-table"' in page and "report-card-waiting" not in page
    card = card_for(dataset, CardParams())
    assert {r["run"]["label"] for r in card["rows"]} == {"judge", "words"}
    _in_range(card)
    export = client.get(reverse("studies:dataset-report-card-export", args=[dataset.pk, "csv"]))
    assert export.status_code == 200 and export.content.decode().count("\n") > len(card["rows"])

    for level in ("sample", "dataset", "system"):
        matrix = _page(client, reverse("studies:correlations", args=[dataset.pk]), {"level": level})
        assert 'id="matrix"' in matrix and "Computing the matrix" not in matrix

    judge = MetricRun.objects.get(dataset=dataset, label="judge")
    first = Aspect.objects.get(pk=card["rows"][0]["aspect"]["pk"])
    run = pairwise_judge_run(dataset, first.code, _judge_pairs(dataset, judge))
    pairs = _page(client, reverse("studies:run-pairwise", args=[run.pk]))
    assert 'id="pairwise-systems"' in pairs
    assert 'id="pairwise-agreement"' in pairs or 'id="pairwise-agreement-missing"' in pairs


def test_thirds_of_summeval_are_an_ordinal_scale_on_the_card(cast, tmp_path):  # type: ignore[no-untyped-def]
    """The case the issue found: SummEval's means of three experts put the card's
    agreement on a 13-point scale of thirds, and the judge's one-decimal scores are
    rounded onto it."""
    records = _with_judges(likert_records("summeval", 10))
    dataset = _import(tmp_path, cast["owner"], "summeval", records, "summarization", [])
    card = card_for(dataset, CardParams(resamples=50))
    row = next(
        r for r in card["rows"] if r["aspect"]["code"] == "COH" and r["run"]["label"] == "judge"
    )
    agreed = row["agreement"]
    assert agreed["problem"] is None and agreed["binning"] == "rounded"
    assert agreed["scale"] == [(3 + k) / 3 for k in range(13)]  # 2.0, not 1.9999999999999991


@pytest.mark.parametrize("name", PAIRWISE_FILES)
def test_the_pairs_page_and_the_empty_card_work_on_the_pairwise_files(name, client, cast, tmp_path):  # type: ignore[no-untyped-def]
    answers = pairwise_answers(name, MAX_DOCUMENTS * 2)
    dataset = _import(
        tmp_path, cast["owner"], name, pair_records(name, MAX_DOCUMENTS * 2), "custom", []
    )
    aspect = Aspect.objects.create(
        code="OVERALL", name="Overall", definition="Which output is better?", owner=cast["owner"]
    )
    outputs = {
        (o.document.doc_key, o.system_id): o
        for o in Output.objects.filter(document__dataset=dataset).select_related("document")
    }
    items = sorted({(a["doc"], a["a"], a["b"]) for a in answers})
    index = {item: k for k, item in enumerate(items)}
    judge_name = answers[0]["annotator"]
    verdict = {"a": [0.9, 0.1], "b": [0.1, 0.9], "tie": [0.5, 0.5]}
    judged = [
        (
            outputs[(a["doc"], a["a"])].pk,
            outputs[(a["doc"], a["b"])].pk,
            verdict[a["winner"]],
            verdict[a["winner"]][::-1],
        )
        for a in answers
        if a["annotator"] == judge_name
    ]
    run = pairwise_judge_run(dataset, aspect.code, judged)
    users = {
        n: UserFactory(username=f"{name}-{n}", role="annotator")
        for n in {a["annotator"] for a in answers}
    }
    campaign = pairwise_campaign(
        dataset,
        cast["owner"],
        aspect,
        [(outputs[(d, a)], outputs[(d, b)]) for d, a, b in items],
        [(users[a["annotator"]], index[(a["doc"], a["a"], a["b"])], a["winner"]) for a in answers],
    )
    client.force_login(cast["owner"])
    url = reverse("studies:run-pairwise", args=[run.pk])
    page = _page(client, url, {"against": f"pairwise:{campaign.pk}"})
    assert 'id="pairwise-systems"' in page and 'id="pairwise-agreement"' in page
    card = _page(client, reverse("studies:dataset-report-card", args=[dataset.pk]))
    assert "report-card-waiting" not in card
    _page(client, reverse("studies:correlations", args=[dataset.pk]))
