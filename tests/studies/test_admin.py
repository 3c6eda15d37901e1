"""The admin edits versioned aspects and templates and shows their history."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from studies.models import Aspect, PromptTemplate
from tests.factories import MetricRunFactory

pytestmark = pytest.mark.django_db


def aspect_form(aspect: Aspect, **changes: object) -> dict[str, object]:
    data: dict[str, object] = {
        "code": aspect.code,
        "name": aspect.name,
        "definition": aspect.definition,
        "scale_min": aspect.scale_min,
        "scale_max": aspect.scale_max,
        "anchors": json.dumps(aspect.anchors),
        "tasks": [t.pk for t in aspect.tasks.all()],
        "source": aspect.source,
        "versions-TOTAL_FORMS": 0,
        "versions-INITIAL_FORMS": 0,
    }
    data.update(changes)
    return data


def test_editing_a_definition_keeps_the_old_version_on_the_run_that_used_it(client, cast):
    aspect = Aspect.objects.get(code="COH")
    old_text = aspect.definition
    run = MetricRunFactory(label="gptscore-coh-ist", aspect_version=aspect.current_version())
    client.force_login(cast["admin"])
    url = reverse("admin:studies_aspect_change", args=[aspect.pk])
    response = client.post(url, aspect_form(aspect, definition="Does the text hang together?"))
    assert response.status_code == 302, response.content.decode()[:2000]

    aspect.refresh_from_db()
    assert (aspect.version, aspect.definition) == (2, "Does the text hang together?")
    run.refresh_from_db()
    assert (run.aspect_version.version, run.aspect_version.definition) == (1, old_text)
    assert aspect.current_version().created_by == cast["admin"]

    page = client.get(url).content.decode()
    assert old_text in page and "Does the text hang together?" in page
    assert "gptscore-coh-ist" in page  # the old version lists the run that used it


def test_saving_without_a_change_makes_no_new_version(client, cast):
    aspect = Aspect.objects.get(code="FLU")
    client.force_login(cast["admin"])
    client.post(reverse("admin:studies_aspect_change", args=[aspect.pk]), aspect_form(aspect))
    aspect.refresh_from_db()
    assert aspect.version == 1 and aspect.versions.count() == 1


def test_admin_rejects_an_unsafe_template(client, cast):
    template = PromptTemplate.objects.filter(
        kind="gptscore", aspect__code="COH", dimension="src_hypo"
    ).first()
    assert template is not None
    client.force_login(cast["admin"])
    url = reverse("admin:studies_prompttemplate_change", args=[template.pk])
    data = {
        "task": template.task_id,
        "aspect": template.aspect_id,
        "dimension": template.dimension,
        "kind": template.kind,
        "setting": template.setting,
        "variant": template.variant,
        "text": "Summarise {src.__class__}",
        "target": "{hypo}",
        "source": "",
        "notes": "",
        "versions-TOTAL_FORMS": 0,
        "versions-INITIAL_FORMS": 0,
    }
    response = client.post(url, data)
    assert response.status_code == 200
    assert "attribute or index access" in response.content.decode()
    template.refresh_from_db()
    assert template.version == 1


def test_annotator_cannot_open_the_admin(client, cast):
    client.force_login(cast["annotator"])
    assert client.get(reverse("admin:studies_aspect_changelist")).status_code == 302
