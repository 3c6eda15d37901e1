"""The report card's page (dataset and study), its exports, and its computation by the
light worker for a large dataset."""

from __future__ import annotations

import csv
import io
import json
from dataclasses import asdict

import pytest
from django.urls import reverse

from studies.models import Aspect, Study
from studies.services.analysis.report_card import CardParams, sorted_rows
from studies.services.analysis.report_card.store import cached_card
from studies.services.jobs import all_jobs
from tests.studies.report_card_data import add_pairwise_run

pytestmark = pytest.mark.django_db


def page(client, panel, headers=None, **query):  # type: ignore[no-untyped-def]
    url = reverse("studies:dataset-report-card", args=[panel.dataset.pk])
    return client.get(url, {"aspects": "COH", **query}, headers=headers)


def test_the_page_shows_a_row_per_judge_with_its_verdict_and_links(client, panel, cast):
    client.force_login(cast["owner"])
    body = page(client, panel).content.decode()
    assert 'id="report-card-table"' in body and body.count('class="card-row') == 4
    assert "can replace annotators for coherence here" in body
    assert "cannot replace annotators for coherence here" in body
    coh = Aspect.objects.get(code="COH")
    cell = reverse("studies:correlations-cell", args=[panel.dataset.pk, panel.mean.pk, coh.pk])
    assert f'class="cell-link" href="{cell}?' in body  # each row's matrix cell
    assert f'href="/runs/{panel.sampled.pk}/"' in body  # a computed run's page
    assert f"diagnostics/?run={panel.mean.pk}&amp;aspect={coh.pk}&amp;" in body
    detail = client.get(reverse("studies:dataset-detail", args=[panel.dataset.pk]))
    assert b'id="open-report-card"' in detail.content
    matrix = client.get(reverse("studies:correlations", args=[panel.dataset.pk]))
    assert b'id="report-card-link"' in matrix.content


def test_sorting_by_a_column_orders_the_rows_and_again_the_other_way(client, panel, cast):
    client.force_login(cast["owner"])
    card = page(client, panel).context["card"]
    best = [r["run"]["label"] for r in sorted_rows(card, "kappa")]
    kappas = [r["agreement"]["kappa"]["value"] for r in sorted_rows(card, "kappa")]
    assert kappas == sorted(kappas, reverse=True)
    response = page(client, panel, sort="kappa")
    assert [r["run"]["label"] for r in response.context["rows"]] == best
    assert 'sort=-kappa"' in response.content.decode()  # the header now flips it
    flipped = page(client, panel, sort="-kappa").context["rows"]
    assert [r["run"]["label"] for r in flipped] == best[::-1]
    verdicts = [r["verdict"]["code"] for r in page(client, panel, sort="verdict").context["rows"]]
    assert verdicts[0] == "can" and verdicts[-1] == "cannot"


def test_the_htmx_request_gets_the_partial(client, panel, cast):
    client.force_login(cast["owner"])
    response = page(client, panel, headers={"HX-Request": "true", "HX-Target": "report-card"})
    body = response.content.decode()
    assert "<html" not in body and body.startswith('<div id="report-card">')


def test_others_cannot_see_the_card(client, panel, cast):
    client.force_login(cast["outsider"])
    assert page(client, panel).status_code == 404
    client.force_login(cast["annotator"])
    assert page(client, panel).status_code == 403


def test_a_statistic_at_a_level_where_it_does_not_exist_says_why(client, panel, cast):
    client.force_login(cast["owner"])
    body = page(client, panel, level="sample", coef="spa").content.decode()
    assert 'id="report-card-problem"' in body


def test_the_studys_card_covers_its_aspects(client, panel, cast):
    study = Study.objects.create(name="Coherence study", dataset=panel.dataset, owner=cast["owner"])
    study.aspects.add(Aspect.objects.get(code="FLU"))
    client.force_login(cast["owner"])
    response = client.get(reverse("studies:study-report-card", args=[study.pk]))
    rows = response.context["rows"]
    assert rows and {r["aspect"]["code"] for r in rows} == {"FLU"}
    assert b'id="study-link"' in response.content
    detail = client.get(reverse("studies:study-detail", args=[study.pk]))
    assert b'id="study-report-card"' in detail.content
    client.force_login(cast["outsider"])
    assert client.get(reverse("studies:study-report-card", args=[study.pk])).status_code == 404


def export(client, panel, file_format: str, **query):  # type: ignore[no-untyped-def]
    url = reverse("studies:dataset-report-card-export", args=[panel.dataset.pk, file_format])
    return client.get(url, {"aspects": "COH", **query})


