"""The client's errors against a live server (no worker): authentication, objects that are
not yours, refused input, a file refused line by line, cancelling, a failed run, a
wait that times out, and a report card that failed to compute."""

from __future__ import annotations

import pytest
from concordia_client import (
    AuthenticationError,
    BadRequest,
    Client,
    ComputationFailed,
    Conflict,
    ImportFailed,
    NotFound,
    PermissionDenied,
    RunCancelled,
    RunFailed,
    Timeout,
)

from studies.models import Dataset, MetricRun
from studies.services.tokens import token_for
from tests.conftest import record
from tests.factories import MetricRunFactory
from tests.studies.report_card_data import build_panel

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("defaults_restored")]


def test_a_wrong_token_or_password_is_an_authentication_error_and_login_gets_the_token(
    live_server, cast
):
    with pytest.raises(AuthenticationError) as raised:
        Client(live_server.url, "0" * 40).datasets()
    assert raised.value.status == 401 and raised.value.detail == "Invalid token."
    with pytest.raises(AuthenticationError, match="Unable to log in"):
        Client.login(live_server.url, "owner", "wrong")
    with Client.login(live_server.url, "owner", "pw") as api:
        assert api.datasets() == []
        assert api._http.client.headers["Authorization"] == f"Token {token_for(cast['owner'])}"


def test_what_is_not_yours_is_not_found_and_a_refused_run_names_its_field(api, live_server, cast):
    theirs = MetricRunFactory(dataset__owner=cast["outsider"])
    with pytest.raises(NotFound):
        api.run(theirs.pk)
    with pytest.raises(NotFound):
        api.dataset(theirs.dataset_id)
    with pytest.raises(PermissionDenied):  # annotators read no runs
        Client(live_server.url, token_for(cast["annotator"]).key).runs()
    mine = MetricRunFactory(dataset__owner=cast["owner"]).dataset
    with pytest.raises(BadRequest) as raised:
        api.start_run(mine.pk, "no-such-metric")
    assert raised.value.status == 400 and list(raised.value.errors) == ["metric"]
    assert "no-such-metric" in raised.value.errors["metric"][0]


def test_a_malformed_file_raises_import_failed_naming_its_lines_and_writes_nothing(
    api, write_jsonl, tmp_path
):
    path = write_jsonl(
        [record("d1", "s1"), "not json", record("d2", "s1", human={"coherence": "high"})],
        "bad.jsonl",
    )
    with pytest.raises(ImportFailed) as raised:
        api.upload(path, dataset="bad")  # small: validated in the request
    problems = raised.value.problems
    assert [(p.line, p.field) for p in problems] == [(2, ""), (3, "human.coherence")]
    assert "line 3, field 'human.coherence'" in str(raised.value)
    assert raised.value.job.status == "failed" and raised.value.job.original_name == "bad.jsonl"
    assert not Dataset.objects.filter(name="bad").exists()
    notes = tmp_path / "notes.txt"  # not an import format: refused before any import
    notes.write_text("hello")
    with pytest.raises(BadRequest) as refused:
        api.upload(notes, dataset="notes")
    assert "file" in refused.value.errors


def test_cancelling_a_pending_run_ends_it_and_waiting_on_it_raises_run_cancelled(api, cast):
    run = MetricRunFactory(dataset__owner=cast["owner"], metric="rouge1", total=4)
    cancelled = api.cancel_run(run.pk)
    assert cancelled.status == "cancelled" and cancelled.finished_at is not None
    assert MetricRun.objects.get(pk=run.pk).status == "cancelled"
    with pytest.raises(Conflict, match="only a pending or running run can be cancelled"):
        api.cancel_run(run.pk)
    with pytest.raises(RunCancelled) as raised:
        api.wait_for_run(run.pk)
    assert raised.value.run.id == run.pk


def test_waiting_on_a_failed_run_raises_run_failed_with_its_error(api, cast):
    run = MetricRunFactory(
        dataset__owner=cast["owner"], status="failed", error="CUDA out of memory", done=1, total=4
    )
    with pytest.raises(RunFailed, match="failed: CUDA out of memory") as raised:
        api.wait_for_runs([run.pk])
    assert raised.value.run.error == "CUDA out of memory"
    (ended,) = api.wait_for_runs([run.pk], raise_on_failure=False)
    assert (ended.status, ended.done, ended.total, ended.is_partial) == ("failed", 1, 4, True)


def test_a_wait_that_outlasts_its_timeout_raises_timeout_with_the_last_state(api, cast):
    run = MetricRunFactory(dataset__owner=cast["owner"], total=6)  # no worker takes it
    seen = []
    with pytest.raises(Timeout) as raised:  # polls every 0.1 s: a loaded server's too
        api.wait_for_run(run.pk, timeout=3.0, progress=seen.append)
    assert isinstance(raised.value, TimeoutError)
    assert len(seen) >= 2 and {(r.status, r.done, r.total) for r in seen} == {("pending", 0, 6)}
    assert raised.value.last == [seen[-1]]


def test_a_report_card_that_fails_to_compute_raises_computation_failed_and_retry_computes_it(
    api, cast, monkeypatch
):
    from studies.services.analysis.report_card import store

    panel = build_panel(cast["owner"])
    compute = store.compute_card

    def off_scale(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise ValueError("answers off the scale [1.0, 1.333]: [2.0]")

    monkeypatch.setattr(store, "compute_card", off_scale)
    with pytest.raises(ComputationFailed, match="answers off the scale") as raised:
        api.report_card(panel.dataset.pk, aspects=["COH"], timeout=5)
    assert raised.value.status == 500 and len(raised.value.error_id) == 8
    assert raised.value.error_id in str(raised.value)
    monkeypatch.setattr(store, "compute_card", compute)
    with pytest.raises(ComputationFailed):  # remembered: not computed again by itself
        api.report_card(panel.dataset.pk, aspects=["COH"], timeout=5)
    card = api.report_card(panel.dataset.pk, aspects=["COH"], retry=True, timeout=30)
    assert len(card["rows"]) == 4
