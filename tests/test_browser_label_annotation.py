"""A binary aspect in a real Chromium: two annotators label a campaign with the keyboard
only (one going back to revise a label, the other at a phone's width, where the page
never scrolls sideways), the
researcher reads Cohen's κ on the campaign page, and the report card's label rows sort on
a click of the MCC / κ header, both ways (the researcher's pages at a phone's width too,
neither wider than the window)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from playwright.sync_api import Browser, Page, expect
from sklearn.metrics import cohen_kappa_score

from annotation.models import AnswerRevision
from annotation.services.agreement import compute_agreement
from studies.models import Dataset, Judgment
from studies.services.imports import ImportOptions, import_file
from tests.annotation.conftest import label_aspect, make_study, new_campaign
from tests.browser import log_in, ready
from tests.factories import UserFactory

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("defaults_restored"),
    pytest.mark.browser,
]
# a long word (a German label, say) must wrap inside its button on a phone
LABELS = ["Quellenwidersprüchlichkeitsfeststellungsverfahren", "consistent with the source"]
# [page width, window width, labels sticking out of their button or of the aspect]
NO_SIDEWAYS = """() => {
  const outside = Array.from(document.querySelectorAll('#annotate .label-choice')).filter((b) => {
    const box = b.getBoundingClientRect(), field = b.closest('fieldset').getBoundingClientRect();
    const text = b.querySelector('.num');
    return box.right > field.right || box.left < field.left || text.scrollWidth > text.clientWidth
      || text.getBoundingClientRect().right > box.right;
  });
  return [document.documentElement.scrollWidth, window.innerWidth, outside.length];
}"""


def _revise(page: Page, digit: str) -> int:
    """From an item, go back to the one answered before (``p``) and change its label to
    ``digit``; Save change (Enter) brings the item left back. The revised item."""
    left = page.locator("#annotate").get_attribute("data-item")
    page.keyboard.press("p")
    expect(page.locator("#revisit-note")).to_be_visible()
    revised = int(page.locator("#annotate").get_attribute("data-item") or 0)
    page.keyboard.press(digit)
    expect(page.locator("fieldset.aspect input:checked")).to_have_attribute("data-key", digit)
    page.keyboard.press("Enter")
    expect(page.locator("#annotate")).to_have_attribute("data-item", left or "")
    return revised


def _annotate(
    page: Page, base: str, campaign: int, keys: Any, phone: bool = False, revise: Any = None
) -> list[int]:
    """Start the campaign from the keyboard and label every item: ``keys(k, item)`` is the
    digit for the k-th item shown; ``revise`` (the k-th item, a digit): before answering
    it, change the answer to the one before. The items answered, in order."""
    page.goto(f"{base}/annotate/")
    page.focus(f"#start-{campaign}")
    page.keyboard.press("Enter")
    seen: list[int] = []
    while True:
        expect(page.locator("#annotate")).to_be_visible()
        ready(page)
        if page.locator("#all-done").count():
            return seen
        item = int(page.locator("#annotate").get_attribute("data-item") or 0)
        expect(page.locator("fieldset.aspect .label-choice")).to_have_count(2)
        expect(page.locator("fieldset.aspect .label-choice").first).to_contain_text(LABELS[0])
        if phone:
            width, window, outside = page.evaluate(NO_SIDEWAYS)
            assert width <= window and outside == 0, (width, window, outside)
        if revise is not None and len(seen) == revise[0]:
            assert _revise(page, revise[1]) == seen[-1]
            ready(page)
        digit = keys(len(seen), item)
        page.keyboard.press(digit)
        expect(page.locator("fieldset.aspect input:checked")).to_have_attribute("data-key", digit)
        page.keyboard.press("Enter")
        seen.append(item)
        expect(page.locator("#annotate")).not_to_have_attribute("data-item", str(item))


def _import_judged(owner: Any, tmp_path: Path) -> Dataset:
    """A binary aspect judged by three annotators on 60 outputs, and three judges of
    different quality as metric columns (no model)."""
    rng = np.random.default_rng(11)
    lines = []
    for d in range(20):
        for s in ("s1", "s2", "s3"):
            truth = int(rng.random() < 0.55)
            raters = {r: truth if rng.random() < 0.9 else 1 - truth for r in ("a1", "a2", "a3")}
            judges = {
                name: truth if rng.random() < right else 1 - truth
                for name, right in (("sharp", 0.95), ("fair", 0.75), ("coin", 0.5))
            }
            lines.append(
                {
                    "doc_id": f"d{d}",
                    "system_id": s,
                    "source": f"Source {d}.",
                    "output": f"Output of {s} for {d}.",
                    "annotators": {"faithful": raters},
                    "metrics": judges,
                }
            )
    path = tmp_path / "judged.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    options = ImportOptions(
        dataset="judged",
        task="summarization",
        file_format="jsonl",
        file_name=path.name,
        create_aspects=True,
        owner=owner,
    )
    import_file(path, options)  # type: ignore[arg-type]
    return Dataset.objects.get(name="judged")


def _primaries(page: Page) -> list[float]:
    cells = page.locator("#report-card-table tbody td.card-label-primary").all_inner_texts()
    return [float(re.match(r"-?[0-9.]+", text.strip()).group()) for text in cells]  # type: ignore[union-attr]


def test_two_annotators_label_with_the_keyboard_and_the_researcher_reads_kappa(
    live_server, page: Page, browser: Browser, cast, tmp_path
):
    passes = label_aspect("CONS", labels=LABELS, positive=LABELS[1])
    second = UserFactory(username="ann2", role="annotator")
    study = make_study(cast["owner"])
    campaign = new_campaign(
        study,
        cast["owner"],
        [cast["annotator"], second],
        aspect_codes=("CONS",),
        overlap=2,
        selection="random",
        sample_size=4,
    )
    base = live_server.url
    log_in(page, base, "annotator")
    first_keys = ["2", "1", "2", "1"]
    # before the third item, back to the second (p) to change its label to the second one
    shown = _annotate(page, base, campaign.pk, lambda k, item: first_keys[k], revise=(2, "2"))
    assert len(shown) == 4
    by_item = dict(zip(shown, ["2", "2", "2", "1"], strict=True))

    phone = browser.new_context(viewport={"width": 390, "height": 800})
    on_phone = phone.new_page()
    log_in(on_phone, base, "ann2")
    flipped = shown[0]  # the second annotator agrees but on the first one's first item
    _annotate(
        on_phone,
        base,
        campaign.pk,
        lambda k, item: (
            ("1" if by_item[item] == "2" else "2") if item == flipped else by_item[item]
        ),
        phone=True,
    )
    phone.close()

    items = dict(campaign.items.values_list("output_a_id", "pk"))
    stored = {
        (items[o], u): v
        for o, u, v in Judgment.objects.filter(aspect=passes).values_list(
            "output_id", "annotator_id", "value"
        )
    }
    one = [stored[(i, cast["annotator"].pk)] for i in shown]
    two = [stored[(i, second.pk)] for i in shown]
    assert one == [float(by_item[i]) - 1 for i in shown]  # key k: the label at position k-1
    revisions = AnswerRevision.objects.filter(
        assignment__item_id=shown[1], assignment__annotator=cast["annotator"]
    )
    assert list(revisions.values_list("value", flat=True)) == [0.0, 1.0]  # fail, then pass
    kappa = cohen_kappa_score(one, two)
    assert kappa == pytest.approx(0.5)
    assert compute_agreement(campaign)["aspects"][0]["kappa"]["value"] == pytest.approx(kappa)

    researcher = browser.new_context(viewport={"width": 390, "height": 844})  # a phone too
    reading = researcher.new_page()
    sideways = "[document.documentElement.scrollWidth, window.innerWidth]"
    log_in(reading, base, "owner")
    reading.goto(f"{base}/campaigns/{campaign.pk}/")
    row = reading.locator('#label-agreement-table tr[data-aspect="CONS"]')
    expect(row.locator(".kappa-name")).to_have_text("Cohen's κ")
    expect(row.locator(".kappa")).to_have_text(f"{kappa:.3f}")
    width, window = reading.evaluate(sideways)
    assert width <= window  # the wide tables scroll in their own box
    box = row.locator(".kappa").bounding_box()
    assert box is not None and box["x"] + box["width"] <= window  # κ in view as it opens

    dataset = _import_judged(cast["owner"], tmp_path)
    reading.goto(f"{base}/datasets/{dataset.pk}/report-card/")
    table = reading.locator("#report-card-table")
    expect(table.locator("tbody tr td.card-label-primary")).to_have_count(3)
    reading.click("#sort-label")
    expect(reading.locator("#sort-label")).to_contain_text("▾")
    assert "sort=label" in reading.url
    best_first = _primaries(reading)
    assert best_first == sorted(best_first, reverse=True) and len(set(best_first)) == 3
    reading.click("#sort-label")  # again: the other way
    expect(reading.locator("#sort-label")).to_contain_text("▴")
    assert _primaries(reading) == best_first[::-1]
    width, window = reading.evaluate(sideways)
    assert width <= window
    researcher.close()
