"""G-Eval runs and their evaluation steps: generated once per task × aspect version by
the run's worker, versioned on edit, recorded by each run; variants; no silent fallback."""

from __future__ import annotations

import math

import pytest
from django.urls import reverse

from scoring.lm import FakeLanguageModel
from studies.models import (
    Aspect,
    EvaluationSteps,
    MetricRun,
    MetricScore,
    StepsGeneration,
    TaskKind,
)
from studies.services.catalog import steps as steps_service
from studies.services.runs import RunError, RunRequest, execute_run, start_run
from tests.conftest import record
from tests.factories import import_jsonl

pytestmark = pytest.mark.django_db


@pytest.fixture
def sourced_dataset(write_jsonl, cast):  # type: ignore[no-untyped-def]
    records = [
        record(
            f"d{d}",
            f"s{s}",
            output=f"Output {s} about the budget {d}.",
            source=f"The council approved budget {d} after a long debate.",
        )
        for d in range(3)
        for s in range(3)
    ]
    return import_jsonl(write_jsonl(records), "geval", cast["owner"])


def _geval(dataset, model, **options):  # type: ignore[no-untyped-def]
    request = RunRequest(metric="geval", aspect="coherence", model=model, **options)
    return start_run(dataset, request, enqueue=False, local_paths=True)


def test_a_geval_run_generates_steps_once_then_scores_every_output_with_its_distribution(
    sourced_dataset, long_context_tiny_model
):
    run = _geval(sourced_dataset, long_context_tiny_model, seed=7)
    config = run.config
    coh = Aspect.objects.get(code="COH")
    assert config["criteria"].startswith(f"Coherence (1-5) - {coh.definition}")
    assert config["scale"] == [1, 2, 3, 4, 5] and config["steps"] is None
    assert config["introduction"].startswith("You will be given one summary written for a news")
    assert run.label == f"geval:{long_context_tiny_model.rsplit('/', 1)[-1]}:COH:cot:prob"

    from scoring.lm.hf import HFLanguageModel

    seen = []

    class Watched(HFLanguageModel):  # what the run's page said while the steps were written
        def generate(self, prompt, **kw):  # type: ignore[no-untyped-def]
            seen.append(MetricRun.objects.get(pk=run.pk).timings.get("phase"))
            return super().generate(prompt, **kw)

    factory = lambda r: Watched(long_context_tiny_model)  # noqa: E731
    assert execute_run(run.pk, chunk_outputs=3, model_factory=factory) == "succeeded"
    assert seen == ["writing evaluation steps"]
    run.refresh_from_db()
    steps = EvaluationSteps.objects.get()
    assert steps.version == 1 and steps.origin == "generated" and steps.text
    assert steps.generation["seed"] == 7 and steps.generation["decoding"] == "greedy"
    assert steps.generation["model_files"]["sha256"] == config["model_files"]["sha256"]
    assert run.steps == steps and run.config["steps"]["text"] == steps.text
    assert run.config["chat_template"] is False
    scores = list(MetricScore.objects.filter(run=run))
    assert len(scores) == 9 and run.done == 9 and not any(s.error for s in scores)
    for score in scores:
        dist = score.details["distribution"]
        assert list(dist) == ["1", "2", "3", "4", "5"]
        assert math.isclose(sum(dist.values()), 1.0, abs_tol=1e-9)
        assert 1 <= score.value <= 5 and score.value == pytest.approx(score.details["weighted"])
        assert score.details["argmax"] in (1, 2, 3, 4, 5) and score.details["sampled"] is False
    assert execute_run(run.pk) == "not pending"

    again = _geval(
        sourced_dataset, long_context_tiny_model
    )  # the steps now exist: frozen at start, not regenerated
    assert again.config["steps"]["version"] == 1 and again.steps == steps
    assert execute_run(again.pk) == "succeeded"
    assert EvaluationSteps.objects.count() == 1


