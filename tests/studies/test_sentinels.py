"""Sentinel baselines: one action adds length, random and a source-free GPTScore once;
they run through the normal run machinery; the matrix never makes them best and marks
a metric that does not beat them (here, a metric that is just the output's length)."""

from __future__ import annotations

import numpy as np
import pytest
from django.urls import reverse

from scoring.lm import FakeLanguageModel
from studies.models import MetricRun, MetricScore, Output
from studies.services.analysis import dashboards
from studies.services.analysis.params import MatrixParams
from studies.services.analysis.sentinels import add_sentinels
from studies.services.runs import execute_run
from tests.factories import import_jsonl

pytestmark = pytest.mark.django_db
WORDS = [
    "the",
    "council",
    "approved",
    "a",
    "budget",
    "after",
    "a",
    "long",
    "debate",
    "on",
    "schools",
    "roads",
    "and",
    "parks",
]


def length_records(n_docs: int = 12, n_systems: int = 5, seed: int = 1) -> list[dict[str, object]]:
    """Humans like longer outputs (plus noise); ``just_length`` is the token count and
    ``good`` follows the humans closely."""
    rng = np.random.default_rng(seed)
    records = []
    for d in range(n_docs):
        for s in range(n_systems):
            n = int(rng.integers(3, 15))
            human = float(np.clip(round(1 + n / 3.5 + rng.normal(0, 0.8)), 1, 5))
            records.append(
                {
                    "doc_id": f"d{d:02d}",
                    "system_id": f"s{s}",
                    "source": f"Source {d}.",
                    "references": [f"Reference {d}."],
                    "output": " ".join(WORDS[:n]),
                    "human": {"coherence": human},
                    "metrics": {"just_length": float(n), "good": human + float(rng.normal(0, 0.1))},
                }
            )
    return records


@pytest.fixture
def lengthy_dataset(write_jsonl, cast):  # type: ignore[no-untyped-def]
    return import_jsonl(
        write_jsonl(length_records(), name="lengthy.jsonl"), "lengthy", cast["owner"]
    )


