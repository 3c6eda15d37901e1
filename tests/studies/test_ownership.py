"""Nothing crosses owners: datasets are named per owner, an import job writes only into
its creator's dataset, researcher-created aspects and edited evaluation steps stay their
author's, aspect keys survive a rename, and a run's model comes from an allow-list."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import IntegrityError, transaction
from django.urls import reverse

from annotation.forms import CampaignForm
from studies.models import (
    AllowedModel,
    Aspect,
    Dataset,
    EvaluationSteps,
    ImportJob,
    Judgment,
    Output,
    Study,
    TaskKind,
)
from studies.services.catalog import steps as steps_service
from studies.services.catalog.model_catalog import ModelNotAllowed, check_model
from studies.services.imports import (
    ImportOptions,
    ImportValidationError,
    export_dataset,
    import_file,
    run_import_job,
)
from studies.services.lookup import DatasetNotFound, find_dataset
from studies.services.runs import RunRequest, start_run
from tests.conftest import record, row_counts
from tests.factories import DatasetFactory, UserFactory

pytestmark = pytest.mark.django_db


def _import(write_jsonl, owner, dataset="summeval", records=None, **options):  # type: ignore[no-untyped-def]
    path = write_jsonl(records or [record("d1", "s1"), record("d1", "s2")])
    opts = ImportOptions(
        dataset=dataset,
        task="summarization",
        file_format="jsonl",
        file_name=path.name,
        owner=owner,
        **options,
    )
    return import_file(path, opts)


# --- datasets per owner -------------------------------------------------------------------


def test_two_researchers_each_have_their_own_dataset_of_one_name(cast, write_jsonl):
    _import(write_jsonl, cast["owner"])
    _import(write_jsonl, cast["outsider"], records=[record("other", "s9")])
    mine, theirs = (
        Dataset.objects.get(name="summeval", owner=cast[u]) for u in ("owner", "outsider")
    )
    assert Output.objects.filter(document__dataset=mine).count() == 2
    assert list(
        Output.objects.filter(document__dataset=theirs).values_list("system_id", flat=True)
    ) == ["s9"]
    with pytest.raises(IntegrityError), transaction.atomic():
        Dataset.objects.create(name="summeval", owner=cast["owner"], task=mine.task)


def test_dataset_pages_are_addressed_by_id_and_show_only_the_owners_data(client, cast, write_jsonl):
    _import(write_jsonl, cast["owner"])
    _import(write_jsonl, cast["outsider"], records=[record("other", "s9")])
    mine = Dataset.objects.get(owner=cast["owner"])
    theirs = Dataset.objects.get(owner=cast["outsider"])
    client.force_login(cast["owner"])
    page = client.get(reverse("studies:dataset-detail", args=[mine.pk]))
    assert page.status_code == 200 and b'id="n-outputs">2<' in page.content
    for name in ("dataset-detail", "run-new", "correlations", "correlations-paper"):
        assert client.get(reverse(f"studies:{name}", args=[theirs.pk])).status_code == 404
    export = reverse("studies:dataset-export", args=[theirs.pk, "jsonl"])
    assert client.get(export).status_code == 404
    assert reverse("studies:dataset-detail", args=[mine.pk]) == f"/datasets/{mine.pk}/"


def test_an_import_job_refuses_a_dataset_its_creator_does_not_own(cast, write_jsonl):
    theirs = DatasetFactory(name="summeval", owner=cast["outsider"])
    path = write_jsonl([record()])
    job = ImportJob.objects.create(
        upload=SimpleUploadedFile("x.jsonl", path.read_bytes()),
        original_name="x.jsonl",
        file_format="jsonl",
        dataset_name="summeval",
        task=TaskKind.objects.get(code="summarization"),
        created_by=cast["owner"],
        dataset=theirs,
    )
    before = row_counts()
    assert run_import_job(job.pk) == "failed"
    job.refresh_from_db()
    assert "does not belong to owner" in job.errors[0] and "nothing was imported" in job.errors[0]
    assert row_counts() == before


def test_commands_find_a_dataset_by_id_owner_and_name_or_an_unambiguous_name(cast, write_jsonl):
    _import(write_jsonl, cast["owner"])
    mine = Dataset.objects.get()
    assert (
        find_dataset("summeval")
        == mine
        == find_dataset(str(mine.pk))
        == find_dataset("owner/summeval")
    )
    _import(write_jsonl, cast["outsider"])
    with pytest.raises(
        DatasetNotFound,
        match=r"several datasets are named 'summeval': owner/summeval \(id \d+\), outsider/summeval",
    ):
        find_dataset("summeval")
    with pytest.raises(CommandError, match="several datasets are named 'summeval'"):
        call_command("export_dataset", "summeval")
    with pytest.raises(DatasetNotFound, match="no dataset 'summeval' owned by 'nobody'"):
        find_dataset("nobody/summeval")


def test_import_records_owner_option_imports_into_that_users_dataset(cast, write_jsonl, capsys):
    path = write_jsonl([record()])
    for who in ("owner", "outsider"):
        call_command(
            "import_records",
            str(path),
            "--dataset",
            "summeval",
            "--task",
            "summarization",
            "--owner",
            who,
        )
    assert sorted(Dataset.objects.values_list("owner__username", flat=True)) == [
        "outsider",
        "owner",
    ]
    with pytest.raises(CommandError, match="several datasets are named 'summeval'"):
        call_command(
            "import_records", str(path), "--dataset", "summeval", "--task", "summarization"
        )
    call_command(
        "import_records", str(path), "--dataset", "owner/summeval", "--task", "summarization"
    )
    assert Dataset.objects.count() == 2


# --- aspects --------------------------------------------------------------------------------


def test_aspects_created_by_an_import_belong_to_the_researcher_and_stay_out_of_others_forms(
    client, cast, write_jsonl
):
    records = [
        record(human={"coherence": 3, "wit": 2}),
        record("d2", human={"coherence": 4, "wit": 5}),
    ]
    _import(write_jsonl, cast["owner"], records=records, create_aspects=True)
    wit = Aspect.objects.get(code="WIT")
    assert wit.owner == cast["owner"] and wit.key == "wit"
    _import(write_jsonl, cast["outsider"], records=[record(human={"wit": 1})], create_aspects=True)
    theirs = Aspect.objects.get(code="WIT", owner=cast["outsider"])  # their own, not the owner's
    assert theirs != wit and Judgment.objects.get(aspect=theirs).value == 1
    # the campaign form offers the aspects of the researcher's studies' tasks: theirs only
    for who in ("outsider", "owner"):
        Study.objects.create(
            name=who, dataset=Dataset.objects.get(owner=cast[who]), owner=cast[who]
        )
    assert list(
        CampaignForm(user=cast["outsider"]).fields["aspects"].queryset.filter(code="WIT")
    ) == [theirs]
    client.force_login(cast["outsider"])
    page = client.get(
        reverse("studies:run-new", args=[Dataset.objects.get(owner=cast["outsider"]).pk])
    )
    assert (
        f'value="{theirs.pk}"'.encode() in page.content
        and f'value="{wit.pk}"'.encode() not in page.content
    )
    assert (
        CampaignForm(user=cast["admin"]).fields["aspects"].queryset.filter(code="WIT").count() == 2
    )


def test_one_import_may_create_at_most_the_configured_number_of_aspects(
    cast, write_jsonl, settings
):
    settings.CONCORDIA = {**settings.CONCORDIA, "IMPORT_MAX_NEW_ASPECTS": 3}
    human = {f"made_up_{i}": 3 for i in range(4)}
    before = row_counts()
    with pytest.raises(ImportValidationError, match="would create 4 new aspects; at most 3"):
        _import(write_jsonl, cast["owner"], records=[record(human=human)], create_aspects=True)
    assert row_counts() == before
    human.pop("made_up_3")
    _import(write_jsonl, cast["owner"], records=[record(human=human)], create_aspects=True)
    assert Aspect.objects.filter(owner=cast["owner"]).count() == 3


@pytest.mark.parametrize(("theirs", "ours_fit"), [((1, 5), True), ((0.2, 0.7), False)])
def test_an_aspect_created_by_a_simultaneous_import_is_reused_or_a_located_error(
    cast, write_jsonl, monkeypatch, theirs, ours_fit
):
    """Two uploads of one owner create the same new aspect: the second import's
    validation ran before the first one wrote, so its write meets the first's aspect."""
    from studies.services.imports import write as datasets

    validate = datasets.validate_file

    def then_another_import_writes(path, options):  # type: ignore[no-untyped-def]
        plan = validate(path, options)
        monkeypatch.setattr(datasets, "validate_file", validate)
        other = write_jsonl(
            [record("o1", f"s{v}", human={"wit": v}) for v in theirs], "other.jsonl"
        )
        import_file(
            other,
            ImportOptions(
                dataset="other",
                task="summarization",
                file_format="jsonl",
                file_name=other.name,
                owner=cast["owner"],
                create_aspects=True,
            ),
        )
        return plan

    monkeypatch.setattr(datasets, "validate_file", then_another_import_writes)
    before = row_counts()
    ours = [record("d1", "s1", human={"wit": 3}), record("d1", "s2", human={"wit": 4})]
    if ours_fit:  # theirs made WIT 1–5, which holds ours
        summary = _import(write_jsonl, cast["owner"], records=ours, create_aspects=True)
        wit = Aspect.objects.get(owner=cast["owner"], key="wit")
        assert summary.aspects_created == []
        values = Judgment.objects.filter(aspect=wit).values_list("value", flat=True)
        assert sorted(values) == [1, 3, 4, 5]
    else:  # theirs made WIT 0.2–0.7: ours do not fit, and ours write nothing
        with pytest.raises(
            ImportValidationError,
            match=r"field 'human\.wit': another import "
            r"created WIT at the same moment with the scale 0\.2–0\.7",
        ):
            _import(write_jsonl, cast["owner"], records=ours, create_aspects=True)
        after = row_counts()
        assert Aspect.objects.filter(owner=cast["owner"], key="wit").count() == 1
        assert Dataset.objects.filter(owner=cast["owner"], name="summeval").count() == 0
        assert after["Judgment"] == before["Judgment"] + 2  # theirs only