def test_an_edit_is_a_new_version_and_runs_keep_the_version_they_used(
    sourced_dataset, long_context_tiny_model
):
    task = TaskKind.objects.get(code="summarization")
    version = Aspect.objects.get(code="COH").current_version()
    first = steps_service.edit_steps(task, version, "1. Read the article.\n2. Rate it.")
    run_one = _geval(sourced_dataset, long_context_tiny_model)
    assert steps_service.edit_steps(task, version, " 1. Read the article.\n2. Rate it. ") == first
    second = steps_service.edit_steps(task, version, "1. Read the summary twice.")
    run_two = _geval(sourced_dataset, long_context_tiny_model)
    assert (first.version, second.version) == (1, 2) and second.origin == "edited"
    assert run_one.config["steps"]["version"] == 1 and run_two.config["steps"]["version"] == 2
    assert "Read the summary twice" in run_two.config["steps"]["text"]
    with pytest.raises(steps_service.StepsError, match="cannot be empty"):
        steps_service.edit_steps(task, version, "   ")
    assert EvaluationSteps.objects.count() == 2


def test_a_new_aspect_definition_gets_its_own_steps(sourced_dataset, long_context_tiny_model):
    task = TaskKind.objects.get(code="summarization")
    coh = Aspect.objects.get(code="COH")
    steps_service.edit_steps(task, coh.current_version(), "1. Old steps.")
    coh.definition = "Do the sentences build a coherent body of information?"
    coh.save()
    run = _geval(sourced_dataset, long_context_tiny_model)
    assert run.config["aspect_version"] == 2 and run.config["steps"] is None
    assert "coherent body of information" in run.config["criteria"]


def test_the_no_steps_variant_and_the_argmax_variant_are_labelled_and_recorded(
    sourced_dataset, long_context_tiny_model
):
    no_steps = _geval(sourced_dataset, long_context_tiny_model, steps="none", weighting="argmax")
    assert no_steps.label.endswith(":COH:no-cot:argmax") and no_steps.config["steps_mode"] == "none"
    assert execute_run(no_steps.pk) == "succeeded"
    assert not EvaluationSteps.objects.exists()  # nothing generated for a no-steps run
    for score in MetricScore.objects.filter(run=no_steps):
        assert score.value == score.details["argmax"]


def test_a_model_without_probabilities_fails_the_run_clearly_unless_sampling_is_asked(
    sourced_dataset, long_context_tiny_model
):
    run = _geval(sourced_dataset, long_context_tiny_model, steps="none")
    assert execute_run(run.pk, model_factory=lambda r: FakeLanguageModel()) == "failed"
    run.refresh_from_db()
    assert "gives no probabilities" in run.error and not MetricScore.objects.filter(run=run)

    sampled = _geval(
        sourced_dataset, long_context_tiny_model, steps="none", estimation="sampled", n_samples=4
    )
    assert sampled.label.endswith(":sampled") and sampled.config["n_samples"] == 4
    assert sampled.config["temperature"] == 1.0
    # a random tiny model names no label in its samples: every output says so, and a run
    # of errors ends FAILED saying why (never SUCCEEDED), its details kept
    assert execute_run(sampled.pk) == "failed: mostly errors"
    sampled.refresh_from_db()
    assert "9 of 9 outputs got no score" in sampled.error and "named a label" in sampled.error
    details = [s.details for s in MetricScore.objects.filter(run=sampled)]
    assert len(details) == 9 and all(d["sampled"] is True for d in details)


def test_bad_geval_requests_change_nothing(sourced_dataset, long_context_tiny_model):
    with pytest.raises(RunError, match="Weighting must be"):
        _geval(sourced_dataset, long_context_tiny_model, weighting="median")
    with pytest.raises(RunError, match="Unknown aspect"):
        start_run(
            sourced_dataset,
            RunRequest(metric="geval", aspect="nope", model=long_context_tiny_model),
            local_paths=True,
        )
    assert not MetricRun.objects.filter(kind="computed").exists()


