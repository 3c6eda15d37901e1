"""The run_metric command on two real SummEval documents with the real default model."""

from __future__ import annotations

import math

import pytest
from django.core.management import call_command

from studies.models import MetricRun, MetricScore
from tests.conftest import SHARED_DATA

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(
        not (SHARED_DATA / "summeval.jsonl").exists(), reason="../shared/data is not here"
    ),
]


def test_run_metric_scores_two_summeval_documents_with_the_default_model(capsys):
    call_command("import_records", str(SHARED_DATA / "summeval.jsonl"), "--dataset", "summeval",
                 "--task", "summarization")  # fmt: skip
    call_command("run_metric", "--dataset", "summeval", "--metric", "gptscore", "--aspect", "coherence",
                 "--setting", "IST", "--dimension", "src-hypo", "--model", "default", "--limit-docs", "2")  # fmt: skip
    out = capsys.readouterr().out
    run = MetricRun.objects.get(kind="computed")
    assert "succeeded, 32/32 outputs" in out
    assert (
        run.config["model_label"] == "SmolLM2-135M-Instruct" and run.config["model_files"]["sha256"]
    )
    scores = list(MetricScore.objects.filter(run=run))
    assert len(scores) == 32 and not any(s.error for s in scores)
    for score in scores:
        detail = score.details["src_hypo"]
        assert math.isfinite(score.value) and -15 < score.value < 0
        assert detail["n_tokens"][0] > 5 and detail["truncated"] is False
        assert score.value == pytest.approx(detail["sum"][0] / detail["n_tokens"][0])
