"""The few-shot tuner with a tiny random G-Eval judge: no test document's label reaches
the prompt (nor changes anything the tuner does), the same seed gives the same run, and
the printed Δ is of the test documents only."""

from __future__ import annotations

import re
from io import StringIO

import numpy as np
import pytest
from django.core.management import call_command

from scoring.lm.hf import HFLanguageModel
from scoring.metrics.geval import EXAMPLE_HEADER
from studies.models import Aspect, Judgment, MetricRun, Output, SplitDocument
from studies.services.runs import RunRequest
from studies.services.tuning import few_shot
from studies.services.tuning.derived import run_scores
from studies.services.tuning.few_shot import embed
from studies.services.tuning.labels import held_out_labels
from studies.services.tuning.primary import statistic
from studies.services.tuning.splits import make_split
from studies.services.tuning.tune import tune_judge
from tests.factories import TUNING_DOCS, TUNING_SYSTEMS, finished_run
from tests.tiny_models import tiny_bert

pytestmark = pytest.mark.django_db
N_DOCS, N_SYSTEMS = TUNING_DOCS, TUNING_SYSTEMS


@pytest.fixture(scope="module")
def tiny_encoder(tmp_path_factory):  # type: ignore[no-untyped-def]
    return tiny_bert(tmp_path_factory.mktemp("tiny-bert"))


def watched(prompts: list[str]):  # type: ignore[no-untyped-def]
    """A model factory whose model records every prompt it rates."""

    class Watched(HFLanguageModel):
        def rating_distributions(self, requests):  # type: ignore[no-untyped-def]
            prompts.extend(r.prompt for r in requests)
            return super().rating_distributions(requests)

    return lambda run: Watched(run.config["model_location"])


def shown_outputs(prompt: str) -> list[str]:
    """The output texts of the rated examples in a prompt."""
    header = re.escape(EXAMPLE_HEADER.split("(")[0])
    blocks = re.split(header + r"\(\d+\):", prompt)[1:]
    return [re.search(r"Summary:\n\n(.*?)\n\n- ", b, re.S).group(1) for b in blocks]  # type: ignore[union-attr]


def parts_of_texts(split) -> dict[str, str]:  # type: ignore[no-untyped-def]
    part = dict(SplitDocument.objects.filter(split=split).values_list("document_id", "part"))
    return {
        o.text: part[o.document_id]
        for o in Output.objects.filter(document__dataset_id=split.study.dataset_id)
    }


def test_no_test_documents_label_reaches_the_prompt_or_changes_the_tuning(
    tuning_judged, monkeypatch, tmp_path
):
    # no encoder installed (whatever this machine has): auto tries random and worst only
    monkeypatch.setattr(few_shot, "find_default_encoder", lambda: None)
    monkeypatch.setattr(few_shot, "default_encoder_path", lambda: tmp_path / "no-encoder")
    study, start = tuning_judged
    split = make_split(study, dev=0.25, test=0.25, seed=3)
    aspect = Aspect.objects.get(code="COH")
    prompts: list[str] = []
    options = {"k": "1,2", "selection": "auto"}
    reports: list[tuple[int, int]] = []
    first = tune_judge(
        start,
        aspect,
        "few-shot",
        options=options,
        seed=4,
        resamples=50,
        model_factory=watched(prompts),
        report=lambda done, total: reports.append((done, total)),
    ).run
    tuning = first.config["tuning"]
    # progress: each candidate's dev outputs, then every output, rated
    total = 4 * tuning["dev"]["outputs"] + start.scores.count()
    assert {t for _, t in reports} == {total} and reports[-1] == (total, total)
    assert [d for d, _ in reports] == sorted(d for d, _ in reports)
    assert tuning["tuner"] == "few-shot" and tuning["seed"] == 4
    assert tuning["dev"]["source"] == "dev" and tuning["dev"]["documents"] == 3
    assert {c["selection"] for c in tuning["candidates"]} == {"random", "worst"}  # no encoder
    assert len(tuning["candidates"]) == 4 and "no encoder" in tuning["notes"][0]
    assert tuning["k"] == len(tuning["example_outputs"]) and tuning["selection"] in (
        "random",
        "worst",
    )
    part = parts_of_texts(split)
    example_parts = set(
        SplitDocument.objects.filter(
            split=split, document__outputs__pk__in=tuning["example_outputs"]
        ).values_list("part", flat=True)
    )
    assert example_parts == {"tune"}
    shown = [text for prompt in prompts for text in shown_outputs(prompt)]
    assert shown and {part[text] for text in shown} == {"tune"}
    assert (
        len(prompts)
        == tuning["judge_requests"]
        == 4 * tuning["dev"]["outputs"] + N_DOCS * N_SYSTEMS
    )
    # the test documents' labels turned round: the tuner does exactly the same
    test_docs = SplitDocument.objects.filter(split=split, part="test").values("document_id")
    for judgment in Judgment.objects.filter(aspect=aspect, output__document_id__in=test_docs):
        judgment.value = 6 - judgment.value
        judgment.save(update_fields=["value"])
    again_prompts: list[str] = []
    again = tune_judge(
        start,
        aspect,
        "few-shot",
        options=options,
        seed=4,
        resamples=50,
        model_factory=watched(again_prompts),
    ).run
    assert again_prompts == prompts
    assert again.config["tuning"]["candidates"] == tuning["candidates"]
    assert run_scores(again) == run_scores(first)
    assert again.config["tuning"]["test"] != tuning["test"]  # only the evidence moved


