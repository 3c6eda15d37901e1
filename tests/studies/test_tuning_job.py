"""Tuning as a worker job (studies/services/tuning/job.py): the tuned run saved PENDING at
once, its task (called inline, no worker) filling that run as the command does, its
progress, cancel, the sweeper taking back a job whose worker died, the jobs page, the
API and the run page's form that start one. On the judged file's study (no model)."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.utils import timezone

from studies import tasks
from studies.models import Aspect, MetricRun, Study, StudyMember
from studies.services import jobs, queue
from studies.services.recovery import sweep_stale_work
from studies.services.runs import cancel_run
from studies.services.tuning import registry
from studies.services.tuning.job import execute_tuning, start_tuning
from studies.services.tuning.splits import make_split
from studies.services.tuning.types import Tuned, Tuner
from tests.factories import calibration_request
from tests.studies.judged_file import judged_study

pytestmark = pytest.mark.django_db


@pytest.fixture
def study(cast, tmp_path: Path) -> Study:  # type: ignore[no-untyped-def]
    found = judged_study(cast["owner"], tmp_path)
    make_split(found, dev=0.2, test=0.4, seed=5)
    return found


@pytest.fixture
def sent(monkeypatch):  # type: ignore[no-untyped-def]
    """Tasks sent through studies.services.queue: (name, args, queue)."""
    messages: list[tuple[Any, ...]] = []

    def send(name: str, *args: object, queue: str | None = None, **_: object) -> None:
        messages.append((name, args, queue))

    monkeypatch.setattr(queue, "send", send)
    return messages


def judge(label: str = "judge_b") -> MetricRun:
    return MetricRun.objects.get(label=label)


def coherence() -> Aspect:
    return Aspect.objects.get(code="COH")


def toy_tuner(monkeypatch, tune) -> str:  # type: ignore[no-untyped-def]
    """Register a tuner made of ``tune`` (it maps stored scores: a light job)."""
    monkeypatch.setitem(registry._TUNERS, "toy", Tuner("toy", "toy", (), tune))
    return "toy"


def test_a_calibration_job_is_pending_at_once_and_its_task_fills_that_run_as_the_command(
    study, cast, sent, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        job = start_tuning(
            judge(), coherence(), "calibration", resamples=200, seed=3, by=cast["owner"]
        )
    assert job.status == MetricRun.Status.PENDING and job.metric == "tuned:calibration"
    assert job.config["tuning_request"] == calibration_request(
        judge().pk, coherence().pk, study.pk, "auto"
    )
    assert sent == [(queue.TUNE_JUDGE, (job.pk,), "light")]
    assert tasks.tune_judge(job.pk) == "succeeded"
    assert tasks.tune_judge(job.pk) == "not pending"  # a second delivery writes nothing
    job.refresh_from_db()
    assert job.status == MetricRun.Status.SUCCEEDED and job.error == ""
    assert job.done == job.total == job.scores.count() > 0
    # the command (the same job, inline) finds the same evidence and scores
    out = StringIO()
    call_command(
        "tune_judge",
        *("--run", str(judge().pk), "--aspect", "COH", "--tuner", "calibration"),
        *("--resamples", "200", "--seed", "3"),
        stdout=out,
    )
    first, second = out.getvalue().strip().splitlines()
    again = MetricRun.objects.get(pk=int(first))
    assert again.pk != job.pk and again.config["tuning"] == job.config["tuning"]
    assert dict(again.scores.values_list("output_id", "value")) == dict(
        job.scores.values_list("output_id", "value")
    )
    assert f"test Δ spearman (sample): {job.config['tuning']['test']['delta']:+.4f}" in second


def test_the_tuners_progress_is_the_runs_done_and_total(study, monkeypatch, sent):
    seen: list[tuple[int, int]] = []

    def tune(context):  # type: ignore[no-untyped-def]
        for done in range(5):
            context.progress(done, 3)
            row = MetricRun.objects.get(pk=job.pk)
            seen.append((row.done, row.total))
        return Tuned(scores=dict(context.scores))

    job = start_tuning(judge(), coherence(), toy_tuner(monkeypatch, tune), enqueue=False)
    assert execute_tuning(job.pk) == "succeeded"
    assert seen == [(0, 3), (1, 3), (2, 3), (3, 3), (3, 3)]  # held at total past it
    job.refresh_from_db()
    assert job.done == job.total == judge().scores.count()


def test_a_job_cancelled_mid_way_stops_at_its_next_report_and_stays_cancelled(
    study, monkeypatch, sent
):
    reached: list[int] = []

    def tune(context):  # type: ignore[no-untyped-def]
        context.progress(1, 10)
        cancel_run(MetricRun.objects.get(pk=job.pk))  # the Cancel button, meanwhile
        reached.append(1)
        context.progress(2, 10)
        reached.append(2)
        return Tuned(scores=dict(context.scores))

    job = start_tuning(judge(), coherence(), toy_tuner(monkeypatch, tune), enqueue=False)
    assert execute_tuning(job.pk) == "cancelled"
    job.refresh_from_db()
    assert reached == [1] and job.status == MetricRun.Status.CANCELLED
    assert not job.scores.exists() and "tuning" not in job.config


def test_a_failing_tuner_ends_its_run_failed_with_the_error(study, monkeypatch, sent):
    def tune(context):  # type: ignore[no-untyped-def]
        raise ValueError("nothing to learn from")

    job = start_tuning(judge(), coherence(), toy_tuner(monkeypatch, tune), enqueue=False)
    assert execute_tuning(job.pk) == "failed"
    job.refresh_from_db()
    assert job.status == MetricRun.Status.FAILED
    assert job.error == "ValueError: nothing to learn from" and job.finished_at


def test_a_job_whose_worker_died_is_taken_back_by_the_sweeper_and_succeeds(
    study, sent, settings, django_capture_on_commit_callbacks
):
    job = start_tuning(judge(), coherence(), "calibration", resamples=50, enqueue=False)
    lease = settings.CONCORDIA["RUN_LEASE_SECONDS"]
    now = timezone.now()
    # claimed by a worker that was killed: RUNNING, no heartbeat for longer than the lease
    MetricRun.objects.filter(pk=job.pk).update(
        status=MetricRun.Status.RUNNING, heartbeat_at=now - timedelta(seconds=lease + 5)
    )
    with django_capture_on_commit_callbacks(execute=True):
        counts = sweep_stale_work(now)
    assert counts["running_runs"] == 1
    assert sent == [(queue.TUNE_JUDGE, (job.pk,), "light")]
    job.refresh_from_db()
    assert job.status == MetricRun.Status.PENDING
    assert "worker died" in job.provenance["recoveries"][0]["reason"]
    assert tasks.tune_judge(job.pk) == "succeeded"
    job.refresh_from_db()
    assert job.status == MetricRun.Status.SUCCEEDED and job.config["tuning"]["test"]
    # a pending job whose message was lost is sent again too
    lost = start_tuning(judge(), coherence(), "calibration", enqueue=False)
    grace = settings.CONCORDIA["PENDING_GRACE_SECONDS"]
    later = timezone.now() + timedelta(seconds=grace + 5)
    with django_capture_on_commit_callbacks(execute=True):
        assert sweep_stale_work(later)["pending_runs"] == 1
    assert sent[-1] == (queue.TUNE_JUDGE, (lost.pk,), "light")


def test_a_tuning_job_shows_on_the_jobs_page_in_its_lane(study, cast, sent, client):
    job = start_tuning(judge(), coherence(), "calibration", enqueue=False)
    lanes = {lane.name: lane for lane in jobs.lanes_for(cast["owner"])}
    found = [j for j in lanes["light"].jobs if j.url.endswith(f"/runs/{job.pk}/")]
    assert len(found) == 1 and not found[0].running and found[0].position == 1
    client.force_login(cast["owner"])
    page = client.get(f"/runs/{job.pk}/").content.decode()  # its page: progress and Cancel
    assert f"/runs/{job.pk}/cancel/" in page
    execute_tuning(job.pk)
    assert not [j for j in jobs.all_jobs() if j.url.endswith(f"/runs/{job.pk}/")]


def test_the_api_starts_a_tuning_with_the_tuners_options(
    study, cast, client, sent, django_capture_on_commit_callbacks
):
    client.force_login(cast["owner"])
    url = f"/api/runs/{judge().pk}/tune/"
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            url,
            {"aspect": "COH", "tuner": "calibration", "method": "isotonic", "resamples": 50},
            content_type="application/json",
        )
    assert response.status_code == 202, response.content
    body = response.json()
    assert body["status"] == "pending" and body["metric"] == "tuned:calibration"
    job = MetricRun.objects.get(pk=body["id"])
    assert job.config["tuning_request"]["options"] == {"method": "isotonic", "gold": "humans"}
    assert sent == [(queue.TUNE_JUDGE, (job.pk,), "light")]
    refused = client.post(
        url, {"aspect": "COH", "tuner": "calibration", "k": "1,2"}, content_type="application/json"
    )
    assert refused.status_code == 400 and "calibration has no option k" in refused.content.decode()
    refused = client.post(
        url, {"aspect": "nope", "tuner": "calibration"}, content_type="application/json"
    )
    assert refused.status_code == 400 and "no aspect 'nope'" in refused.json()["detail"]
    refused = client.post(
        url,
        {"aspect": "COH", "tuner": "calibration", "method": "platt"},
        content_type="application/json",
    )
    assert refused.status_code == 202  # platt on a scale aspect: the job fails, saying why
    failed = MetricRun.objects.get(pk=refused.json()["id"])
    assert execute_tuning(failed.pk) == "failed"
    failed.refresh_from_db()
    assert "binary" in failed.error


def tune_fields(tuner: str, **options: object) -> dict[str, object]:
    """The page's form: coherence on the study's split, the tuner and its options."""
    study = Study.objects.get(name="tuning")
    named = {f"{tuner}__{name}": value for name, value in options.items()}
    given = {"aspect": coherence().pk, "study": study.pk, "tuner": tuner, "seed": 0}
    return {**given, "resamples": 200, **named}


def test_the_run_page_offers_to_tune_it_with_every_tuners_declared_options(study, owner_client):
    page = owner_client.get(f"/runs/{judge().pk}/").content.decode()
    assert f'action="/runs/{judge().pk}/tune/"' in page and "Tune this judge" in page
    assert f'<option value="{study.pk}" selected>' in page  # the one study with a split
    assert f'<option value="{coherence().pk}"' in page
    for name in registry.names():  # a radio button each, with the options it declares
        assert f'name="tuner" value="{name}"' in page
        for option in registry.tuner(name).options:
            assert f'name="{name}__{option.name}"' in page
    assert 'name="calibration__method"' in page and '<option value="isotonic">' in page
    form = owner_client.get(f"/runs/{judge().pk}/tune/")  # its own page: the same form
    assert form.status_code == 200 and 'name="few-shot__k"' in form.content.decode()
    pending = start_tuning(judge(), coherence(), "calibration", enqueue=False)
    assert "Tune this judge" not in owner_client.get(f"/runs/{pending.pk}/").content.decode()


def test_the_tune_form_starts_the_apis_job_and_shows_its_tuning_page_until_the_evidence(
    study, owner_client, sent, django_capture_on_commit_callbacks
):
    before = MetricRun.objects.count()
    with django_capture_on_commit_callbacks(execute=True):
        response = owner_client.post(
            f"/runs/{judge().pk}/tune/",
            # another tuner's fields are not read: a bad one is no error
            {**tune_fields("calibration", method="isotonic"), "instructions__rounds": "many"}
            | {"seed": 3},
        )
    job = MetricRun.objects.latest("pk")
    assert MetricRun.objects.count() == before + 1
    assert response.status_code == 302 and response["Location"] == f"/runs/{job.pk}/tuning/"
    assert job.status == MetricRun.Status.PENDING and job.metric == "tuned:calibration"
    assert job.created_by.username == "owner"
    assert job.config["tuning_request"] == calibration_request(
        judge().pk, coherence().pk, study.pk, "isotonic"
    )
    assert sent == [(queue.TUNE_JUDGE, (job.pk,), "light")]
    page = owner_client.get(response["Location"]).content.decode()  # pending: asked, polled
    assert 'id="tuning-pending"' in page and 'hx-trigger="every 2s"' in page
    assert "<code>method=isotonic</code>" in page and 'id="tuning-delta"' not in page
    polled = {"HX-Request": "true", "HX-Target": "tuning-pending"}
    partial = owner_client.get(response["Location"], headers=polled)
    assert partial.status_code == 200 and "<html" not in partial.content.decode()
    assert execute_tuning(job.pk) == "succeeded"  # the worker's job
    partial = owner_client.get(response["Location"], headers=polled)
    assert partial["HX-Refresh"] == "true"  # the page shows the evidence now
    page = owner_client.get(response["Location"]).content.decode()
    assert 'id="tuning-delta"' in page and 'id="tuning-pending"' not in page


def test_bad_tune_form_input_shows_the_form_again_naming_the_field_and_starts_nothing(
    study, owner_client, cast, sent
):
    bare = Study.objects.create(name="bare", dataset=study.dataset, owner=cast["owner"])
    cases = [
        (tune_fields("calibration", method="nope"), "calibration__method", "valid choice"),
        (tune_fields("instructions", rounds="many"), "instructions__rounds", "whole number"),
        (tune_fields("few-shot") | {"study": bare.pk}, "study", "valid choice"),  # no split
        (tune_fields("calibration") | {"aspect": ""}, "aspect", "required"),
        (tune_fields("calibration") | {"tuner": "magic"}, "tuner", "valid choice"),
        (tune_fields("calibration") | {"resamples": 0}, "resamples", "greater than or equal"),
    ]
    before = MetricRun.objects.count()
    for fields, field, message in cases:
        response = owner_client.post(f"/runs/{judge().pk}/tune/", fields)
        assert response.status_code == 400, field
        errors = response.context["form"].errors
        assert list(errors) == [field] and message in errors[field][0], (field, errors)
        page = response.content.decode()
        assert 'id="tune-form"' in page and errors[field][0].replace("'", "&#x27;") in page
    # what the service refuses (the run has not succeeded) is said above the form
    unfinished = judge("judge_a")
    MetricRun.objects.filter(pk=unfinished.pk).update(status=MetricRun.Status.FAILED)
    response = owner_client.post(f"/runs/{unfinished.pk}/tune/", tune_fields("calibration"))
    assert response.status_code == 400
    assert response.context["form"].non_field_errors() == [f"run {unfinished.pk} has not succeeded"]
    assert MetricRun.objects.count() == before and sent == []


def test_only_researchers_who_may_run_metrics_on_the_dataset_may_tune_its_runs(
    study, cast, client, sent
):
    url = f"/runs/{judge().pk}/tune/"
    before = MetricRun.objects.count()
    assert "login" in client.get(url)["Location"]  # anonymous
    client.force_login(cast["annotator"])
    assert client.get(url).status_code == 403
    assert client.post(url, tune_fields("calibration")).status_code == 403
    client.force_login(cast["outsider"])  # a researcher, not of this dataset: not found
    assert client.get(url).status_code == 404
    assert client.post(url, tune_fields("calibration")).status_code == 404
    assert MetricRun.objects.count() == before and sent == []
    # a researcher member of the dataset's study runs metrics on it: tunes too (as the API)
    StudyMember.objects.create(study=study, user=cast["outsider"], role=StudyMember.Role.RESEARCHER)
    assert client.post(url, tune_fields("calibration")).status_code == 302
    assert MetricRun.objects.latest("pk").created_by == cast["outsider"]


def test_the_command_with_enqueue_sends_the_job_and_prints_its_run(
    study, sent, django_capture_on_commit_callbacks
):
    out = StringIO()
    with django_capture_on_commit_callbacks(execute=True):
        call_command(
            "tune_judge",
            *("--run", str(judge().pk), "--aspect", "COH", "--tuner", "calibration"),
            "--enqueue",
            stdout=out,
        )
    job = MetricRun.objects.get(pk=int(out.getvalue().strip()))
    assert job.status == MetricRun.Status.PENDING and job.metric == "tuned:calibration"
    assert sent == [(queue.TUNE_JUDGE, (job.pk,), "light")]


def test_a_served_tunings_usage_counts_every_attempt_after_its_worker_was_killed(
    study, monkeypatch, sent, settings, django_capture_on_commit_callbacks
):
    start = judge()
    start.config = {**start.config, "endpoint": {"name": "served"}}  # a served judge's run
    start.usage = {"requests": 40, "cost": 2.0}  # what making it spent
    start.save(update_fields=["config", "usage"])
    attempts: list[int] = []

    def tune(context):  # type: ignore[no-untyped-def]
        attempts.append(1)
        row = MetricRun.objects.get(pk=context.run.pk)  # the served client adds as it goes
        if len(attempts) == 1:
            row.usage = {**row.usage, "requests": 45, "cost": 2.5}
            row.save(update_fields=["usage"])
            raise SystemExit("the worker is killed")  # no handler: the run stays RUNNING
        row.usage = {**row.usage, "cache_hits": 5}  # the same requests, from the cache
        row.save(update_fields=["usage"])
        return Tuned(scores=dict(context.scores))

    job = start_tuning(start, coherence(), toy_tuner(monkeypatch, tune), enqueue=False)
    with pytest.raises(SystemExit):
        execute_tuning(job.pk)
    lease = settings.CONCORDIA["RUN_LEASE_SECONDS"]
    with django_capture_on_commit_callbacks(execute=True):
        assert sweep_stale_work(timezone.now() + timedelta(seconds=lease + 5))["running_runs"]
    assert execute_tuning(job.pk) == "succeeded"
    job.refresh_from_db()
    assert job.usage["requests"] == 5 and job.usage["cache_hits"] == 5
    assert job.usage["cost"] == pytest.approx(0.5)
