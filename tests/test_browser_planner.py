"""The planner keeps every choice (issue: it dropped a choice made while the previous one
was loading, as each choice reloaded the whole page, form included): a choice asks for
the plan alone, the form stays, the latest request wins and the URL follows."""

from __future__ import annotations

import contextlib
import json

import pytest
from playwright.sync_api import Browser, Error, Route, expect

from studies.models import Aspect, Dataset, MetricRun
from tests.browser import Watched
from tests.conftest import record
from tests.factories import import_jsonl

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("defaults_restored"),  # tasks and aspects, after a flush
    pytest.mark.browser,
]


def test_a_choice_made_while_the_plan_loads_is_kept(live_server, browser: Browser, cast, tmp_path):
    lines = []
    for d in range(6):
        for s in range(3):
            fields = record(f"d{d}", f"s{s}", output=f"Output {d} {s}.")
            fields["human"] = {"coherence": 1 + s + d % 2}
            fields["metrics"] = {"m1": float(s + d), "m2": float(d - s)}
            lines.append(json.dumps(fields))
    path = tmp_path / "plan.jsonl"
    path.write_text("\n".join(lines) + "\n")
    import_jsonl(path, "plan", cast["owner"])
    dataset = Dataset.objects.get(name="plan")
    m1, m2 = MetricRun.objects.filter(dataset=dataset).order_by("label")
    coh = Aspect.objects.get(code="COH")

    researcher = Watched(browser, live_server.url)
    researcher.log_in("owner")
    page = researcher.page
    researcher.open(f"/datasets/{dataset.pk}/planner/")
    page.evaluate("document.getElementById('planner-form').dataset.mark = 'same form'")

    # No plan is answered until the last choice is made, as on a busy server: each choice
    # is made while the plans asked for before it are still loading.
    held: list[Route] = []
    released = False

    def busy(route: Route) -> None:
        if released:
            route.continue_()
        else:
            held.append(route)

    page.route("**/planner/?*", busy)
    page.select_option("#planner-aspect", str(coh.pk))
    page.select_option("#planner-a", str(m1.pk))  # while the first is loading
    page.select_option("#planner-b", str(m2.pk))
    assert held, "no plan was asked for while the choices were made"
    released = True
    for route in held:
        with contextlib.suppress(Error):  # a request htmx has since aborted
            route.continue_()
    page.wait_for_url(f"**b={m2.pk}**")
    expect(page.locator("#planner")).not_to_contain_text("Choose an aspect", timeout=15_000)
    assert page.evaluate("document.getElementById('planner-form').dataset.mark") == "same form"
    assert page.input_value("#planner-aspect") == str(coh.pk)
    assert page.input_value("#planner-a") == str(m1.pk)
    assert page.input_value("#planner-b") == str(m2.pk)
    assert f"aspect={coh.pk}" in page.url and f"a={m1.pk}" in page.url
    researcher.collect()
    # a plan's poll still in flight when a new choice replaces it is aborted, and htmx says
    # so on the console: expected here, where every answer is slowed down
    aborted = ("console: htmx:sendAbort", "console: htmx:afterRequest")
    problems = [p for p in researcher.problems if not p.startswith(aborted)]
    assert problems == [], problems
