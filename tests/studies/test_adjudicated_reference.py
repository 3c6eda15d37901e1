"""Adjudicated labels as gold (issue 40, item 4): the report card compares the judges
with the adjudicated value where an output has one (``reference=adjudicated``), each
reference cached apart, and a tuning learns from them (``gold=adjudicated``) on tune/dev
documents only, a test document's never served."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest
from rest_framework.test import APIClient
from scipy.stats import spearmanr

from studies.api.serializers.tuning import TuneRequestSerializer
from studies.models import Aspect, Judgment, MetricRun, Output
from studies.services import adjudication
from studies.services.analysis.frames import AspectInfo
from studies.services.analysis.report_card import CardParams
from studies.services.analysis.report_card.reference import reference_humans, with_reference
from studies.services.tuning.labels import HeldOutLabel, TuneLabels
from studies.services.tuning.registry import tuner
from studies.services.tuning.tune import tune_judge
from tests.factories import adjudicated_split, review_study

pytestmark = pytest.mark.django_db


def _means(dataset_pk: int) -> dict[int, float]:
    """Each judged output's mean COH value, read from the judgments themselves."""
    values: dict[int, list[float]] = defaultdict(list)
    rows = Judgment.objects.filter(aspect__code="COH", output__document__dataset=dataset_pk)
    for pk, value in rows.values_list("output_id", "value"):
        values[pk].append(value)
    return {pk: sum(v) / len(v) for pk, v in values.items()}


def _dataset_spearman(run: MetricRun, reference: dict[int, float]) -> float:
    judge = dict(run.scores.values_list("output_id", "value"))
    ids = sorted(reference)
    return float(spearmanr([judge[pk] for pk in ids], [reference[pk] for pk in ids]).statistic)


def _card(api: APIClient, study_pk: int, **query: str) -> dict:  # type: ignore[type-arg]
    response = api.get(f"/api/studies/{study_pk}/report-card/", {"level": "dataset", **query})
    assert response.status_code == 200, response.content
    return response.json()  # type: ignore[no-any-return]


def _correlation(card: dict) -> float:  # type: ignore[type-arg]
    (row,) = [r for r in card["rows"] if r["aspect"]["code"] == "COH"]
    return float(row["correlation"]["value"])


def test_the_card_compares_the_judge_with_the_adjudicated_values_where_there_are_some(cast):
    study, run, ids = review_study(cast["owner"])
    coh = Aspect.objects.get(code="COH")
    # d1/a: the humans 1 and 5 (mean 3), adjudicated 5; d0/b: the humans 2 and 2, adjudicated 4
    adjudication.adjudicate(study, coh, ids[("d1", "a")], "5", cast["owner"], run)
    adjudication.adjudicate(study, coh, ids[("d0", "b")], "4", cast["owner"], run)
    api = APIClient()
    api.force_authenticate(cast["owner"])
    humans = _card(api, study.pk)
    adjudicated = _card(api, study.pk, reference="adjudicated")
    means = _means(study.dataset_id)
    gold = {**means, ids[("d1", "a")]: 5.0, ids[("d0", "b")]: 4.0}
    assert _correlation(humans) == pytest.approx(_dataset_spearman(run, means), abs=1e-9)
    assert _correlation(adjudicated) == pytest.approx(_dataset_spearman(run, gold), abs=1e-9)
    assert abs(_correlation(adjudicated) - _correlation(humans)) > 0.05  # they differ here
    assert humans["reference"] == {"reference": "humans", "study": None, "aspects": {}}
    assert adjudicated["reference"] == {
        "reference": "adjudicated",
        "study": study.pk,
        "aspects": {"COH": {"adjudicated": 2, "outputs": 10}},
    }
    # the judgments are as they were: the humans' card asked again is the same
    assert _correlation(_card(api, study.pk)) == _correlation(humans)


def test_each_reference_and_each_set_of_adjudications_is_a_card_of_its_own(cast):
    study, run, ids = review_study(cast["owner"])
    coh = Aspect.objects.get(code="COH")
    adjudication.adjudicate(study, coh, ids[("d1", "a")], "5", cast["owner"], run)
    dataset = study.dataset
    humans = with_reference(CardParams(), dataset, study)
    first = with_reference(CardParams(reference="adjudicated"), dataset, study)
    assert len({humans.key(dataset), first.key(dataset)}) == 2
    api = APIClient()
    api.force_authenticate(cast["owner"])
    before = _card(api, study.pk, reference="adjudicated")
    adjudication.adjudicate(study, coh, ids[("d0", "b")], "4", cast["owner"], run)
    second = with_reference(CardParams(reference="adjudicated"), dataset, study)
    assert second.key(dataset) != first.key(dataset)  # a new adjudication: a new card
    after = _card(api, study.pk, reference="adjudicated")
    assert after["reference"]["aspects"]["COH"]["adjudicated"] == 2
    assert _correlation(after) != _correlation(before)
    # the dataset card reads every study's adjudications: here the same ones
    whole = api.get(
        f"/api/datasets/{dataset.pk}/report-card/", {"level": "dataset", "reference": "adjudicated"}
    ).json()
    assert whole["reference"]["study"] is None and _correlation(whole) == _correlation(after)


