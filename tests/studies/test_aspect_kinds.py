"""Aspect kinds: scale (numbers), binary (two labels, one positive), categorical (a list
of labels). Versioned with their labels; a label judgment stores the label's position;
an aspect with judgments keeps its kind and the places of the labels they use, refused
with a reason by the admin, the API and the form; the migration makes every existing
aspect a scale."""

from __future__ import annotations

import json

import pytest
from django.core.exceptions import ValidationError
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.urls import reverse
from rest_framework.test import APIClient

from studies.aspect_forms import AspectForm
from studies.models import Aspect, Judgment
from tests.factories import OutputFactory

pytestmark = pytest.mark.django_db


def labelled(code: str = "PASS", **fields: object) -> Aspect:
    values: dict[str, object] = {
        "code": code,
        "name": code.title(),
        "definition": "Does it pass?",
        "kind": "binary",
        "labels": ["fail", "pass"],
        "positive": "pass",
    }
    values.update(fields)
    aspect = Aspect(**values)
    aspect.full_clean()
    aspect.save()
    return aspect


def judge(aspect: Aspect, *values: float) -> None:
    for k, value in enumerate(values):
        Judgment.objects.create(
            output=OutputFactory(), aspect=aspect, value=value, import_file=f"f{k}.jsonl"
        )


def test_a_label_aspect_takes_its_scale_from_its_labels_and_versions_them():
    aspect = labelled()
    assert (aspect.scale_min, aspect.scale_max, aspect.version) == (0.0, 1.0, 1)
    assert aspect.label_codes() == {"fail": 0, "pass": 1} and aspect.label_of(1.0) == "pass"
    aspect.kind, aspect.labels, aspect.positive = "categorical", ["none", "minor", "major"], ""
    aspect.ordered = True
    aspect.full_clean()
    aspect.save()
    first, second = aspect.versions.order_by("version")
    assert (first.kind, first.labels, first.positive) == ("binary", ["fail", "pass"], "pass")
    assert (second.kind, second.labels, second.ordered) == ("categorical", aspect.labels, True)
    assert (aspect.scale_min, aspect.scale_max) == (0.0, 2.0)


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        ({"labels": ["fail"]}, "labels", "exactly two labels"),
        ({"positive": "maybe"}, "positive", "Mark one of 'fail' and 'pass'"),
        ({"labels": ["ok", " ok"]}, "labels", "listed twice"),
        ({"kind": "categorical", "labels": ["a"], "positive": ""}, "labels", "2 to 50"),
        ({"kind": "categorical", "labels": ["a", "b"]}, "positive", "Only a binary"),
        ({"kind": "scale"}, "labels", "no labels"),
        ({"kind": "ordinal"}, "kind", "Unknown kind"),
    ],
)
def test_a_label_aspect_is_checked_with_a_reason(fields, field, message):
    with pytest.raises(ValidationError) as info:
        labelled(**fields)
    assert message in " ".join(info.value.message_dict[field])


def test_a_judged_aspect_keeps_its_kind_and_its_used_labels_in_place():
    aspect = labelled(kind="categorical", labels=["none", "minor", "major"], positive="")
    judge(aspect, 0.0, 1.0)  # none and minor are used; major is not
    aspect.labels = ["none", "minor", "critical", "cosmetic"]  # an unused one changed, one more
    aspect.full_clean()
    aspect.save()
    aspect.labels = ["minor", "none", "critical", "cosmetic"]
    with pytest.raises(ValidationError) as info:
        aspect.full_clean()
    assert "'none', 'minor'" in info.value.message_dict["labels"][0]
    aspect.labels = ["none"] + ["x"] * 0 + ["critical"]
    with pytest.raises(ValidationError, match="'minor'"):
        aspect.full_clean()
    aspect.refresh_from_db()
    aspect.kind, aspect.labels = "scale", []
    with pytest.raises(ValidationError) as info:
        aspect.full_clean()
    assert "has 2 judgments as a categorical aspect" in info.value.message_dict["kind"][0]


def test_an_unjudged_aspect_may_change_its_kind():
    aspect = Aspect.objects.get(code="COH")
    assert aspect.kind == "scale" and not aspect.judgments.exists()
    aspect.kind, aspect.labels, aspect.positive = "binary", ["no", "yes"], "yes"
    aspect.full_clean()


