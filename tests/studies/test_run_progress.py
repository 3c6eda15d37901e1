"""A run's progress: per document, with an ETA from its own rate and a "loading model"
phase before the first document; cancel keeps what was scored, and a partial run is
labelled on its page, the dataset page, the matrix and the exports."""

from __future__ import annotations

import csv
import io

import pytest
from django.urls import reverse

from scoring.lm import FakeLanguageModel
from studies.models import MetricRun, MetricScore
from studies.services.analysis import tables
from studies.services.analysis.dashboards import matrix_for
from studies.services.analysis.params import MatrixParams
from studies.services.runs import RunRequest, cancel_run, eta, execute_run, phase, start_run
from tests.conftest import record
from tests.factories import import_jsonl

pytestmark = pytest.mark.django_db
N_DOCS, N_SYSTEMS = 4, 3


@pytest.fixture
def progress_dataset(write_jsonl, cast):  # type: ignore[no-untyped-def]
    records = [
        record(
            f"d{d}",
            f"s{s}",
            output=f"Output {s} about the budget {d}.",
            human={"coherence": float(1 + (d + s) % 5)},
        )
        for d in range(N_DOCS)
        for s in range(N_SYSTEMS)
    ]
    return import_jsonl(write_jsonl(records), "progress", cast["owner"])


def _run(dataset, tiny_model):  # type: ignore[no-untyped-def]
    return start_run(
        dataset, RunRequest(aspect="COH", model=tiny_model), enqueue=False, local_paths=True
    )


def _watching(run_pk: int, seen: list[tuple[int, str, int]]):  # type: ignore[no-untyped-def]
    """A model factory whose model notes, at each scoring call, the run's stored progress,
    its phase and the call's size."""

    def factory(r):  # type: ignore[no-untyped-def]
        model = FakeLanguageModel()
        original = model.score_targets

        def score(requests):  # type: ignore[no-untyped-def]
            row = MetricRun.objects.get(pk=run_pk)
            seen.append((row.done, phase(row), len(requests)))
            return original(requests)

        model.score_targets = score  # type: ignore[method-assign]
        row = MetricRun.objects.get(pk=run_pk)
        seen.append((row.done, phase(row), 0))  # while the model loads
        return model

    return factory


def test_progress_moves_once_per_document_by_default_and_loading_comes_first(
    progress_dataset, tiny_model
):
    run = _run(progress_dataset, tiny_model)
    seen: list[tuple[int, str, int]] = []
    assert execute_run(run.pk, model_factory=_watching(run.pk, seen)) == "succeeded"
    loading, *calls = seen
    assert loading == (0, "loading model", 0)
    # one scoring call per document, the stored progress one document further each time
    assert [done for done, _, _ in calls] == [k * N_SYSTEMS for k in range(N_DOCS)]
    assert [size for _, _, size in calls] == [N_SYSTEMS] * N_DOCS
    assert all(p == "scoring" for _, p, _ in calls)
    run.refresh_from_db()
    assert run.done == run.total == N_DOCS * N_SYSTEMS
    assert run.timings["phase"] == "scoring" and run.timings["scoring_outputs_per_s"] > 0
    assert phase(run) == ""  # finished: no phase to show


def test_a_document_is_never_split_between_chunks(progress_dataset, tiny_model):
    run = _run(progress_dataset, tiny_model)
    calls: list[int] = []

    def factory(r):  # type: ignore[no-untyped-def]
        model = FakeLanguageModel()
        original = model.score_targets

        def score(requests):  # type: ignore[no-untyped-def]
            calls.append(len(requests))
            return original(requests)

        model.score_targets = score  # type: ignore[method-assign]
        return model

    assert execute_run(run.pk, model_factory=factory, chunk_outputs=4) == "succeeded"
    # 4 outputs a chunk, in whole documents of 3: two documents per call
    assert calls == [2 * N_SYSTEMS, 2 * N_SYSTEMS]


def test_eta_comes_from_the_runs_own_rate_and_the_page_says_minutes(
    progress_dataset, tiny_model, owner_client
):
    run = _run(progress_dataset, tiny_model)
    MetricRun.objects.filter(pk=run.pk).update(
        status="running",
        done=3,
        timings={"phase": "scoring", "scoring_outputs_per_s": 0.05, "outputs_per_s": 0.5},
    )
    run.refresh_from_db()
    assert eta(run) == pytest.approx((run.total - 3) / 0.05)  # the scoring rate, not the wall's
    page = owner_client.get(reverse("studies:run-detail", args=[run.pk]), HTTP_HX_REQUEST="true")
    minutes = round((run.total - 3) / 0.05 / 60)
    assert f"about {minutes} min left" in page.content.decode()
    assert "loading model" not in page.content.decode()


