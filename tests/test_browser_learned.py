"""A researcher trains a learned metric from the browser (real Chromium, a real worker):
the dataset page's *Train a metric* button, the form redrawn by htmx when the dataset
changes, a located error for too few pairs, then the live job page until the worker's
tiny-model training succeeds and the report opens. No CSP violation on the way."""

from __future__ import annotations

import pytest
from playwright.sync_api import Browser, expect

from learned.models import TrainedMetric
from studies.services.imports import ImportOptions, import_file
from tests.browser import Watched
from tests.factories import dataset_pk
from tests.learned.conftest import records
from tests.tiny_models import tiny_gpt2

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("defaults_restored"),
    pytest.mark.browser,
]


REDRAW_MS = 20_000  # an htmx round trip to the live server; CI's machine may be loaded


def test_a_researcher_fills_the_training_form_and_follows_the_job_to_its_report(
    live_server, browser: Browser, cast, write_jsonl, celery_worker_process, settings, tmp_path
):
    for name, rows in (
        ("judged", records()),
        (
            "coherence-only",
            [
                {**r, "human": {"coherence": r["human"]["coherence"]}}  # type: ignore[dict-item]
                for r in records(6)
            ],
        ),
    ):
        path = write_jsonl(rows, name=f"{name}.jsonl")
        import_file(
            path,
            ImportOptions(
                dataset=name,
                task="summarization",
                file_format="jsonl",
                file_name=path.name,
                owner=cast["owner"],
            ),
        )
    # a tiny model installed in the model directory: the form lists it (a web request
    # may not name a path); the worker loads it from the location frozen with the job
    tiny_gpt2(tmp_path / "models" / "tiny-gpt2")
    settings.CONCORDIA = {**settings.CONCORDIA, "MODEL_DIR": tmp_path / "models"}

    researcher = Watched(browser, live_server.url)
    researcher.log_in("owner")
    page = researcher.page
    researcher.open(f"/datasets/{dataset_pk('judged')}/")
    page.click("#train-metric")
    expect(page.locator("h1")).to_have_text("Train a learned metric")
    aspects = page.locator("#id_aspect option")
    expect(aspects).to_have_text(["---------", "Coherence (COH)", "Fluency (FLU)"])

    page.fill("#id_seed", "1")
    page.select_option("#id_dataset", label="coherence-only")  # htmx redraws the form
    expect(aspects).to_have_text(["---------", "Coherence (COH)"], timeout=REDRAW_MS)
    expect(page.locator("#id_seed")).to_have_value("1")  # what was typed survives the redraw
    researcher.settled()  # the new select listens only once htmx has settled the swap
    page.select_option("#id_dataset", label="judged")
    expect(aspects).to_have_count(3, timeout=REDRAW_MS)
    researcher.settled()

    page.select_option("#id_aspect", label="Coherence (COH)")
    page.select_option("#id_backbone", "tiny-gpt2")
    page.fill("#id_margin", "5")
    page.click("#start-training")
    expect(page.locator("#train-errors")).to_contain_text("Too few preference pairs: 0 train pairs")
    assert not TrainedMetric.objects.exists()

    page.fill("#id_margin", "0.5")
    page.click("#start-training")
    job = TrainedMetric.objects.get()
    expect(page.locator("h1")).to_contain_text("learned:tiny-gpt2:single:head:COH")
    assert page.url.endswith(f"/learned/{job.pk}/")
    # the progress partial polls through htmx until the worker is done
    expect(page.locator("#job-status")).to_have_text("Succeeded", timeout=180_000)
    page.click("#report-link")
    expect(page.locator("#table2")).to_be_visible()
    job.refresh_from_db()
    assert job.status == "succeeded" and job.config["seed"] == 1 and job.checkpoint_sha256
    # the form with its error answered 400 on purpose; nothing else went wrong
    expected = [f"400 for {live_server.url}/learned/new/"]
    assert researcher.collect() == expected, "\n".join(researcher.problems)