def test_the_action_adds_the_three_sentinels_once(
    lengthy_dataset, tiny_model, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        added = add_sentinels(lengthy_dataset, model=tiny_model, local_paths=True, seed=3)
    assert added.skipped == [] and added.existing == []
    assert sorted(r.metric for r in added.created) == ["gptscore", "length", "random"]
    assert len(callbacks) == 3  # each enqueued on commit, like any run
    by_metric = {r.metric: r for r in added.created}
    assert by_metric["random"].config["seed"] == 3 and by_metric["random"].config["sentinel"]
    assert by_metric["length"].config["tokenizer"] == "whitespace"
    gpt = by_metric["gptscore"].config
    assert (
        gpt["dimension"] == "hypo" and gpt["aspect"] == "COH" and "{src}" in gpt["template"]["text"]
    )
    assert all(r.status == "pending" and r.total == 60 for r in added.created)

    again = add_sentinels(lengthy_dataset, model=tiny_model, local_paths=True, seed=3)
    assert again.created == [] and {r.pk for r in again.existing} == {r.pk for r in added.created}
    assert MetricRun.objects.filter(dataset=lengthy_dataset, kind="computed").count() == 3
    other_seed = add_sentinels(lengthy_dataset, model=tiny_model, local_paths=True, seed=4)
    assert [r.metric for r in other_seed.created] == ["random"]  # a new configuration


def test_a_failed_sentinel_is_added_again(lengthy_dataset, tiny_model):
    first = add_sentinels(lengthy_dataset, model=tiny_model, local_paths=True, enqueue=False)
    MetricRun.objects.filter(pk=first.created[0].pk).update(status=MetricRun.Status.FAILED)
    assert (
        len(
            add_sentinels(
                lengthy_dataset, model=tiny_model, local_paths=True, enqueue=False
            ).created
        )
        == 1
    )


def test_a_missing_model_skips_only_the_gptscore_sentinel(lengthy_dataset):
    added = add_sentinels(lengthy_dataset, model="no-such-model", enqueue=False)
    assert sorted(r.metric for r in added.created) == ["length", "random"]
    assert len(added.skipped) == 1 and added.skipped[0].startswith("gptscore")


def _run_sentinels(dataset, tiny_model):  # type: ignore[no-untyped-def]
    added = add_sentinels(dataset, model=tiny_model, local_paths=True, enqueue=False)
    for run in added.created:
        assert execute_run(run.pk, model_factory=lambda r: FakeLanguageModel()) == "succeeded"
        assert execute_run(run.pk) == "not pending"  # a second call writes nothing
    return {r.metric: r for r in added.created}


def test_sentinel_runs_score_length_and_seeded_random(lengthy_dataset, tiny_model):
    runs = _run_sentinels(lengthy_dataset, tiny_model)
    lengths = dict(
        MetricScore.objects.filter(run=runs["length"]).values_list("output__text", "value")
    )
    assert len(lengths) > 1 and all(v == len(t.split()) for t, v in lengths.items())
    randoms = list(MetricScore.objects.filter(run=runs["random"]).values_list("value", flat=True))
    assert len(randoms) == 60 and all(0 <= v < 1 for v in randoms) and len(set(randoms)) == 60


def _matrix(dataset):  # type: ignore[no-untyped-def]
    params = MatrixParams(resamples=300)
    result = dashboards.compute_matrix(dashboards.frame_for(dataset, params), params)
    labels = [r["label"] for r in result["runs"]]
    return result, {label: result["columns"][0]["cells"][i] for i, label in enumerate(labels)}


def test_the_matrix_marks_a_metric_that_does_not_beat_a_sentinel(lengthy_dataset, tiny_model):
    runs = _run_sentinels(lengthy_dataset, tiny_model)
    result, cells = _matrix(lengthy_dataset)
    sentinel_labels = {r.label for r in runs.values()}
    assert {r["label"] for r in result["runs"] if r["sentinel"]} == sentinel_labels
    assert not any(cells[label]["best"] or cells[label]["rank"] for label in sentinel_labels)
    length = runs["length"]
    # the metric that is just the length cannot beat the length sentinel
    fails = cells["just_length"]["fails_sentinel"]
    assert fails is not None and fails["p"] > 0.05 and fails["run"] in {r.pk for r in runs.values()}
    assert cells["just_length"]["value"] == pytest.approx(cells[length.label]["value"])
    # a metric that follows the humans beats every sentinel, and is the best
    assert cells["good"]["fails_sentinel"] is None and cells["good"]["best"]
    assert all(cells[label]["fails_sentinel"] is None for label in sentinel_labels)
    # the exports carry it: CSV columns per aspect and a sentinel flag per run, a LaTeX mark
    import csv
    import io

    from studies.services.analysis.tables import to_csv, to_latex

    rows = {r["run"]: r for r in csv.DictReader(io.StringIO(to_csv(result, raw=True)))}
    code = result["columns"][0]["aspect"]["code"]
    assert rows["just_length"][f"{code}_not_above_sentinel"] == fails["label"]
    assert float(rows["just_length"][f"{code}_not_above_sentinel_p"]) == pytest.approx(
        fails["p"], abs=1e-4
    )
    assert rows["good"][f"{code}_not_above_sentinel"] == "" and rows["good"]["sentinel"] == ""
    assert all(rows[label]["sentinel"] == "yes" for label in sentinel_labels)
    latex = to_latex(result)
    just = next(line for line in latex.splitlines() if line.startswith("just"))
    assert r"$^{\approx S}$" in just and r"% $^{\approx S}$: not significantly above" in latex


def test_a_sentinel_still_scoring_marks_nothing_and_a_mark_says_what_it_compared(
    lengthy_dataset, tiny_model
):
    """Issue: with the source-free GPTScore sentinel at 400/1600 outputs, fully scored
    runs were marked ≈S from those 400. A sentinel that has not scored every output marks
    nothing (the page says so), as a partial run is never best."""
    runs = _run_sentinels(lengthy_dataset, tiny_model)
    _, cells = _matrix(lengthy_dataset)
    fails = cells["just_length"]["fails_sentinel"]
    n_judged = cells["just_length"]["judged_outputs"]
    assert fails is not None and fails["n"] == n_judged  # both scored every judged output
    assert cells["just_length"]["sentinels_pending"] == []
    # the length sentinel loses most of its scores and runs again: it is partial
    length = runs["length"]
    kept = MetricScore.objects.filter(run=length).order_by("pk")[:10].values_list("pk", flat=True)
    MetricScore.objects.filter(run=length).exclude(pk__in=list(kept)).delete()
    MetricRun.objects.filter(pk=length.pk).update(status="running", done=10)
    lengthy_dataset.bump_data_version()
    result, cells = _matrix(lengthy_dataset)
    assert all(
        c["fails_sentinel"] is None or c["fails_sentinel"]["run"] != length.pk
        for c in cells.values()
    )
    assert cells["just_length"]["sentinels_pending"] == [length.label]
    assert result["sentinels_pending"] == [length.label]


def test_without_intervals_nothing_is_marked(lengthy_dataset, tiny_model):
    _run_sentinels(lengthy_dataset, tiny_model)
    params = MatrixParams(ci=False)
    result = dashboards.compute_matrix(dashboards.frame_for(lengthy_dataset, params), params)
    assert all(c["fails_sentinel"] is None for c in result["columns"][0]["cells"])


def test_the_button_adds_sentinels_for_the_owner_only(client, lengthy_dataset, cast, settings):
    url = reverse("studies:sentinels", args=[lengthy_dataset.pk])
    client.force_login(cast["outsider"])
    assert client.post(url).status_code == 404
    client.force_login(cast["owner"])
    assert client.get(url).status_code == 405  # a POST only
    response = client.post(url)
    assert response.status_code == 302 and response["Location"].endswith(
        f"/datasets/{lengthy_dataset.pk}/correlations/"
    )
    first = MetricRun.objects.filter(dataset=lengthy_dataset, kind="computed").count()
    assert first >= 2  # length and random; GPTScore too when the default model is installed
    client.post(url)
    assert MetricRun.objects.filter(dataset=lengthy_dataset, kind="computed").count() == first


def test_the_correlations_page_shows_the_badge_the_mark_and_the_button(
    client, lengthy_dataset, cast, tiny_model
):
    _run_sentinels(lengthy_dataset, tiny_model)
    client.force_login(cast["owner"])
    page = client.get(reverse("studies:correlations", args=[lengthy_dataset.pk])).content.decode()
    assert 'id="add-sentinels"' in page and 'id="planner-link"' in page
    # it asks first, saying how long the model worker is held (the GPTScore sentinel's rate)
    n = Output.objects.filter(document__dataset=lengthy_dataset).count()
    assert f'data-confirm="This starts up to three sentinel runs over the {n} outputs' in page
    assert page.count("sentinel-badge") == 3
    assert "does not significantly beat the sentinel " in page and "≈S</span>" in page


def test_the_command_adds_and_scores_the_sentinels_once(lengthy_dataset, tiny_model):
    from io import StringIO

    from django.core.management import call_command

    out = StringIO()
    call_command(
        "run_metric",
        "--dataset",
        "lengthy",
        "--sentinels",
        "--model",
        tiny_model,
        "--seed",
        "2",
        stdout=out,
    )
    runs = MetricRun.objects.filter(dataset=lengthy_dataset, kind="computed")
    assert sorted(runs.values_list("metric", flat=True)) == ["gptscore", "length", "random"]
    assert all(r.status == "succeeded" and r.done == 60 for r in runs)
    assert out.getvalue().count(": succeeded") == 3
    again = StringIO()
    call_command(
        "run_metric",
        "--dataset",
        "lengthy",
        "--sentinels",
        "--model",
        tiny_model,
        "--seed",
        "2",
        stdout=again,
    )
    assert again.getvalue().count("already there") == 3 and runs.count() == 3


def test_each_sentinel_runs_page_says_what_it_is_not_a_reference_metric(
    client, lengthy_dataset, cast, tiny_model
):
    """Issue 43: the length and random runs' pages read "… against the document's
    references", as a ROUGE run's does."""
    added = add_sentinels(
        lengthy_dataset, model=tiny_model, local_paths=True, seed=3, enqueue=False
    )
    client.force_login(cast["owner"])
    pages = {run.metric: client.get(f"/runs/{run.pk}/").content.decode() for run in added.created}
    assert set(pages) == {"length", "random", "gptscore"}
    for page in pages.values():
        assert "A sentinel baseline (Perrella et al. 2024)" in page
        assert "against the document" not in page
    assert "each output's length in tokens (whitespace-separated words)" in pages["length"]
    assert "fixed by the seed 3" in pages["random"]
    assert "GPTScore of the output alone, without its source" in pages["gptscore"]