def test_steps_page_shows_edits_and_queues_generation_for_researchers_only(
    client, cast, django_capture_on_commit_callbacks
):
    url = reverse("studies:steps-detail", args=["summarization", "COH"])
    client.force_login(cast["annotator"])
    assert client.get(url).status_code == 403
    client.force_login(cast["owner"])
    page = client.get(url)
    assert page.status_code == 200 and b'id="no-steps"' in page.content
    assert b"Evaluation Steps:" in page.content  # the generation prompt is shown
    assert client.post(url, {"text": "1. Read.\n2. Rate."}).status_code == 302
    assert client.post(url, {"text": ""}).status_code == 400
    steps = EvaluationSteps.objects.get()
    assert steps.created_by == cast["owner"] and steps.origin == "edited"
    assert b"1. Read." in client.get(url).content
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = client.post(reverse("studies:steps-generate", args=["summarization", "COH"]))
    assert response.status_code == 302 and len(callbacks) == 1
    assert (
        client.get(reverse("studies:steps-detail", args=["summarization", "XXX"])).status_code
        == 404
    )


def test_the_generation_task_stores_a_version_with_its_model_and_seed(
    long_context_tiny_model, settings
):
    from studies.tasks import generate_steps

    task = TaskKind.objects.get(code="summarization")
    version = Aspect.objects.get(code="FLU").current_version()
    first = generate_steps(task.pk, version.pk, long_context_tiny_model, 3)
    assert (
        generate_steps(task.pk, version.pk, long_context_tiny_model, 3) == first
    )  # once, not twice
    forced = generate_steps(task.pk, version.pk, long_context_tiny_model, 3, True)
    rows = EvaluationSteps.objects.filter(aspect_version=version).order_by("version")
    assert [r.pk for r in rows] == [first, forced] and rows[1].version == 2
    assert rows[0].text == rows[1].text  # greedy: the same steps again
    assert rows[0].generation["seed"] == 3 and "Evaluation Steps:" in rows[0].generation["prompt"]


def test_the_argmax_variant_comes_from_the_stored_distributions_without_the_model(
    client, cast, sourced_dataset, long_context_tiny_model
):
    run = _geval(sourced_dataset, long_context_tiny_model, steps="none")
    assert execute_run(run.pk) == "succeeded"
    client.force_login(cast["owner"])
    page = client.get(reverse("studies:run-detail", args=[run.pk]))
    assert b'id="variant"' in page.content and b"no evaluation steps" in page.content
    response = client.post(reverse("studies:run-variant", args=[run.pk]), {"weighting": "argmax"})
    derived = MetricRun.objects.exclude(pk=run.pk).get()
    assert response.status_code == 302 and response["Location"].endswith(f"/runs/{derived.pk}/")
    assert derived.label == run.label.replace(":prob", ":argmax") and derived.status == "succeeded"
    assert derived.config["derived_from"] == run.pk and derived.config["weighting"] == "argmax"
    original = {s.output_id: s for s in MetricScore.objects.filter(run=run)}
    for score in MetricScore.objects.filter(run=derived):
        assert score.value == original[score.output_id].details["argmax"]
        assert score.details["distribution"] == original[score.output_id].details["distribution"]
    client.post(reverse("studies:run-variant", args=[run.pk]), {"weighting": "argmax"})
    assert MetricRun.objects.count() == 2  # asked twice: the same derived run
    bad = client.post(reverse("studies:run-variant", args=[run.pk]), {"weighting": "prob"})
    assert bad.status_code == 302 and MetricRun.objects.count() == 2


def test_a_geval_run_resumes_with_the_steps_it_started_with_and_loses_no_score(
    sourced_dataset, long_context_tiny_model
):
    from scoring.lm.hf import HFLanguageModel
    from studies.services.runs import resume_run

    run = _geval(sourced_dataset, long_context_tiny_model)

    class Dying(HFLanguageModel):
        calls = 0

        def rating_distributions(self, requests):  # type: ignore[no-untyped-def]
            Dying.calls += 1
            if Dying.calls > 1:
                raise SystemExit("killed")  # not an Exception: as a killed worker
            return super().rating_distributions(requests)

    with pytest.raises(SystemExit):
        execute_run(run.pk, model_factory=lambda r: Dying(long_context_tiny_model), chunk_outputs=3)
    run.refresh_from_db()
    kept = dict(MetricScore.objects.filter(run=run).values_list("output_id", "value"))
    assert run.status == "running" and len(kept) == 3 and run.config["steps"]["version"] == 1
    steps_service.edit_steps(run.dataset.task, run.aspect_version, "1. Newer steps.")
    assert resume_run(run, force=True, enqueue=False)
    assert execute_run(run.pk, chunk_outputs=3) == "succeeded"
    run.refresh_from_db()
    after = dict(MetricScore.objects.filter(run=run).values_list("output_id", "value"))
    assert len(after) == 9 and all(after[k] == v for k, v in kept.items())
    assert run.config["steps"]["version"] == 1 and run.steps.version == 1  # not the newer edit


