"""A pairwise judge run's pairs page: the source control shows the human preferences the
agreement is computed from, and too few comparisons say so instead of "nan [nan, nan]"
or zero-width intervals."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from studies.models import Output
from tests.factories import pairwise_judge_run
from tests.studies.report_card_data import add_pairwise_run

pytestmark = pytest.mark.django_db


def _selected(page: str) -> list[str]:
    """The values of the selected options of the source control."""
    control = re.search(r'<select name="against".*?</select>', page, re.S)
    assert control is not None
    return re.findall(r'<option value="([^"]*)" selected>', control.group(0))


def test_the_source_control_shows_the_source_the_agreement_is_computed_from(client, cast, panel):  # type: ignore[no-untyped-def]
    run = add_pairwise_run(panel)
    client.force_login(cast["owner"])
    url = reverse("studies:run-pairwise", args=[run.pk])
    first = client.get(url).content.decode()  # nothing chosen: every Likert judgment
    assert _selected(first) == ["likert"] and 'id="pairwise-agreement"' in first
    none = client.get(url, {"against": ""}).content.decode()
    assert _selected(none) == [""] and 'id="pairwise-agreement"' not in none
    wrong = client.get(url, {"against": "nonsense"}).content.decode()
    assert _selected(wrong) == [] and 'id="pairwise-agreement"' not in wrong
    assert "Human preferences: Select a valid choice" in wrong
    fragment = client.get(url, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="pairwise-report")
    assert _selected(fragment.content.decode()) == ["likert"]


def test_too_few_documents_say_so_instead_of_zero_width_intervals(client, cast, panel):  # type: ignore[no-untyped-def]
    run = add_pairwise_run(panel)  # 8 documents
    client.force_login(cast["owner"])
    page = client.get(reverse("studies:run-pairwise", args=[run.pk])).content.decode()
    assert "8 documents: too few to resample for intervals (at least 10)" in page
    systems = re.search(r'<table class="grid" id="pairwise-systems">.*?</table>', page, re.S)
    assert systems is not None
    assert not re.search(r"\[(-?[\d.]+), \1\]", systems.group(0))  # no [x, x]
    assert not re.search(r"\bnan\b", page)


def test_a_system_that_never_loses_is_named_instead_of_nan(client, cast, panel):  # type: ignore[no-untyped-def]
    outputs = Output.objects.filter(document__dataset=panel.dataset).order_by("document", "pk")
    by_doc: dict[int, list[Output]] = {}
    for output in outputs:
        by_doc.setdefault(output.document_id, []).append(output)
    # in each document: the first system beats the second outright, in both orders
    pairs = [(o[0].pk, o[1].pk, [1.0, 0.0], [0.0, 1.0]) for o in by_doc.values()]
    run = pairwise_judge_run(panel.dataset, "COH", pairs)
    client.force_login(cast["owner"])
    page = client.get(reverse("studies:run-pairwise", args=[run.pk])).content.decode()
    assert (
        "Too few comparisons for Bradley–Terry strengths (never lost: sys0; never won: sys1)"
        in page
    )
    assert not re.search(r"\bnan\b", page)