def test_the_same_seed_gives_the_same_run_and_another_seed_other_examples(tuning_judged):
    study, start = tuning_judged
    make_split(study, test=0.25, seed=3)  # no dev: a tune-internal split picks k
    aspect = Aspect.objects.get(code="COH")
    options = {"k": "2", "selection": "random"}

    def tuned(seed: int) -> MetricRun:
        return tune_judge(start, aspect, "few-shot", options=options, seed=seed, resamples=20).run

    one, two, other = tuned(1), tuned(1), tuned(2)
    assert one.config["tuning"]["dev"]["source"] == "tune-internal"
    assert one.config["tuning"]["example_outputs"] == two.config["tuning"]["example_outputs"]
    assert run_scores(one) == run_scores(two)
    assert one.config["tuning"]["example_outputs"] != other.config["tuning"]["example_outputs"]
    assert one.config["tuning"]["dev"]["documents"] == 2  # a quarter of the 9 tune documents


def test_diverse_examples_are_far_apart_by_the_encoder(tuning_judged, tiny_encoder):
    study, start = tuning_judged
    make_split(study, dev=0.25, test=0.25, seed=3)
    aspect = Aspect.objects.get(code="COH")
    made = tune_judge(
        start,
        aspect,
        "few-shot",
        options={"k": "3", "selection": "diverse", "encoder": tiny_encoder},
        resamples=20,
    ).run
    tuning = made.config["tuning"]
    assert tuning["selection"] == "diverse" and tuning["encoder"] == tiny_encoder
    ids = tuning["example_outputs"]
    texts = dict(Output.objects.filter(pk__in=ids).values_list("pk", "text"))
    vectors = embed(tiny_encoder, [texts[pk] for pk in ids])
    assert len(ids) == 3 == len(set(ids))
    # farthest-point: the second is the pool's furthest from the first
    pool_texts = {o.pk: o.text for o in Output.objects.filter(document__split_parts__part="tune")}
    assert set(ids) <= set(pool_texts)
    distance = 1 - vectors[0] @ vectors[1]
    pool_vectors = embed(tiny_encoder, list(pool_texts.values()))
    assert distance == pytest.approx(float(np.max(1 - pool_vectors @ vectors[0])), abs=1e-5)


