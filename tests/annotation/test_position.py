"""Position bias of a pairwise campaign from its stored answers and sides."""

from __future__ import annotations

from itertools import combinations

import pytest
from django.urls import reverse
from scipy import stats

from annotation.models import PairwiseJudgment
from annotation.services import answers, assignment
from annotation.services.position import position_report
from studies.models import Aspect, Output
from tests.annotation.conftest import HTMX

pytestmark = pytest.mark.django_db


def quality(output: Output) -> int:
    return (int(output.document.doc_key[1:]) * 3 + int(output.system_id[1:])) % 5


def answer_all(campaign, user, decide) -> None:  # type: ignore[no-untyped-def]
    """``decide(lease)`` gives the side (left, right or tie) ``user`` answers."""
    coh = Aspect.objects.get(code="COH")
    while (lease := assignment.claim_next(campaign, user)) is not None:
        answers.submit(lease.pk, user, {coh.pk: decide(lease)})


def by_content(lease) -> str:  # type: ignore[no-untyped-def]
    a, b = quality(lease.item.output_a), quality(lease.item.output_b)
    if a == b:
        return "tie"
    a_side, b_side = ("left", "right") if lease.left_is_a else ("right", "left")
    return a_side if a > b else b_side


@pytest.fixture
def answered(make_campaign, annotators):  # type: ignore[no-untyped-def]
    """12 pairs, each seen by three annotators: one always picks the left side, two judge
    the content."""
    campaign = make_campaign(mode="pairwise", overlap=3, aspect_codes=("COH",))
    answer_all(campaign, annotators[0], lambda lease: "left")
    answer_all(campaign, annotators[1], by_content)
    answer_all(campaign, annotators[2], by_content)
    return campaign


def test_an_annotator_who_always_picks_the_left_side_is_detected(answered):
    (coh,) = position_report(answered)
    rows = {row["user"]: row for row in coh["annotators"]}
    biased = rows["annotator"]
    assert (biased["n_left"], biased["n_right"], biased["share_left"]) == (12, 0, 1.0)
    assert biased["p_value"] < 0.01 and biased["biased"]
    rows_db = PairwiseJudgment.objects.filter(item__campaign=answered).select_related("item")
    for user in ("ann2", "ann3"):  # the content judges: their sides as stored, tested by hand
        mine = [j for j in rows_db if j.annotator.username == user and j.choice != "tie"]
        left = sum((j.choice == "a") == (j.left_output_id == j.item.output_a_id) for j in mine)
        assert (rows[user]["n_left"], rows[user]["n_right"]) == (left, len(mine) - left)
        assert rows[user]["p_value"] == pytest.approx(stats.binomtest(left, len(mine)).pvalue)
        assert rows[user]["n_ties"] == 12 - len(mine)
    overall = coh["overall"]
    assert overall["n_left"] + overall["n_right"] + overall["n_ties"] == 36


def test_the_flip_rate_counts_pairs_of_answers_seen_in_opposite_orders(answered):
    (coh,) = position_report(answered)
    flips = pairs = units = same = same_disagree = 0
    by_item: dict[int, list[tuple[bool, str]]] = {}
    for j in PairwiseJudgment.objects.filter(item__campaign=answered).select_related("item"):
        by_item.setdefault(j.item_id, []).append((j.left_output_id == j.item.output_a_id, j.choice))
    for seen in by_item.values():
        units += len({a_left for a_left, _ in seen}) == 2
        for (left1, c1), (left2, c2) in combinations(seen, 2):
            if "tie" in (c1, c2):
                continue
            if left1 != left2:
                pairs, flips = pairs + 1, flips + (c1 != c2)
            else:
                same, same_disagree = same + 1, same_disagree + (c1 != c2)
    got = coh["flips"]
    assert (got["n_units"], got["n_pairs"], got["n_flips"]) == (units, pairs, flips)
    assert (got["n_same_order_pairs"], got["n_same_order_disagreements"]) == (same, same_disagree)
    assert got["rate"] == pytest.approx(flips / pairs) and pairs > 0


def test_the_campaign_page_shows_position_bias_for_pairwise_campaigns(client, answered, cast):
    client.force_login(cast["owner"])
    partial = client.get(
        reverse("annotation:campaign-detail", args=[answered.pk]),
        HTTP_HX_TARGET="agreement",
        **HTMX,
    ).content.decode()
    assert 'id="position-table"' in partial and 'id="flip-table"' in partial
    assert '<tr data-aspect="COH" data-who="annotator" class="biased">' in partial
    assert 'data-who="all annotators"' in partial
    assert 'id="competence-table"' in partial  # MACE on A / tie / B too