def test_two_file_names_that_would_make_one_aspect_are_refused(cast, write_jsonl):
    before = row_counts()
    with pytest.raises(ImportValidationError, match="would have the key 'wit_x'"):
        _import(
            write_jsonl,
            cast["owner"],
            records=[record(human={"wit.x": 2, "wit_x": 3})],
            create_aspects=True,
        )
    assert row_counts() == before


def test_a_researcher_may_not_take_a_shared_aspects_code(cast):
    from django.core.exceptions import ValidationError

    mine = Aspect(code="COH", name="My coherence", definition="d", owner=cast["owner"])
    with pytest.raises(ValidationError, match="shared aspect already uses this code"):
        mine.full_clean()


# --- stable keys ------------------------------------------------------------------------------


def _rename_in_admin(admin_client, aspect, name):  # type: ignore[no-untyped-def]
    change = reverse("admin:studies_aspect_change", args=[aspect.pk])
    form = admin_client.get(change).context["adminform"].form
    data = {k: v for k, v in form.initial.items() if v is not None and k != "tasks"}
    data.update(
        {
            "name": name,
            "tasks": [t.pk for t in aspect.tasks.all()],
            "anchors": "{}",
            "versions-TOTAL_FORMS": 0,
            "versions-INITIAL_FORMS": 0,
        }
    )
    response = admin_client.post(change, data)
    assert response.status_code == 302, response.context["adminform"].form.errors
    aspect.refresh_from_db()