def test_the_command_prints_the_run_and_a_delta_of_the_test_documents_only(
    tuning_judged, client, cast
):
    study, start = tuning_judged
    split = make_split(study, dev=0.25, test=0.25, seed=3)
    aspect = Aspect.objects.get(code="COH")
    out = StringIO()
    call_command(
        "tune_judge",
        "--run",
        str(start.pk),
        "--aspect",
        "coherence",
        "--tuner",
        "few-shot",
        "--k",
        "1,2",
        "--selection",
        "worst",
        "--resamples",
        "100",
        stdout=out,
    )
    first, second = out.getvalue().splitlines()[:2]
    made = MetricRun.objects.get(pk=int(first))
    assert made.config["tuning"]["selection"] == "worst" and made.config["split"] == split.pk
    human = held_out_labels(split, aspect, "test")
    n_docs = SplitDocument.objects.filter(split=split, part="test").count()
    assert f"on {n_docs} test documents, {len(human)} outputs" in second
    docs = dict(Output.objects.filter(pk__in=human).values_list("pk", "document_id"))
    ids = sorted(human)

    def on_test(scores: dict[int, float]) -> float:
        return statistic(
            aspect, [docs[pk] for pk in ids], [scores[pk] for pk in ids], [human[pk] for pk in ids]
        )

    found = re.search(r"start (-?[\d.]+|nan) → tuned (-?[\d.]+|nan)", second)
    assert found is not None
    assert float(found.group(1)) == pytest.approx(on_test(run_scores(start)), abs=5e-5, nan_ok=True)
    assert float(found.group(2)) == pytest.approx(on_test(run_scores(made)), abs=5e-5, nan_ok=True)
    assert re.search(r"test Δ spearman \(sample\): [+-][\d.]+ \[[+-][\d.]+, [+-][\d.]+\]", second)
    # its tuning resource: each candidate with its dev figure, the chosen one, the gaps
    client.force_login(cast["owner"])
    body = client.get(f"/api/runs/{made.pk}/tuning/").json()
    record = made.config["tuning"]
    assert [(c["settings"], c["dev"]) for c in body["candidates"]] == [
        ({"k": k, "selection": "worst"}, c["dev"])
        for k, c in zip((1, 2), record["candidates"], strict=True)
    ]
    assert body["chosen"]["settings"] == {"k": record["k"], "selection": "worst"}
    assert [c["chosen"] for c in body["candidates"]].count(True) == 1
    assert body["dev"]["source"] == "dev" and body["gap"]["dev"] == record["dev"]["chosen"]
    dev, tuned = body["gap"]["dev"], body["test"]["tuned"]
    if dev is None or tuned is None:  # a tiny random judge may give an undefined figure
        assert body["gap"]["dev_gap"] is None
    else:
        assert body["gap"]["dev_gap"] == pytest.approx(dev - tuned)
    assert body["cost"]["source"] == "local" and body["cost"]["cost"] is None
    assert body["cost"]["judge_requests"] == record["judge_requests"] > 0
    delta = body["test"]["delta"]
    assert (f"{delta:+.4f}" if delta is not None else "nan") in second


def test_a_gptscore_judge_gets_well_rated_tune_examples_as_demonstrations(
    tuning_study, long_context_tiny_model
):
    start = finished_run(tuning_study, RunRequest(aspect="COH", model=long_context_tiny_model))
    split = make_split(tuning_study, dev=0.25, test=0.25, seed=3)
    aspect = Aspect.objects.get(code="COH")
    prompts: list[str] = []

    class Watched(HFLanguageModel):
        def score_targets(self, requests):  # type: ignore[no-untyped-def]
            prompts.extend(r.prompt for r in requests)
            return super().score_targets(requests)

    made = tune_judge(
        start,
        aspect,
        "few-shot",
        options={"k": "2", "selection": "random"},
        resamples=20,
        model_factory=lambda run: Watched(run.config["model_location"]),
    ).run
    tuning = made.config["tuning"]
    assert tuning["k"] == 2 and len(tuning["example_outputs"]) == 2
    tune_human = held_out_labels(split, aspect, "tune")
    median = float(np.median(list(tune_human.values())))
    assert all(tune_human[pk] >= median for pk in tuning["example_outputs"])
    texts = dict(Output.objects.filter(pk__in=tuning["example_outputs"]).values_list("pk", "text"))
    part = parts_of_texts(split)
    assert {part[t] for t in texts.values()} == {"tune"}
    for prompt in prompts:  # the output scored is the target: any output text is an example's
        assert {t for t in part if t in prompt} <= set(texts.values())
    shown = sum(t in p for p in prompts for t in texts.values())
    # every prompt shows both examples but those of the example's own documents (2 × 3)
    assert shown == 2 * len(prompts) - 2 * N_SYSTEMS
    assert len(run_scores(made)) == N_DOCS * N_SYSTEMS
