"""The jobs page and API: queued and running work, lane by lane, in the order each worker
takes it, with who started it, progress and ETA; another researcher's work only as its
place in the queue."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.cache import cache
from django.utils import timezone

from studies.models import ImportJob, MetricRun, TaskKind
from studies.services import jobs
from studies.services.analysis.dashboards import progress, request_matrix
from studies.services.analysis.params import MatrixParams
from tests.factories import DatasetFactory

pytestmark = pytest.mark.django_db


def _run(dataset, user, label, *, status="pending", minutes_ago=0, metric="gptscore", **kw):  # type: ignore[no-untyped-def]
    at = timezone.now() - timedelta(minutes=minutes_ago)
    run = MetricRun.objects.create(
        dataset=dataset, metric=metric, label=label, status=status, created_by=user, **kw
    )
    MetricRun.objects.filter(pk=run.pk).update(created_at=at, heartbeat_at=at)
    return run


@pytest.fixture
def world(cast):  # type: ignore[no-untyped-def]
    mine = DatasetFactory(name="mine", owner=cast["owner"])
    theirs = DatasetFactory(name="theirs", owner=cast["outsider"])
    started = timezone.now() - timedelta(seconds=100)
    running = _run(
        mine,
        cast["owner"],
        "gptscore:a",
        status="running",
        minutes_ago=30,
        done=50,
        total=250,
        started_at=started,
        timings={"scoring_outputs_per_s": 2.0},
    )
    queued_theirs = _run(theirs, cast["outsider"], "gptscore:secret", minutes_ago=20)
    queued_mine = _run(mine, cast["owner"], "gptscore:b", minutes_ago=10)
    rouge = _run(mine, cast["owner"], "rougeL", metric="rougeL", minutes_ago=5)
    task = TaskKind.objects.get(code="summarization")
    upload = ImportJob.objects.create(
        upload="x.jsonl",
        original_name="x.jsonl",
        file_format="jsonl",
        dataset_name="fresh",
        task=task,
        created_by=cast["owner"],
    )
    return {
        "running": running,
        "queued_theirs": queued_theirs,
        "queued_mine": queued_mine,
        "rouge": rouge,
        "upload": upload,
    }


def _lane(lanes, name):  # type: ignore[no-untyped-def]
    return next(lane for lane in lanes if lane.name == name).jobs


def test_each_lane_lists_running_work_first_then_the_queue_in_sending_order(world, cast):
    model = _lane(jobs.lanes_for(cast["owner"]), "model")
    assert [j.title for j in model] == [
        "gptscore:a on mine",
        "another researcher's run",  # theirs, queued before mine: its place, nothing else
        "gptscore:b on mine",
        "rougeL on mine",  # cpu queue: the same model worker takes it
    ]
    running, hidden, b, rouge = model
    assert running.running and running.position == 0 and running.user == "owner"
    assert (running.done, running.total, running.eta_seconds) == (50, 250, 100.0)
    assert (hidden.position, hidden.ahead, hidden.url, hidden.user) == (1, 1, "", "")
    assert hidden.starts_in == 100.0  # after the running run's 200 outputs at 2/s
    assert (b.position, b.ahead, b.starts_in) == (2, 2, None)  # theirs has no ETA yet
    assert (rouge.position, rouge.ahead) == (3, 3)
    assert b.url == f"/runs/{world['queued_mine'].pk}/"
    light = _lane(jobs.lanes_for(cast["owner"]), "light")
    assert [(j.kind, j.title, j.position) for j in light] == [
        ("import", "import of x.jsonl into fresh", 1)
    ]


def test_another_researcher_sees_only_the_place_of_mine_and_an_admin_sees_everything(world, cast):
    outsider = _lane(jobs.lanes_for(cast["outsider"]), "model")
    assert [j.title for j in outsider][1] == "gptscore:secret on theirs"
    assert {j.title for j in outsider} - {"gptscore:secret on theirs"} == {
        "another researcher's run"
    }
    assert all(j.user in ("", "outsider") for j in outsider)
    assert _lane(jobs.lanes_for(cast["outsider"]), "light")[0].title == (
        "another researcher's import"
    )
    admin = _lane(jobs.lanes_for(cast["admin"]), "model")
    assert "gptscore:secret on theirs" in [j.title for j in admin]
    assert "another researcher's run" not in [j.title for j in admin]


def test_a_matrix_sent_to_a_worker_is_listed_until_it_is_computed(cast):
    dataset = DatasetFactory(name="big", owner=cast["owner"])
    params = MatrixParams(level="system", coefficient="kendall")
    assert request_matrix(dataset, params, cast["owner"])
    (job,) = _lane(jobs.lanes_for(cast["owner"]), "light")
    assert (job.kind, job.user, job.running) == ("matrix", "owner", False)
    assert job.title == "system-level kendall matrix of big"
    cache.set(params.key(dataset) + ":progress", {"done": 3, "total": 8}, 60)
    (job,) = _lane(jobs.lanes_for(cast["owner"]), "light")
    assert job.running and (job.done, job.total) == (3, 8)
    cache.delete(params.key(dataset) + ":progress")  # the worker finished
    assert progress(dataset, params) is None
    assert _lane(jobs.lanes_for(cast["owner"]), "light") == []


def test_the_page_polls_and_the_api_gives_the_same_rows(world, cast, client):
    client.force_login(cast["owner"])
    page = client.get("/jobs/").content.decode()
    assert 'hx-get="/jobs/"' in page and "gptscore:b on mine" in page and "queued #2" in page
    assert "gptscore:secret" not in page and "about 2 min left" in page
    partial = client.get("/jobs/", headers={"HX-Request": "true", "HX-Target": "jobs"})
    assert partial.content.decode().lstrip().startswith('<div id="jobs"')
    rows = client.get("/api/jobs/").json()
    assert [(r["lane"], r["title"], r["position"]) for r in rows][:3] == [
        ("model", "gptscore:a on mine", 0),
        ("model", "another researcher's run", 1),
        ("model", "gptscore:b on mine", 2),
    ]
    assert all("owner_id" not in r for r in rows)
    client.force_login(cast["annotator"])
    assert client.get("/jobs/").status_code == 403


def test_a_pending_run_and_a_pending_import_link_to_their_place_in_the_queue(world, cast, client):
    client.force_login(cast["owner"])
    run_page = client.get(f"/runs/{world['queued_mine'].pk}/").content.decode()
    assert 'id="run-waiting"' in run_page and 'href="/jobs/"' in run_page
    assert 'data-confirm="Cancel this run? It stops after the current document' in run_page
    import_page = client.get(f"/imports/{world['upload'].pk}/").content.decode()
    assert "Waiting for the light worker" in import_page and 'href="/jobs/"' in import_page