def test_the_page_says_loading_model_before_the_first_document(
    progress_dataset, tiny_model, owner_client
):
    run = _run(progress_dataset, tiny_model)
    MetricRun.objects.filter(pk=run.pk).update(status="running", timings={"phase": "loading model"})
    body = owner_client.get(reverse("studies:run-detail", args=[run.pk])).content.decode()
    assert 'id="run-phase"' in body and "loading model" in body and "min left" not in body


def test_cancel_stops_after_the_current_document_and_every_page_says_what_was_kept(
    progress_dataset, tiny_model, owner_client
):
    run = _run(progress_dataset, tiny_model)

    def cancelling(r):  # type: ignore[no-untyped-def]
        model = FakeLanguageModel()
        original = model.score_targets

        def score(requests):  # type: ignore[no-untyped-def]
            if model.calls == 1:  # during the second document
                cancel_run(MetricRun.objects.get(pk=r.pk))
            return original(requests)

        model.score_targets = score  # type: ignore[method-assign]
        return model

    assert execute_run(run.pk, model_factory=cancelling) == "cancelled"
    run.refresh_from_db()
    kept = MetricScore.objects.filter(run=run).count()
    assert run.status == "cancelled" and kept == run.done == 2 * N_SYSTEMS and run.is_partial
    total = N_DOCS * N_SYSTEMS

    body = owner_client.get(reverse("studies:run-detail", args=[run.pk])).content.decode()
    assert (
        f"Cancelled after {kept} of {total} outputs; the {kept} scores are kept and count "
        "as a partial run; Resume scores the rest."
    ) in body
    assert "Resume</button>" in body

    listing = owner_client.get(
        reverse("studies:dataset-detail", args=[progress_dataset.pk])
    ).content.decode()
    assert f"partial: {kept} of {total}" in listing
    home = owner_client.get(reverse("studies:home")).content.decode()
    assert f"partial: {kept} of {total}" in home  # the recent runs

    matrix = owner_client.get(
        reverse("studies:correlations", args=[progress_dataset.pk])
    ).content.decode()
    assert f"cancelled, partial {kept}/{total}" in matrix

    result = matrix_for(progress_dataset, MatrixParams())
    rows = {r["run"]: r for r in csv.DictReader(io.StringIO(tables.to_csv(result)))}
    assert rows[run.label]["partial_run"] == f"cancelled: {kept} of {total} outputs"
    latex = tables.to_latex(result)
    assert r"$^{p}$ &" in latex and r"% $^{p}$: a partial run" in latex


def test_a_finished_run_that_scored_everything_is_not_labelled_partial(
    progress_dataset, tiny_model, owner_client
):
    run = _run(progress_dataset, tiny_model)
    assert execute_run(run.pk, model_factory=lambda r: FakeLanguageModel()) == "succeeded"
    run.refresh_from_db()
    assert not run.is_partial
    matrix = owner_client.get(
        reverse("studies:correlations", args=[progress_dataset.pk])
    ).content.decode()
    assert "partial-run" not in matrix
    result = matrix_for(progress_dataset, MatrixParams())
    assert "$^{p}$" not in tables.to_latex(result)


def test_cancelling_bumps_the_data_version_so_no_table_shows_a_stale_status(
    progress_dataset, tiny_model
):
    run = _run(progress_dataset, tiny_model)
    before = MatrixParams().key(progress_dataset)
    assert cancel_run(run)
    progress_dataset.refresh_from_db()
    assert MatrixParams().key(progress_dataset) != before


def test_the_api_gives_a_runs_phase_and_what_a_cancelled_run_kept(
    progress_dataset, tiny_model, cast
):
    from rest_framework.test import APIClient

    run = _run(progress_dataset, tiny_model)
    api = APIClient()
    api.force_authenticate(cast["owner"])
    MetricRun.objects.filter(pk=run.pk).update(status="running", timings={"phase": "loading model"})
    body = api.get(f"/api/runs/{run.pk}/").json()
    assert body["phase"] == "loading model" and body["is_partial"] is False
    MetricRun.objects.filter(pk=run.pk).update(status="cancelled", done=3)
    body = api.get(f"/api/runs/{run.pk}/").json()
    assert body["is_partial"] is True and body["phase"] == ""
    assert body["outcome"].startswith(f"Cancelled after 3 of {run.total} outputs")
