"""A G-Eval run on a binary aspect: the labels frozen with the run, the label form in
its prompt, each score the predicted label's position (as a judgment stores a label)
with the distribution and p_positive; no weighting variant."""

from __future__ import annotations

import math

import pytest
from django.urls import reverse

from scoring.lm.served import Capabilities
from studies.models import Aspect, MetricScore
from studies.services.catalog import steps as steps_service
from studies.services.runs import RunError, RunRequest, execute_run, start_run
from studies.services.runs.geval import derive_variant, label_config_of, served_needs
from tests.conftest import record
from tests.factories import import_jsonl

pytestmark = pytest.mark.django_db


@pytest.fixture
def faithful_label_dataset(write_jsonl, cast):  # type: ignore[no-untyped-def]
    aspect = Aspect(
        code="FAITH",
        name="Faithful",
        definition="Is every fact of the summary supported by the article?",
        kind="binary",
        labels=["no", "yes"],
        positive="yes",
        anchors={"yes": "nothing made up"},
    )
    aspect.full_clean()
    aspect.save()
    records = [
        record(f"d{d}", f"s{s}", output=f"Output {s} on budget {d}.", source=f"Budget {d} passed.")
        for d in range(2)
        for s in range(2)
    ]
    return import_jsonl(write_jsonl(records), "labels", cast["owner"])


def test_a_label_run_scores_the_predicted_labels_position_with_its_distribution(
    client, cast, faithful_label_dataset, long_context_tiny_model
):
    request = RunRequest(
        metric="geval", aspect="FAITH", model=long_context_tiny_model, steps="none"
    )
    run = start_run(faithful_label_dataset, request, enqueue=False, local_paths=True)
    assert run.config["labels"] == ["no", "yes"] and run.config["positive"] == "yes"
    assert run.config["scale"] == [0, 1]
    assert run.config["criteria"] == (
        "Faithful (no / yes) - Is every fact of the summary supported by the article?\n"
        "- yes: nothing made up"
    )
    assert "with one of the labels" in run.config["introduction"]
    assert run.label.endswith(":FAITH:no-cot:labels")
    labelled = label_config_of(run)
    assert labelled is not None and labelled.labels == ("no", "yes")
    assert execute_run(run.pk, chunk_outputs=2) == "succeeded"
    scores = list(MetricScore.objects.filter(run=run))
    assert len(scores) == 4 and not any(s.error for s in scores)
    for score in scores:
        dist = score.details["distribution"]
        assert list(dist) == ["no", "yes"] and math.isclose(sum(dist.values()), 1.0)
        assert score.value == (1.0 if dist["yes"] > dist["no"] else 0.0)
        assert score.details["label"] == ["no", "yes"][int(score.value)]
        assert score.details["p_positive"] == dist["yes"]
        assert score.details["read"] == "exact" and score.details["sampled"] is False
    run.refresh_from_db()
    client.force_login(cast["owner"])
    page = client.get(reverse("studies:run-detail", args=[run.pk])).content.decode()
    assert "(labels no / yes, positive yes)" in page and "the most probable label" in page
    assert 'id="variant"' not in page
    with pytest.raises(RunError, match="no weighting variant"):
        derive_variant(run, "argmax")


def test_the_steps_prompt_of_a_label_aspect_names_its_labels(faithful_label_dataset):
    aspect_version = Aspect.objects.get(code="FAITH").current_version()
    config = steps_service.base_config(faithful_label_dataset.task, aspect_version)
    assert config.scale == (0, 1)
    assert "Faithful (no / yes)" in steps_service.geval.steps_prompt(config)


def test_the_yes_no_judge_runs_on_a_binary_aspect_only(
    faithful_label_dataset, long_context_tiny_model
):
    request = RunRequest(metric="yesno", aspect="FAITH", model=long_context_tiny_model)
    run = start_run(faithful_label_dataset, request, enqueue=False, local_paths=True)
    assert run.label.endswith(":FAITH") and run.label.startswith("yesno:")
    assert run.config["positive"] == "yes" and run.config["negative"] == "no"
    assert execute_run(run.pk, chunk_outputs=2) == "succeeded"
    scores = list(MetricScore.objects.filter(run=run))
    assert len(scores) == 4 and not any(s.error for s in scores)
    for score in scores:
        p = score.details["p_yes"]
        assert score.value == pytest.approx(math.log(p) - math.log(1 - p), abs=1e-9)
    with pytest.raises(RunError, match="binary aspect; COH is a scale one"):
        start_run(
            faithful_label_dataset,
            RunRequest(metric="yesno", aspect="COH", model=long_context_tiny_model),
            local_paths=True,
        )


def test_an_endpoint_needs_top_logprobs_or_prompt_logprobs_for_a_label_run():
    labels = {"labels": ["no", "yes"], "estimation": "probs"}
    assert served_needs(labels, Capabilities(prompt_logprobs=True)) == ""
    assert served_needs(labels, Capabilities(chat_top_logprobs=20)) == ""
    assert "found neither" in served_needs(labels, Capabilities())
    assert "needs chat top_logprobs" in served_needs(
        {"estimation": "probs"}, Capabilities(prompt_logprobs=True)
    )
