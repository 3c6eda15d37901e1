"""The calibration tuner on a binary aspect: a threshold fitted on the tune documents'
majority labels, measured by MCC on the test documents only."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from django.core.management import call_command

from scoring.stats.score_mapping import mcc, threshold
from studies.models import Aspect, MetricRun, Output, Study
from studies.services.imports import ImportOptions, import_file
from studies.services.tuning.labels import held_out_labels
from studies.services.tuning.splits import make_split

pytestmark = pytest.mark.django_db
N_DOCS, N_SYSTEMS = 24, 3


def lines(seed: int = 4) -> list[dict[str, Any]]:
    rng = np.random.default_rng(seed)
    out = []
    for d in range(N_DOCS):
        for s in range(N_SYSTEMS):
            quality = rng.normal()
            votes = (quality + rng.normal(0, 0.5, 3) > 0.3).astype(int)
            out.append(
                {
                    "doc_id": f"doc{d:02d}",
                    "system_id": f"sys{s}",
                    "source": f"Source {d}.",
                    "references": [f"Reference {d}."],
                    "output": f"Output {s} of {d}.",
                    "annotators": {"faithful": {f"r{k}": int(v) for k, v in enumerate(votes)}},
                    # a judge whose probability is well ordered but biased upwards
                    "metrics": {"judge_p": float(1 / (1 + np.exp(-(quality + 1.5))))},
                }
            )
    return out


@pytest.fixture
def study(cast, tmp_path: Path) -> Study:  # type: ignore[no-untyped-def]
    path = tmp_path / "faithful.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines()) + "\n", encoding="utf-8")
    options = ImportOptions(
        dataset="faith",
        task="summarization",
        file_format="jsonl",
        file_name=path.name,
        owner=cast["owner"],
        create_aspects=True,
    )
    import_file(path, options)
    dataset_id = MetricRun.objects.get(label="judge_p").dataset_id
    return Study.objects.create(name="faith", dataset_id=dataset_id, owner=cast["owner"])


def test_a_binary_judge_is_thresholded_on_tune_and_scored_by_mcc_on_test(study):
    aspect = Aspect.objects.get(name__iexact="faithful")
    assert aspect.kind == Aspect.Kind.BINARY
    split = make_split(study, test=0.5, seed=1)
    start_run = MetricRun.objects.get(label="judge_p")
    out = StringIO()
    call_command(
        "tune_judge",
        "--run",
        str(start_run.pk),
        "--aspect",
        "faithful",
        "--tuner",
        "calibration",
        "--resamples",
        "300",
        stdout=out,
    )
    first, second = out.getvalue().strip().splitlines()
    tuned = MetricRun.objects.get(pk=int(first))
    record = tuned.config["tuning"]
    start = dict(start_run.scores.values_list("output_id", "value"))
    majority = {
        pk: float(v >= 0.5) for pk, v in held_out_labels(split, aspect, "tune").items()
    }  # mean of 0/1 votes: positive where most voted 1
    ids = sorted(majority)
    expected = threshold([start[pk] for pk in ids], [majority[pk] for pk in ids])
    assert record["method"] == "threshold" and record["params"] == expected.params
    got = dict(tuned.scores.values_list("output_id", "value"))
    assert set(got.values()) <= {0.0, 1.0}
    test = {pk: float(v >= 0.5) for pk, v in held_out_labels(split, aspect, "test").items()}
    keys = sorted(test)
    truth = [test[pk] for pk in keys]
    start_mcc = mcc([float(start[pk] >= 0.5) for pk in keys], truth)
    tuned_mcc = mcc([got[pk] for pk in keys], truth)
    delta = record["test"]
    assert delta["statistic"] == "mcc" and delta["n_documents"] == N_DOCS // 2
    assert delta["start"] == pytest.approx(start_mcc) and delta["tuned"] == pytest.approx(tuned_mcc)
    assert f"test Δ mcc: {tuned_mcc - start_mcc:+.4f}" in second
    docs = set(Output.objects.filter(pk__in=keys).values_list("document_id", flat=True))
    assert len(docs) == N_DOCS // 2
