"""Heartbeats in every step of a worker's long work (issue 43: G-Eval's "writing
evaluation steps" sent none, so the sweeper took a live run back after 344 s and 1,050 s
of work were lost). A short lease here: the step outlasts it, and the sweeper, run while
the step is under way, must see the run alive."""

from __future__ import annotations

import time

import pytest
from django.core.cache import cache
from django.utils import timezone

from scoring.lm.hf import HFLanguageModel
from studies.models import Dataset
from studies.services import queue
from studies.services.analysis.report_card import store
from studies.services.analysis.report_card.params import CardParams
from studies.services.imports import ImportOptions, import_file
from studies.services.recovery import sweep_stale_work
from studies.services.runs import RunRequest, execute_run, start_run
from tests.conftest import record
from tests.factories import DatasetFactory
from tests.tiny_models import tiny_gpt2

pytestmark = [
    pytest.mark.django_db(transaction=True),  # the heartbeat thread has its own connection
    pytest.mark.usefixtures("defaults_restored"),
]
LEASE = 2  # seconds


@pytest.fixture
def short_lease(settings, monkeypatch):  # type: ignore[no-untyped-def]
    settings.CONCORDIA = {
        **settings.CONCORDIA,
        "RUN_LEASE_SECONDS": LEASE,
        "WORKER_HEARTBEAT_SECONDS": 0.2,
    }
    sent: list[object] = []
    monkeypatch.setattr(queue, "send", lambda name, *args, **kw: sent.append((name, *args)))
    return sent


def _outlast_the_lease() -> None:
    """A step longer than the lease (the work it stands for takes minutes)."""
    deadline = time.monotonic() + LEASE * 1.5
    while time.monotonic() < deadline:
        time.sleep(0.05)


def test_a_geval_run_writing_its_steps_longer_than_the_lease_is_not_taken_back(
    write_jsonl, cast, tmp_path, short_lease
):
    path = write_jsonl(
        [
            record(f"d{d}", f"s{s}", output=f"Output {s} about {d}.", source=f"Budget {d}.")
            for d in range(2)
            for s in range(2)
        ]
    )
    options = ImportOptions(
        dataset="g", task="summarization", file_format="jsonl", file_name=path.name
    )
    import_file(path, options)
    model = tiny_gpt2(tmp_path / "tiny", n_positions=2048)
    run = start_run(
        Dataset.objects.get(name="g"),
        RunRequest(metric="geval", aspect="coherence", model=model),
        enqueue=False,
        local_paths=True,
    )
    swept: list[dict[str, int]] = []

    class SlowSteps(HFLanguageModel):
        def generate(self, prompt, **kw):  # type: ignore[no-untyped-def]
            _outlast_the_lease()  # the steps take a minute or more on a real model
            swept.append(sweep_stale_work(timezone.now()))  # the sweeper's turn meanwhile
            return super().generate(prompt, **kw)

    factory = lambda r: SlowSteps(model)  # noqa: E731
    assert execute_run(run.pk, model_factory=factory) == "succeeded"
    (counts,) = swept
    assert counts["running_runs"] == 0, counts
    run.refresh_from_db()
    assert run.status == "succeeded" and run.done == run.total == 4
    assert "recoveries" not in run.provenance
    assert not [m for m in short_lease if "run_metric" in str(m)]  # never sent again


def test_a_report_card_being_computed_stays_marked_past_the_marks_lifetime(
    cast, short_lease, monkeypatch, settings
):
    """The card's "being computed" mark lives three heartbeats: a computation longer
    than that keeps it (else each page poll would send the card again), and once the
    worker is gone it lapses within seconds (the page then asks again)."""
    # a heartbeat of a second: on a loaded machine a 0.2 s one can be late by a lifetime
    monkeypatch.setitem(settings.CONCORDIA, "WORKER_HEARTBEAT_SECONDS", 1.0)
    dataset = DatasetFactory(name="c", owner=cast["owner"])
    params = CardParams.from_dict({})
    key = params.key(dataset) + ":progress"
    seen: list[object] = []

    def long_card(dataset, params, report):  # type: ignore[no-untyped-def]
        report(0, 10)
        deadline = time.monotonic() + store.progress_seconds() * 3
        while time.monotonic() < deadline:  # a matrix computed without a progress report
            time.sleep(0.05)
        seen.append(cache.get(key))
        return {"rows": [], "seconds": 0}

    monkeypatch.setattr(store, "compute_card", long_card)
    assert store.compute_in_worker(dataset, params) == "0 rows in 0 s"
    assert seen == [{"done": 0, "total": 10}]
    assert cache.get(key) is None  # done: no longer marked
