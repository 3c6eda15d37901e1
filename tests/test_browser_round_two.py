"""Issue 26 in Chromium, items 2, 4, 5 and 8: a sentinel still scoring marks nothing
and the page says so; runs sharing a label read apart (id on hover) and a rename shows
at once; the PPI page gives no interval from three judged outputs; "Add sentinel
baselines" and a run's Cancel ask first (dismissed: nothing happens)."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import Browser, Dialog, expect

from studies.models import Dataset, MetricRun, MetricScore, Output, PromptTemplateVersion
from tests.browser import Watched, wait_for
from tests.conftest import record
from tests.factories import import_jsonl, ppi_records

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("defaults_restored"),  # tasks and aspects, after a flush
    pytest.mark.browser,
]
LABEL = "gptscore:SmolLM2-135M-Instruct:IST:src_hypo:COH"


def _dataset(tmp_path, owner) -> Dataset:  # type: ignore[no-untyped-def]
    lines = []
    for d in range(12):
        for s in range(3):
            fields = record(f"d{d:02d}", f"s{s}", output=f"Output {d} {s}." + " word" * s)
            fields["human"] = {"coherence": 1 + s + d % 2}
            if d >= 3:  # three judged outputs per system
                del fields["human"]
            fields["metrics"] = {"m": float(s + d % 3)}
            lines.append(json.dumps(fields))
    path = tmp_path / "two.jsonl"
    path.write_text("\n".join(lines) + "\n")
    import_jsonl(path, "two", owner)
    return Dataset.objects.get(name="two")


def _scored_run(dataset: Dataset, share: float = 1.0, **fields) -> MetricRun:  # type: ignore[no-untyped-def]
    outputs = list(Output.objects.filter(document__dataset=dataset).order_by("pk"))
    kept = outputs[: max(1, int(len(outputs) * share))]
    status = "succeeded" if share == 1.0 else "running"
    run = MetricRun.objects.create(
        dataset=dataset, status=status, done=len(kept), total=len(outputs), **fields
    )
    MetricScore.objects.bulk_create(
        MetricScore(run=run, output=o, value=float(len(o.text) % 7)) for o in kept
    )
    dataset.bump_data_version()
    return run


def test_the_second_rounds_marks_labels_intervals_and_confirmations(
    live_server, browser: Browser, cast, tmp_path
):
    dataset = _dataset(tmp_path, cast["owner"])
    v1 = PromptTemplateVersion.objects.order_by("pk").first()
    assert v1 is not None
    v2 = PromptTemplateVersion.objects.create(
        template=v1.template,
        version=v1.template.versions.order_by("-version").first().version + 1,  # type: ignore[union-attr]
        text=v1.text,
        target=v1.target,
    )
    first = _scored_run(dataset, metric="gptscore", label=LABEL, template_version=v1)
    _scored_run(dataset, metric="gptscore", label=LABEL, template_version=v2)
    _scored_run(dataset, share=0.25, metric="length", label="length")  # a sentinel, scoring

    researcher = Watched(browser, live_server.url)
    researcher.log_in("owner")
    page = researcher.page
    questions: list[str] = []

    def dismiss(dialog: Dialog) -> None:
        questions.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", dismiss)
    researcher.open(f"/datasets/{dataset.pk}/correlations/")
    rows = page.locator("#matrix-table th.runlabel")
    expect(rows.filter(has_text=f"[template v{v1.version}]")).to_have_attribute(
        "title", f"run {first.pk}"
    )
    expect(rows.filter(has_text=f"[template v{v2.version}]")).to_have_count(1)
    # item 2: the sentinel at 9 of 36 outputs marks nothing, and the page says so
    expect(page.locator("#sentinels-pending")).to_contain_text("No ≈S mark from length yet")
    expect(page.locator("#matrix-table .sentinel-fail")).to_have_count(0)
    # item 8: Add sentinel baselines asks, with what it starts; dismissed, nothing starts
    runs_before = MetricRun.objects.count()
    asked = len(questions)
    page.click("#add-sentinels")
    wait_for(page, lambda: len(questions) > asked, "the question before adding sentinels", 10)
    assert questions and "sentinel runs over the 36 outputs" in questions[-1]
    assert MetricRun.objects.count() == runs_before and "/correlations/" in page.url

    # item 4: a rename on the run's page shows in the matrix
    researcher.open(f"/runs/{first.pk}/")
    page.click("#rename summary")
    page.fill("#rename input[name=label]", "GPTScore, template one")
    page.click("#rename button")
    expect(page.locator("h1")).to_contain_text("GPTScore, template one")
    researcher.open(f"/datasets/{dataset.pk}/correlations/")
    expect(rows.filter(has_text="GPTScore, template one")).to_have_count(1)

    # item 8: Cancel asks first; dismissed, the run goes on
    scoring = MetricRun.objects.get(label="length")
    researcher.open(f"/runs/{scoring.pk}/")
    asked = len(questions)
    page.click("#run-progress button:has-text('Cancel')")
    wait_for(page, lambda: len(questions) > asked, "the question before cancelling", 10)
    assert "Cancel this run?" in questions[-1] and "the 9 scores so far are kept" in questions[-1]
    assert MetricRun.objects.get(pk=scoring.pk).status == "running"

    # item 5: three judged outputs per system: no interval, and why
    rows_ppi = ppi_records(judged_docs=3)
    path = tmp_path / "few.jsonl"
    path.write_text(
        "".join(
            json.dumps({k: v for k, v in r.items() if k != "human_all"}) + "\n" for r in rows_ppi
        )
    )
    import_jsonl(path, "few", cast["owner"])
    researcher.open(f"/datasets/{Dataset.objects.get(name='few').pk}/ppi/")
    table = page.locator("#ppi-table")
    expect(table.locator(".no-interval").first).to_contain_text(
        "3 judged outputs: no interval below 8"
    )
    assert "[" not in table.inner_text()
    page.close()
    researcher.collect()
    assert researcher.problems == [], researcher.problems