def test_the_csv_has_a_line_per_row_sorted_as_asked(client, panel, cast):
    client.force_login(cast["owner"])
    response = export(client, panel, "csv", sort="-corr")
    assert response["Content-Type"].startswith("text/csv")
    assert 'filename="panel-report-card-sample-spearman.csv"' in response["Content-Disposition"]
    lines = list(csv.DictReader(io.StringIO(response.content.decode())))
    card = page(client, panel).context["card"]
    expected = sorted_rows(card, "-corr")
    assert [int(line["run_id"]) for line in lines] == [r["run"]["pk"] for r in expected]
    for line, row in zip(lines, expected, strict=True):
        assert float(line["correlation"]) == pytest.approx(row["correlation"]["value"], abs=1e-6)
        assert line["verdict"] == row["verdict"]["code"]
        assert float(line["kappa_w_low"]) == pytest.approx(
            row["agreement"]["kappa"]["low"], abs=1e-6
        )
    mean = next(line for line in lines if line["judge"] == "mean judge")
    assert mean["alt_test_passed"] == "1" and mean["binning"] == "rounded"
    sampled = next(line for line in lines if int(line["run_id"]) == panel.sampled.pk)
    assert float(sampled["cost_per_1k"]) == pytest.approx(20.0) and sampled["icc1"]


def test_the_latex_and_json_exports(client, panel, cast):
    client.force_login(cast["owner"])
    latex = export(client, panel, "tex").content.decode()
    assert r"\toprule" in latex and r"\bottomrule" in latex and "% Legend:" in latex
    assert latex.count(r"\\") == 1 + 4  # the header and one line per row
    assert r"mean judge & COH" in latex and r"\checkmark" in latex
    body = json.loads(export(client, panel, "json", sort="omega").content)
    assert len(body["rows"]) == 4 and body["epsilon"] == 0.2
    omegas = [r["alt_test"]["winning_rate"] for r in body["rows"]]
    present = [o for o in omegas if o is not None]
    assert present == sorted(present, reverse=True)


def test_a_large_datasets_card_is_computed_by_the_light_worker(
    client, panel, cast, settings, monkeypatch
):
    from studies import tasks
    from studies.services.analysis.report_card import store

    settings.CONCORDIA = {**settings.CONCORDIA, "DASHBOARD_INLINE_SECONDS": 0.0}
    sent = []
    monkeypatch.setattr(store, "send", lambda name, *args: sent.append((name, args)))
    client.force_login(cast["owner"])
    waiting = page(client, panel).content.decode()
    assert 'id="report-card-waiting"' in waiting and 'hx-trigger="every 2s"' in waiting
    assert any(j.kind == "report card" for j in all_jobs())  # on the jobs page
    page(client, panel)  # asked already: not sent twice
    assert export(client, panel, "csv").status_code == 503
    assert len(sent) == 1 and sent[0][0] == "studies.tasks.compute_report_card"
    params = CardParams.from_query({"aspects": "COH"})
    assert sent[0][1] == (panel.dataset.pk, asdict(params))
    assert settings.CELERY_TASK_ROUTES[sent[0][0]]["queue"] == "light"
    assert tasks.compute_report_card(*json.loads(json.dumps(sent[0][1]))).startswith("4 rows")
    assert cached_card(panel.dataset, params) is not None
    done = page(client, panel, poll="1", headers={"HX-Request": "true", "HX-Target": "report-card"})
    assert done.status_code == 286 and b'id="report-card-table"' in done.content
    panel.dataset.bump_data_version()  # new data: a new card
    panel.dataset.refresh_from_db()
    assert cached_card(panel.dataset, params) is None


def test_a_pairwise_judges_position_columns_show_on_the_page_and_in_the_csv(client, panel, cast):
    run = add_pairwise_run(panel)
    client.force_login(cast["owner"])
    body = page(client, panel, sort="first").content.decode()
    assert 'class="num card-position"' in body and "40 of 80 pairs keep their verdict" in body
    assert 'id="sort-position"' in body and body.count("not pairwise") == 4
    lines = list(csv.DictReader(io.StringIO(export(client, panel, "csv").content.decode())))
    mine = next(line for line in lines if int(line["run_id"]) == run.pk)
    assert float(mine["position_consistency"]) == 0.5 and mine["pairs"] == "80"
    assert float(mine["first_position_share"]) == 0.75
    assert all(line["pairs"] == "" for line in lines if line is not mine)