def admin_form(aspect: Aspect, **changes: object) -> dict[str, object]:
    data: dict[str, object] = {
        "code": aspect.code,
        "name": aspect.name,
        "definition": aspect.definition,
        "kind": aspect.kind,
        "scale_min": aspect.scale_min,
        "scale_max": aspect.scale_max,
        "anchors": json.dumps(aspect.anchors),
        "labels": "\n".join(aspect.labels),
        "positive": aspect.positive,
        "tasks": [t.pk for t in aspect.tasks.all()],
        "source": aspect.source,
        "versions-TOTAL_FORMS": 0,
        "versions-INITIAL_FORMS": 0,
    }
    data.update(changes)
    return data


def test_the_admin_refuses_to_change_a_judged_aspects_kind(client, cast):
    aspect = Aspect.objects.get(code="COH")
    judge(aspect, 3.0)
    client.force_login(cast["admin"])
    url = reverse("admin:studies_aspect_change", args=[aspect.pk])
    refused = client.post(
        url, admin_form(aspect, kind="binary", labels="bad\ngood", positive="good")
    )
    assert refused.status_code == 200 and "cannot change to binary" in refused.content.decode()
    aspect.refresh_from_db()
    assert (aspect.kind, aspect.version) == ("scale", 1)
    # an unjudged one changes, its labels typed one per line
    free = Aspect.objects.get(code="FLU")
    saved = client.post(
        reverse("admin:studies_aspect_change", args=[free.pk]),
        admin_form(free, kind="binary", labels="bad\n\ngood\n", positive="good"),
    )
    assert saved.status_code == 302, saved.content.decode()[:3000]
    free.refresh_from_db()
    assert (free.kind, free.labels, free.positive, free.version) == (
        "binary",
        ["bad", "good"],
        "good",
        2,
    )


def test_the_api_refuses_to_change_a_judged_aspects_kind_or_reorder_its_labels(cast):
    api = APIClient()
    api.force_authenticate(cast["admin"])
    aspect = labelled()
    judge(aspect, 1.0)
    kind = api.patch(f"/api/aspects/{aspect.pk}/", {"kind": "scale", "labels": []}, format="json")
    assert kind.status_code == 400 and "kind cannot change" in json.dumps(kind.json())
    order = api.patch(f"/api/aspects/{aspect.pk}/", {"labels": ["pass", "fail"]}, format="json")
    assert order.status_code == 400 and "'pass'" in json.dumps(order.json())
    aspect.refresh_from_db()
    assert (aspect.labels, aspect.version) == (["fail", "pass"], 1)
    created = api.post(
        "/api/aspects/",
        {
            "code": "HALL",
            "name": "Hallucination",
            "definition": "Which kind of hallucination?",
            "kind": "categorical",
            "labels": ["none", "intrinsic", "extrinsic"],
        },
        format="json",
    )
    assert created.status_code == 201, created.content
    body = created.json()
    assert (body["kind"], body["labels"], body["scale_min"], body["scale_max"]) == (
        "categorical",
        ["none", "intrinsic", "extrinsic"],
        0.0,
        2.0,
    )
    assert body["versions"][0]["labels"] == ["none", "intrinsic", "extrinsic"]


def test_the_form_refuses_to_change_a_judged_aspects_kind():
    aspect = labelled()
    judge(aspect, 0.0)
    data = {
        "code": aspect.code,
        "name": aspect.name,
        "definition": aspect.definition,
        "kind": "categorical",
        "scale_min": 0,
        "scale_max": 1,
        "anchors": "{}",
        "labels": "fail\npass\nunsure",
        "positive": "",
        "source": "",
    }
    form = AspectForm(data, instance=aspect)
    assert not form.is_valid()
    assert "cannot change to categorical" in form.errors["kind"][0]
    appended = AspectForm({**data, "kind": "binary", "labels": "fail\npass", "positive": "fail"})
    appended.instance = Aspect.objects.get(pk=aspect.pk)
    assert appended.is_valid(), appended.errors  # the positive label may move


def test_the_migration_makes_every_existing_aspect_a_scale(defaults_restored):
    executor = MigrationExecutor(connection)
    before = [("studies", "0015_worker_nodes")]
    executor.migrate(before)
    old = executor.loader.project_state(before).apps.get_model("studies", "Aspect")
    n = old.objects.count()
    assert n > 0 and not any(f.name == "kind" for f in old._meta.get_fields())
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())
    assert Aspect.objects.count() == n
    found = list(Aspect.objects.values_list("kind", "labels", "positive"))
    assert found == [("scale", [], "")] * n