def test_the_api_refuses_a_reference_it_does_not_know(cast):
    study, _, _ = review_study(cast["owner"])
    api = APIClient()
    api.force_authenticate(cast["owner"])
    for url in (
        f"/api/studies/{study.pk}/report-card/",
        f"/api/datasets/{study.dataset_id}/report-card/",
    ):
        refused = api.get(url, {"reference": "annotators"})
        assert refused.status_code == 400 and "reference" in refused.json()["errors"]
    schema = api.get("/api/schema/", {"format": "json"}).json()
    parameters = schema["paths"]["/api/studies/{id}/report-card/"]["get"]["parameters"]
    (reference,) = [p for p in parameters if p["name"] == "reference"]
    assert reference["schema"]["enum"] == ["humans", "adjudicated"]
    assert reference["schema"].get("default") == "humans"


def test_the_page_says_which_reference_it_used_and_how_many_outputs_are_adjudicated(client, cast):
    study, run, ids = review_study(cast["owner"])
    coh = Aspect.objects.get(code="COH")
    adjudication.adjudicate(study, coh, ids[("d1", "a")], "5", cast["owner"], run)
    client.force_login(cast["owner"])
    url = f"/studies/{study.pk}/report-card/"
    plain = client.get(url).content.decode()
    assert 'data-reference="humans"' in plain and 'id="card-reference"' in plain
    page = client.get(url, {"reference": "adjudicated"}).content.decode()
    assert 'data-reference="adjudicated"' in page
    assert '<option value="adjudicated" selected>' in page
    assert "<strong>COH</strong> 1 of 10 outputs adjudicated" in page
    export = client.get(
        f"/datasets/{study.dataset_id}/report-card/export.json",
        {"reference": "adjudicated", "reference_study": study.pk},
    )
    assert export.status_code == 200 and export.json()["reference"]["study"] == study.pk


def test_a_label_judge_reads_each_answer_on_an_adjudicated_output_as_the_adjudicated_label():
    frame_ids = np.array([10, 11, 12])
    humans = np.array([[0.0, 1.0, np.nan], [1.0, 1.0, 0.0], [np.nan, 0.0, 0.0]])
    aspect = AspectInfo(pk=7, code="FAITH", name="Faithful", kind="binary", labels=("no", "yes"))

    class Frame:
        output_ids = frame_ids

    read = reference_humans(humans, Frame, aspect, {(10, 7): 1.0, (12, 8): 1.0})  # type: ignore[arg-type]
    expected = np.array([[1.0, 1.0, np.nan], [1.0, 1.0, 0.0], [np.nan, 0.0, 0.0]])
    np.testing.assert_array_equal(read, expected)  # another aspect's adjudication: not read
    assert np.isnan(humans[2, 0]) and humans[0, 0] == 0.0  # the answers themselves unchanged
    assert reference_humans(humans, Frame, aspect, {}) is humans  # type: ignore[arg-type]


def test_a_tuning_on_adjudicated_gold_learns_from_them_and_never_from_a_test_document(cast):
    _, run, _, coh, split, _, tuned, held = adjudicated_split(cast["owner"])
    labels = TuneLabels(split, coh, gold="adjudicated")
    tune_ids = labels.outputs("tune")
    served = labels.gold(tune_ids)
    assert served[tuned] == 1.0 and held not in served
    assert {pk: v for pk, v in served.items() if pk != tuned} == {
        pk: v for pk, v in labels.human(tune_ids).items() if pk != tuned
    }
    with pytest.raises(HeldOutLabel, match="held out"):
        labels.gold([held])
    with pytest.raises(ValueError, match="gold must be one of"):
        TuneLabels(split, coh, gold="judge")
    # the calibration tuner through the one path: it records its gold, and the test Δ
    # is measured as before (against the humans' values)
    made = tune_judge(run, coh, "calibration", options={"gold": "adjudicated"}, resamples=20)
    record = made.run.config["tuning"]
    assert record["options"] == {"method": "auto", "gold": "adjudicated"}
    assert record["gold_labels"] == {"source": "adjudicated", "adjudicated_outputs": 1}
    plain = tune_judge(run, coh, "calibration", resamples=20)
    assert plain.run.config["tuning"]["gold_labels"] == {
        "source": "humans",
        "adjudicated_outputs": 0,
    }
    assert plain.delta.start == made.delta.start  # the same humans on test


def test_every_tuner_declares_gold_once_and_the_request_refuses_another_value():
    for name in ("calibration", "few-shot", "instructions"):
        gold = [o for o in tuner(name).options if o.name == "gold"]
        assert len(gold) == 1 and gold[0].choices == ("humans", "adjudicated")
    assert tuner("calibration").resolve({})["gold"] == "humans"
    with pytest.raises(ValueError, match="--gold must be one of humans, adjudicated"):
        tuner("calibration").resolve({"gold": "judge"})
    request = TuneRequestSerializer(data={"aspect": "COH", "tuner": "calibration", "gold": "x"})
    assert not request.is_valid() and "gold" in request.errors
    ok = TuneRequestSerializer(data={"aspect": "COH", "tuner": "few-shot", "gold": "adjudicated"})
    assert ok.is_valid(), ok.errors
    assert ok.options() == {"gold": "adjudicated"}
    assert Output.objects.count() == 0  # nothing was written by checking a request