def test_a_renamed_aspect_keeps_its_key_and_earlier_files_still_import_into_it(
    cast, write_jsonl, admin_client
):
    _import(
        write_jsonl, cast["owner"], records=[record(human={"wit_level": 2})], create_aspects=True
    )
    aspect = Aspect.objects.get(owner=cast["owner"])
    before_rename = "".join(export_dataset(Dataset.objects.get(), "jsonl"))
    assert aspect.key == "wit_level" and '"wit_level": 2.0' in before_rename
    _rename_in_admin(admin_client, aspect, "Humour")
    _rename_in_admin(admin_client, aspect, "Fun")
    assert (aspect.name, aspect.key, aspect.aliases) == (
        "Fun",
        "wit_level",
        ["Wit level", "Humour"],
    )
    assert "".join(export_dataset(Dataset.objects.get(), "jsonl")) == before_rename
    # the earlier export, and a file naming an earlier name, import into the same aspect
    path = write_jsonl([json.loads(line) for line in before_rename.splitlines()], name="old.jsonl")
    import_file(
        path,
        ImportOptions(
            dataset="summeval",
            task="summarization",
            file_format="jsonl",
            file_name="old.jsonl",
            owner=cast["owner"],
            create_aspects=True,
        ),
    )
    _import(
        write_jsonl, cast["owner"], records=[record("d9", human={"Humour": 3})], create_aspects=True
    )
    assert Aspect.objects.filter(owner=cast["owner"]).count() == 1
    assert set(Judgment.objects.values_list("aspect_id", flat=True)) == {aspect.pk}