def test_step_generation_is_limited_per_researcher_with_a_message_and_retry_after(
    client, cast, settings, long_context_tiny_model, django_capture_on_commit_callbacks
):
    """At most STEPS_MAX_PENDING generations waiting or running per researcher, and
    STEPS_MAX_PER_HOUR asked for in an hour: past either, the steps page again with why,
    429 and Retry-After, and nothing queued; other researchers are not held back."""
    settings.CONCORDIA = {**settings.CONCORDIA, "STEPS_MAX_PENDING": 2, "STEPS_MAX_PER_HOUR": 3}
    generate = reverse("studies:steps-generate", args=["summarization", "COH"])
    client.force_login(cast["owner"])

    def ask() -> tuple[object, list[tuple[object, ...]]]:
        with django_capture_on_commit_callbacks(execute=False) as callbacks:
            response = client.post(generate)
        return response, callbacks

    for _ in range(2):
        response, callbacks = ask()
        assert response.status_code == 302 and len(callbacks) == 1  # type: ignore[attr-defined]
    refused, callbacks = ask()
    assert refused.status_code == 429 and refused["Retry-After"] == "60"  # type: ignore[index,attr-defined]
    assert not callbacks
    assert "You have 2 evaluation-step generations waiting or running" in refused.content.decode()  # type: ignore[attr-defined]
    assert StepsGeneration.objects.filter(requested_by=cast["owner"]).count() == 2

    # a worker ends both: the third is taken, the fourth is past the hour's three
    from studies.tasks import generate_steps

    task = TaskKind.objects.get(code="summarization")
    version = Aspect.objects.get(code="COH").current_version()
    for request in StepsGeneration.objects.filter(requested_by=cast["owner"]):
        generate_steps(
            task.pk,
            version.pk,
            long_context_tiny_model,
            0,
            False,
            cast["owner"].pk,
            False,
            request.pk,
        )
    assert set(StepsGeneration.objects.values_list("status", flat=True)) == {"succeeded"}
    assert ask()[0].status_code == 302  # type: ignore[attr-defined]
    refused, callbacks = ask()
    assert refused.status_code == 429 and not callbacks  # type: ignore[attr-defined]
    assert 3500 <= int(refused["Retry-After"]) <= 3600  # type: ignore[index]
    assert (
        "You asked for 3 evaluation-step generations in the last hour" in refused.content.decode()
    )  # type: ignore[attr-defined]

    client.force_login(cast["outsider"])  # another researcher
    assert ask()[0].status_code == 302  # type: ignore[attr-defined]


def test_a_failed_generation_frees_its_place(cast, settings, tmp_path):
    """The worker marks a generation failed when it raises; it no longer counts as open."""
    from studies.tasks import generate_steps

    settings.CONCORDIA = {**settings.CONCORDIA, "STEPS_MAX_PENDING": 1}
    task = TaskKind.objects.get(code="summarization")
    version = Aspect.objects.get(code="COH").current_version()
    steps_service.request_generation(task, version, user=cast["owner"])
    with pytest.raises(steps_service.StepsRateLimited):
        steps_service.request_generation(task, version, user=cast["owner"])
    request = StepsGeneration.objects.get()
    empty = str(tmp_path)  # a folder with no model in it: loading fails at once
    with pytest.raises(ValueError, match="Unrecognized model"):
        generate_steps(task.pk, version.pk, empty, 0, False, cast["owner"].pk, False, request.pk)
    request.refresh_from_db()
    assert request.status == "failed" and "Unrecognized model" in request.error
    steps_service.request_generation(task, version, user=cast["owner"])  # taken again
