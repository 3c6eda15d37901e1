"""The jobs page and API: queued and running work, lane by lane, in the order each worker
takes it, with who started it, progress and ETA; another researcher's work only as its
place in the queue."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.cache import cache
from django.utils import timezone

from studies.models import ImportJob, MetricRun, TaskKind, WorkerNode
from studies.services import jobs, workers
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


def _worker(name, queues, *, seen_ago=1.0, stopped=""):  # type: ignore[no-untyped-def]
    now = timezone.now()
    return WorkerNode.objects.create(
        name=name,
        hostname="h",
        pid=1,
        queues=queues,
        started_at=now - timedelta(hours=1),
        seen_at=now - timedelta(seconds=seen_ago),
        stopped_at=now if stopped else None,
        stop_reason=stopped,
    )


@pytest.fixture
def world(cast):  # type: ignore[no-untyped-def]
    for name, queues in (("m@h", "cpu,gpu"), ("q@h", "quick"), ("l@h", "light"), ("i@h", "io")):
        _worker(name, queues)
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
    bert = _run(mine, cast["owner"], "bertscore", metric="bertscore", minutes_ago=5)
    rouge = _run(mine, cast["owner"], "rougeL", metric="rougeL", minutes_ago=1)
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
        "bert": bert,
        "rouge": rouge,
        "upload": upload,
    }


def _lane(lanes, name):  # type: ignore[no-untyped-def]
    return next(lane for lane in lanes if lane.name == name).jobs


def test_each_lane_lists_running_work_first_then_the_queue_in_the_workers_order(world, cast):
    model = _lane(jobs.lanes_for(cast["owner"]), "model")
    assert [j.title for j in model] == [
        "gptscore:a on mine",  # from the gpu queue: the worker takes from cpu next …
        "bertscore on mine",  # … though it was sent after the two gpu runs below
        "another researcher's run",  # theirs, queued before mine: its place, nothing else
        "gptscore:b on mine",
    ]
    running, bert, hidden, b = model
    assert running.running and running.position == 0 and running.user == "owner"
    assert (running.done, running.total, running.eta_seconds) == (50, 250, 100.0)
    assert bert.starts_in == 100.0  # after the running run's 200 outputs at 2/s
    assert (hidden.position, hidden.ahead, hidden.url, hidden.user) == (2, 2, "", "")
    assert (b.position, b.ahead, b.starts_in) == (3, 3, None)  # those ahead have no ETA yet
    assert b.url == f"/runs/{world['queued_mine'].pk}/"
    (rouge,) = _lane(jobs.lanes_for(cast["owner"]), "quick")  # never behind a model run
    assert (rouge.title, rouge.position, rouge.ahead, rouge.starts_in) == (
        "rougeL on mine",
        1,
        0,
        0.0,
    )
    light = _lane(jobs.lanes_for(cast["owner"]), "light")
    assert [(j.kind, j.title, j.position) for j in light] == [
        ("import", "import of x.jsonl into fresh", 1)
    ]


def test_another_researcher_sees_only_the_place_of_mine_and_an_admin_sees_everything(world, cast):
    outsider = _lane(jobs.lanes_for(cast["outsider"]), "model")
    assert [j.title for j in outsider][2] == "gptscore:secret on theirs"
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
    assert 'hx-get="/jobs/"' in page and "gptscore:b on mine" in page and "queued #3" in page
    assert "gptscore:secret" not in page and "about 2 min left" in page
    partial = client.get("/jobs/", headers={"HX-Request": "true", "HX-Target": "jobs"})
    assert partial.content.decode().lstrip().startswith('<div id="jobs"')
    rows = client.get("/api/jobs/").json()
    assert [(r["lane"], r["title"], r["position"]) for r in rows][:4] == [
        ("model", "gptscore:a on mine", 0),
        ("model", "bertscore on mine", 1),
        ("model", "another researcher's run", 2),
        ("model", "gptscore:b on mine", 3),
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


def test_each_lane_shows_its_workers_and_a_lane_nobody_serves_says_so(world, cast, client):
    """Issue 43: the light worker had died; the page said "starts in under a minute"."""
    WorkerNode.objects.filter(name="l@h").update(
        stopped_at=timezone.now(), stop_reason="killed by SIGKILL; restarting in 1 s"
    )
    _worker("old-light@h", "light", seen_ago=workers.MISSED_BEATS * 10 + 5)  # not answering
    lanes = {lane.name: lane for lane in jobs.lanes_for(cast["owner"])}
    assert [(w.name, w.state) for w in lanes["light"].workers] == [
        ("old-light@h", "not answering"),
        ("l@h", "dead"),
    ]
    assert not lanes["light"].served and lanes["model"].served
    (upload,) = lanes["light"].jobs
    assert upload.starts_in is None  # never "starts in under a minute"
    client.force_login(cast["owner"])
    page = client.get("/jobs/").content.decode()
    assert "No worker alive serves this lane" in page and "no worker serves this lane" in page
    assert "killed by SIGKILL; restarting in 1 s" in page
    assert page.count('class="worker alive"') == 3  # model, quick, io
    import_page = client.get(f"/imports/{upload.url.rstrip('/').rsplit('/', 1)[1]}/")
    assert "No light worker is alive now" in import_page.content.decode()


def test_a_worker_is_alive_while_it_beats_not_answering_after_missed_beats_then_dead(cast):
    node = _worker("w@h", "light")
    now = timezone.now()
    beat = workers.interval()
    assert workers.state_of(node, now).state == "alive"
    later = now + timedelta(seconds=beat * (workers.MISSED_BEATS + 1))
    assert workers.state_of(node, later).state == "not answering"
    gone = workers.state_of(node, now + timedelta(seconds=workers.DEAD_AFTER_S + 1))
    assert (gone.state, gone.reason) == ("dead", "no heartbeat for 10 min")
    workers.stopped("w@h", "stopped (shut down)")
    node.refresh_from_db()
    stopped = workers.state_of(node, now)
    assert (stopped.state, stopped.reason, stopped.since) == (
        "dead",
        "stopped (shut down)",
        node.stopped_at,
    )