def test_the_migration_stored_each_aspects_key_from_its_name():
    assert dict(Aspect.objects.filter(code__in=["COH", "FLU"]).values_list("code", "key")) == {
        "COH": "coherence",
        "FLU": "fluency",
    }


# --- evaluation steps -------------------------------------------------------------------------


def test_a_researchers_edited_steps_change_only_their_own_runs(cast, write_jsonl, client):
    _import(write_jsonl, cast["owner"])
    _import(write_jsonl, cast["outsider"])
    coh = Aspect.objects.get(code="COH").current_version()
    task = TaskKind.objects.get(code="summarization")
    shared = EvaluationSteps.objects.create(
        task=task, aspect_version=coh, version=1, text="1. Read.", origin="generated"
    )
    client.force_login(cast["owner"])
    url = reverse("studies:steps-detail", args=["summarization", "COH"])
    assert client.post(url, {"text": "1. Mine."}).status_code == 302
    assert EvaluationSteps.objects.get(text="1. Mine.").owner == cast["owner"]
    assert steps_service.current_steps(task, coh, cast["outsider"]) == shared
    assert steps_service.current_steps(task, coh) == shared
    client.force_login(cast["outsider"])
    assert b"1. Mine." not in client.get(url).content
    runs = {}
    for who in ("owner", "outsider"):
        dataset = Dataset.objects.get(owner=cast[who])
        request = RunRequest(metric="geval", aspect="COH", steps="auto")
        runs[who] = start_run(dataset, request, user=cast[who], enqueue=False)
    assert runs["owner"].config["steps"]["text"] == "1. Mine."
    assert (
        runs["outsider"].config["steps"]["text"] == "1. Read." and runs["outsider"].steps == shared
    )


# --- model allow-list ------------------------------------------------------------------------------


def test_the_run_form_accepts_only_installed_models_and_allowed_hub_ids_with_one_error(
    client, cast, write_jsonl, tmp_path, settings
):
    settings.CONCORDIA = {**settings.CONCORDIA, "MODEL_DIR": tmp_path / "models"}
    (tmp_path / "models" / "installed").mkdir(parents=True)
    (tmp_path / "models" / "installed" / "config.json").write_text("{}")
    (tmp_path / "exists").mkdir()
    _import(write_jsonl, cast["owner"])
    client.force_login(cast["owner"])
    url = reverse("studies:run-new", args=[Dataset.objects.get().pk])
    messages = []
    for name in (
        str(tmp_path / "exists"),
        str(tmp_path / "missing"),
        "/etc",
        "../models/installed",
        "org/not-allowed",
    ):
        response = client.post(
            url,
            {"metric": "rouge", "setting": "IST", "dimension": "src_hypo", "model": name, "k": 0},
        )
        assert response.status_code == 400
        text = response.content.decode()
        start = text.index("Unknown model")
        messages.append(text[start : text.index("hub id", start)].replace(name, "X"))
    assert len(set(messages)) == 1
    AllowedModel.objects.create(hub_id="org/allowed")
    check_model("org/allowed")
    check_model("installed")
    check_model("default")
    with pytest.raises(ModelNotAllowed):
        check_model(str(tmp_path / "exists"))
    check_model(str(tmp_path / "exists"), local_paths=True)  # the operator's shell


def test_steps_generation_from_a_web_request_needs_an_allowed_model(cast):
    coh = Aspect.objects.get(code="COH").current_version()
    with pytest.raises(ModelNotAllowed):
        steps_service.request_generation(
            TaskKind.objects.get(code="summarization"), coh, model="/tmp", user=cast["owner"]
        )


def test_a_new_researcher_sees_no_aspect_of_another(cast, write_jsonl):
    _import(write_jsonl, cast["owner"], records=[record(human={"wit": 2})], create_aspects=True)
    newcomer = UserFactory(username="newcomer", role="researcher")
    assert not CampaignForm(user=newcomer).fields["aspects"].queryset.filter(code="WIT").exists()
