"""Human scores against their aspect's scale: rejected with the scale, or rescaled or
widened when the import says so explicitly; created aspects take the file's range."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.core.management import call_command

from studies.models import Aspect, Judgment
from studies.services.imports import ImportOptions, ImportValidationError, import_file
from studies.services.imports.scales import parse_ranges, rounded_range
from tests.conftest import SHARED_DATA, record, row_counts
from tests.studies.shared_datasets import LIKERT_FILES

pytestmark = pytest.mark.django_db


def run_import(path: Path, dataset: str = "scales", **kw: object):  # type: ignore[no-untyped-def]
    return import_file(
        path,
        ImportOptions(
            dataset=dataset,
            task="summarization",
            file_format=kw.pop("file_format", "jsonl"),  # type: ignore[arg-type]
            file_name=path.name,
            **kw,  # type: ignore[arg-type]
        ),
    )


@pytest.mark.parametrize("value", [-7, 99, 1e308, 0, 5.01])
def test_score_outside_the_aspects_scale_is_rejected_with_the_scale(write_jsonl, value):
    path = write_jsonl([record("d1"), record("d2"), record("d3", human={"coherence": value})])
    before = row_counts()
    with pytest.raises(ImportValidationError) as info:
        run_import(path)
    shown = f"{value:g}"
    assert f"line 3, field 'human.coherence': {shown} is outside the aspect's scale 1–5" in str(
        info.value
    )
    assert row_counts() == before


def test_scale_edges_are_inside(write_jsonl):
    run_import(
        write_jsonl([record("d1", human={"coherence": 1}), record("d2", human={"coherence": 5})])
    )
    assert sorted(Judgment.objects.filter(aspect__code="COH").values_list("value", flat=True)) == [
        1.0,
        5.0,
    ]


def test_rescale_maps_the_stated_range_linearly_and_says_so(write_jsonl):
    path = write_jsonl(
        [record(f"d{v}", human={"coherence": v, "fluency": 4.0}) for v in (1, 2, 3.5, 6)]
    )
    summary = run_import(path, rescale={"coherence": (1.0, 6.0)})
    values = Judgment.objects.filter(aspect__code="COH").order_by("output__document__doc_key")
    assert [round(j.value, 9) for j in values] == [1.0, 1.8, 3.0, 5.0]
    assert summary.scales == ["coherence rescaled linearly from 1–6 onto COH's scale 1–5"]
    assert set(Judgment.objects.filter(aspect__code="FLU").values_list("value", flat=True)) == {4.0}


def test_rescale_rejects_values_outside_the_stated_range(write_jsonl):
    path = write_jsonl([record("d1", human={"coherence": 7})])
    with pytest.raises(ImportValidationError, match="7 is outside the stated source range 1–6"):
        run_import(path, rescale={"coherence": (1.0, 6.0)})
    assert Judgment.objects.count() == 0


def test_rescale_of_a_name_not_in_the_file_is_an_error(write_jsonl):
    with pytest.raises(
        ImportValidationError, match="no human score in the file is named 'relevance'"
    ):
        run_import(write_jsonl([record("d1")]), rescale={"relevance": (0.0, 10.0)})


def test_widen_aspects_imports_into_a_wider_copy_once(write_jsonl):
    path = write_jsonl(
        [record("d1", human={"coherence": 6.0}), record("d2", human={"coherence": 1.5})]
    )
    summary = run_import(path, widen_aspects=True)
    wider = Aspect.objects.get(code="COH_1_6")
    coherence = Aspect.objects.get(code="COH")
    assert (wider.name, wider.scale_min, wider.scale_max) == ("Coherence 1–6", 1.0, 6.0)
    assert wider.definition == coherence.definition
    assert summary.aspects_created == ["COH_1_6"]
    assert "a wider copy of COH" in summary.scales[0]
    assert Judgment.objects.filter(aspect=wider).count() == 2
    assert not Judgment.objects.filter(aspect=coherence).exists()
    again = run_import(path, widen_aspects=True)
    assert again.aspects_created == []
    assert Aspect.objects.filter(code__startswith="COH").count() == 2


def test_created_aspect_takes_a_rounded_scale_from_the_file_and_states_it(write_jsonl):
    path = write_jsonl([record("d1", human={"recall": 0.03}), record("d2", human={"recall": 0.97})])
    summary = run_import(path, create_aspects=True)
    aspect = Aspect.objects.get(code="RECALL")
    assert (aspect.scale_min, aspect.scale_max) == (0.0, 1.0)
    assert summary.scales == [
        "created RECALL with the scale 0–1 from the file's recall values (0.03–0.97)"
    ]


@pytest.mark.parametrize(
    ("low", "high", "expected"),
    [
        (2, 7, (2, 7)),
        (1.33, 4.67, (1, 5)),
        (0.03, 0.97, (0, 1)),
        (0.41, 0.5, (0.41, 0.5)),
        (3, 3, (3, 4)),
        (-7, 99, (-7, 99)),
        (1e308, 1e308, (1e308 * (1 - 2**-52), 1e308)),
    ],
)
def test_rounded_range_rounds_outward_and_keeps_min_below_max(low, high, expected):
    result = rounded_range(low, high)
    assert result == pytest.approx(expected)
    assert result[0] < result[1] and result[0] <= low and high <= result[1]


def test_parse_ranges_reads_the_form_and_command_syntax():
    assert parse_ranges("Informativeness=1:6, quality = 0:100") == {
        "informativeness": (1.0, 6.0),
        "quality": (0.0, 100.0),
    }
    for bad in ("informativeness", "x=6:1", "x=a:b", "x=0:inf"):
        with pytest.raises(ValueError, match="x|informativeness"):
            parse_ranges(bad)


def test_upload_form_passes_rescale_and_widen_to_the_job(client, cast):
    from django.core.files.uploadedfile import SimpleUploadedFile
    from django.urls import reverse

    from studies.models import ImportJob
    from studies.services.imports import run_import_job

    content = json.dumps(record("d1", human={"coherence": 6.0, "fluency": 6.0})).encode()
    client.force_login(cast["owner"])
    response = client.post(
        reverse("studies:upload"),
        {
            "file": SimpleUploadedFile("six.jsonl", content),
            "dataset": "uploaded",
            "task": "summarization",
            "rescale": "coherence=1:6",
            "widen_aspects": "on",
        },
    )
    assert response.status_code == 302
    job = ImportJob.objects.get()
    assert job.scale_options == {"rescale": {"coherence": [1.0, 6.0]}, "widen_aspects": True}
    assert run_import_job(job.pk) == ImportJob.Status.SUCCEEDED
    assert Judgment.objects.get(aspect__code="COH").value == 5.0
    assert Judgment.objects.get(aspect__code="FLU_1_6").value == 6.0
    page = client.get(reverse("studies:import-detail", args=[job.pk])).content.decode()
    assert "coherence rescaled linearly from 1–6 onto COH&#x27;s scale 1–5" in page


def test_upload_form_refuses_a_bad_rescale(client, cast):
    from django.core.files.uploadedfile import SimpleUploadedFile
    from django.urls import reverse

    client.force_login(cast["owner"])
    response = client.post(
        reverse("studies:upload"),
        {
            "file": SimpleUploadedFile("six.jsonl", json.dumps(record("d1")).encode()),
            "dataset": "uploaded",
            "task": "summarization",
            "rescale": "coherence=6:1",
        },
    )
    assert response.status_code == 400
    assert "LOW must be below HIGH" in response.content.decode()


def test_a_score_without_the_option_fails_the_upload_job_with_its_line(write_jsonl, cast):
    from django.core.files.uploadedfile import SimpleUploadedFile

    from studies.models import ImportJob, TaskKind
    from studies.services.imports import create_import_job, run_import_job

    job = create_import_job(
        upload=SimpleUploadedFile(
            "six.jsonl", json.dumps(record("d1", human={"fluency": 6})).encode()
        ),
        original_name="six.jsonl",
        file_format="jsonl",
        dataset_name="uploaded",
        task=TaskKind.objects.get(code="summarization"),
        create_aspects=False,
        user=cast["owner"],
    )
    assert run_import_job(job.pk) == ImportJob.Status.FAILED
    job.refresh_from_db()
    assert job.errors[0].startswith(
        "line 1, field 'human.fluency': 6 is outside the aspect's scale 1–5"
    )


# --- the real datasets ------------------------------------------------------------------

# the files without per-annotator judgments, whole (each file's import options: the
# data-to-text files score 1–6 against aspects defined on 1–5, and use 'quality')
SHARED_FILES = ("summeval", "newsroom", "realsumm", "bagel", "sfhot", "sfres")


@pytest.mark.skipif(not SHARED_DATA.is_dir(), reason="../shared/data is not beside the repository")
@pytest.mark.parametrize("name", sorted(SHARED_FILES))
def test_every_shared_dataset_imports(name, capsys):
    path = SHARED_DATA / f"{name}.jsonl"
    shared = LIKERT_FILES[name]
    lines = sum(1 for line in path.open(encoding="utf-8") if line.strip())
    call_command(
        "import_records", str(path), "--dataset", name, "--task", shared.task, *shared.options
    )
    out = capsys.readouterr().out
    assert f"{lines} records into {name}" in out
    for line in path.open(encoding="utf-8"):
        for aspect_name, value in json.loads(line)["human"].items():
            assert value is not None and aspect_name
    judgments = Judgment.objects.filter(output__document__dataset__name=name)
    for aspect in Aspect.objects.filter(judgments__in=judgments).distinct():
        values = judgments.filter(aspect=aspect).values_list("value", flat=True)
        assert aspect.scale_min <= min(values) and max(values) <= aspect.scale_max, aspect.code
    if name == "realsumm":
        assert "created LITEPYRAMID_RECALL with the scale 0–1" in out
