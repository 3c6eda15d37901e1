"""Per-annotator labels and pairwise preferences uploaded through the page and imported
by a real worker: the job's page says what became of ``human`` and shows the pairs."""

from __future__ import annotations

import time

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from studies.models import Aspect, ImportedPreference, ImportJob, Judgment

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("defaults_restored"),
    pytest.mark.worker,
]


def upload(client, name: str, content: bytes) -> ImportJob:  # type: ignore[no-untyped-def]
    response = client.post(
        reverse("studies:upload"),
        {
            "file": SimpleUploadedFile(name, content),
            "dataset": "raters",
            "task": "summarization",
            "create_aspects": "on",
        },
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    job = ImportJob.objects.get(original_name=name)
    deadline = time.monotonic() + 60
    while job.status in ("pending", "running") and time.monotonic() < deadline:
        time.sleep(0.2)
        job.refresh_from_db()
    assert job.status == "succeeded", job.errors
    return job


def test_rater_columns_and_a_pairs_file_are_imported_by_the_worker(
    client, cast, celery_worker_process
):
    client.force_login(cast["owner"])
    rows = ["doc_id,system_id,source,output,human_verdict,human_verdict@r1,human_verdict@r2"]
    rows += [
        f"d{k},s{k % 2},src {k},out {k},pass,{'pass' if k % 3 else 'fail'},pass" for k in range(8)
    ]
    job = upload(client, "raters.csv", ("\n".join(rows) + "\n").encode())
    verdict = Aspect.objects.get(key="verdict", owner=cast["owner"])
    assert (verdict.kind, verdict.labels, verdict.positive) == ("binary", ["fail", "pass"], "pass")
    raters = Judgment.objects.filter(aspect=verdict).values_list("rater", flat=True)
    assert sorted(set(raters)) == ["r1", "r2"] and len(raters) == 16
    page = client.get(reverse("studies:import-detail", args=[job.pk])).content.decode()
    assert 'id="import-notes"' in page and "human.verdict was not used (8 values)" in page

    pairs = b"".join(
        b'{"doc_id": "d%d", "source": "src %d", "system_a": "s0", "output_a": "out %d", '
        b'"system_b": "s9", "output_b": "b", "aspect": "verdict", "annotator": "r1", '
        b'"winner": "tie"}\n' % (k, k, k)
        for k in range(0, 8, 2)
    )
    second = upload(client, "raters_pairs.jsonl", pairs)
    assert second.summary["pairwise_judgments"] == {"created": 4, "updated": 0}
    assert ImportedPreference.objects.filter(winner="tie", rater="r1").count() == 4
    page = client.get(reverse("studies:import-detail", args=[second.pk])).content.decode()
    assert "pairwise judgments 4 new / 0 updated" in page
