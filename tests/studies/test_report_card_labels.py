"""The report card on label aspects, beside a scale one, from one import file whose
metric columns are the judges (no model): a binary aspect's row has MCC, κ, F1, TPR/TNR
with intervals beside the annotators' own, prevalence with Rogan–Gladen, ECE from a
stored p(positive); a categorical aspect's κ is primary; the verdict, the exports and
``judge_gate`` name the statistic; the API schema types the row."""

from __future__ import annotations

import csv
import io
import json
import os
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse
from sklearn.metrics import cohen_kappa_score, f1_score, matthews_corrcoef, recall_score

from studies.models import Aspect, Dataset, MetricRun, MetricScore, Output
from studies.services.analysis.dashboards import matrix_for
from studies.services.analysis.drilldown import drilldown
from studies.services.analysis.params import MatrixParams
from studies.services.analysis.report_card import (
    CardParams,
    card_for,
    compute_card,
    to_csv,
    to_latex,
)
from studies.services.imports import ImportOptions, import_file
from tests.factories import MetricRunFactory

pytestmark = pytest.mark.django_db

N_DOCS, SYSTEMS, RATERS = 40, ("s1", "s2", "s3"), ("a1", "a2", "a3")
CATEGORIES = ("none", "minor", "major")


def _lines(seed: int = 3) -> list[dict[str, Any]]:
    rng = np.random.default_rng(seed)
    lines = []
    for d in range(N_DOCS):
        for s in SYSTEMS:
            truth, kind = int(rng.random() < 0.6), int(rng.integers(3))
            faithful = {r: truth if rng.random() < 0.85 else 1 - truth for r in RATERS}
            error = {
                r: CATEGORIES[kind if rng.random() < 0.8 else int(rng.integers(3))] for r in RATERS
            }
            lines.append(
                {
                    "doc_id": f"d{d}",
                    "system_id": s,
                    "source": f"Source {d}.",
                    "references": [f"Reference {d}."],
                    "output": f"Output of {s} for {d}.",
                    "human": {"coherence": float(rng.integers(1, 6))},
                    "annotators": {"faithful": faithful, "error": error},
                    "metrics": {
                        "good": truth if rng.random() < 0.9 else 1 - truth,
                        "coin": int(rng.integers(2)),
                        "cat": kind if rng.random() < 0.85 else int(rng.integers(3)),
                    },
                }
            )
    return lines


def _import(
    tmp_path: Path, lines: list[dict[str, Any]], name: str = "labels", owner: Any = None
) -> Dataset:
    path = tmp_path / f"{name}.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    options = ImportOptions(
        dataset=name,
        task="summarization",
        file_format="jsonl",
        file_name=path.name,
        create_aspects=True,
        owner=owner,
    )
    import_file(path, options)  # type: ignore[arg-type]
    return Dataset.objects.get(name=name)


@pytest.fixture
def labelled(tmp_path, cast):  # type: ignore[no-untyped-def]
    lines = _lines()
    dataset = _import(tmp_path, lines, owner=cast["owner"])
    return dataset, lines


def _card(dataset: Dataset) -> dict[str, Any]:
    return compute_card(dataset, CardParams(resamples=200))


def _row(card: dict[str, Any], judge: str, aspect: str) -> dict[str, Any]:
    return next(
        r for r in card["rows"] if r["run"]["metric"] == judge and r["aspect"]["name"] == aspect
    )


def _pooled(lines: list[dict[str, Any]], judge: str, aspect: str, codes: dict[Any, int]):  # type: ignore[no-untyped-def]
    """(annotator answer, judge answer) over every item and annotator: the pooled pairs."""
    humans, judged = [], []
    for line in lines:
        for answer in line["annotators"][aspect].values():
            humans.append(codes[answer])
            judged.append(int(line["metrics"][judge]))
    return np.array(humans), np.array(judged)


def test_a_binary_aspects_row_has_mcc_kappa_f1_rates_and_prevalence_as_sklearn(labelled):
    dataset, lines = labelled
    faithful = Aspect.objects.get(name__iexact="faithful")
    assert faithful.kind == "binary"
    card = _card(dataset)
    row = _row(card, "good", faithful.name)
    found = row["labels"]
    assert found["kind"] == "binary" and found["primary"] == "mcc" and found["problem"] is None
    h, j = _pooled(lines, "good", "faithful", {0: 0, 1: 1})
    judge = found["judge"]
    assert judge["mcc"]["value"] == pytest.approx(matthews_corrcoef(h, j), abs=1e-12)
    assert judge["kappa"]["value"] == pytest.approx(cohen_kappa_score(h, j), abs=1e-12)
    assert judge["positive_f1"]["value"] == pytest.approx(f1_score(h, j), abs=1e-12)
    assert judge["tpr"]["value"] == pytest.approx(recall_score(h, j), abs=1e-12)
    assert judge["tnr"]["value"] == pytest.approx(recall_score(h, j, pos_label=0), abs=1e-12)
    for name in ("mcc", "kappa", "positive_f1", "tpr", "tnr"):
        assert judge[name]["low"] < judge[name]["value"] < judge[name]["high"]
    assert found["human"]["mcc"]["value"] is not None  # the ceiling beside it
    assert np.asarray(found["confusion"]).sum() == len(h)
    prevalence = found["prevalence"]
    assert prevalence["human"]["value"] == pytest.approx(
        np.mean([np.mean(list(x["annotators"]["faithful"].values())) for x in lines])
    )
    assert prevalence["corrected"]["value"] is not None
    assert found["calibration"]["problem"]  # an imported judge stored no distribution
    # the verdict compares MCC with the ceiling and names it; the coin cannot pass
    assert row["verdict"]["code"] in ("can", "unclear")
    assert "MCC" in row["verdict"]["text"]  # the statistic it compared with the ceiling
    coin = _row(card, "coin", faithful.name)
    assert coin["verdict"]["code"] == "cannot"
    assert coin["alt_test"]["scoring"] == "accuracy"
    # a scale aspect's rows in the same card have no label statistics
    coherence = _row(card, "good", Aspect.objects.get(name__iexact="coherence").name)
    assert coherence["labels"] is None and coherence["aspect"]["kind"] == "scale"


def test_a_categorical_aspects_primary_is_kappa_and_out_of_range_scores_say_so(labelled):
    dataset, lines = labelled
    error = Aspect.objects.get(name__iexact="error")
    assert error.kind == "categorical"
    numeric = MetricRunFactory(  # numbers that are no label of the categorical aspect
        dataset=dataset,
        label="numeric",
        metric="numeric",
        status="succeeded",
        config={"aspect": error.code, "metric": "numeric"},
    )
    outputs = list(Output.objects.filter(document__dataset=dataset).order_by("pk"))
    MetricScore.objects.bulk_create(
        MetricScore(run=numeric, output=o, value=0.5 + k % 3) for k, o in enumerate(outputs)
    )
    numeric.done = numeric.total = len(outputs)
    numeric.save()
    card = _card(dataset)
    found = _row(card, "cat", error.name)["labels"]
    codes = {label: k for k, label in enumerate(error.labels)}
    h, j = _pooled(lines, "cat", "error", codes)  # the judge's numbers are label positions
    assert found["primary"] == "kappa"
    assert found["judge"]["kappa"]["value"] == pytest.approx(cohen_kappa_score(h, j), abs=1e-12)
    assert found["judge"]["macro_f1"]["value"] == pytest.approx(
        f1_score(h, j, average="macro"), abs=1e-12
    )
    # a numeric judge on a categorical aspect has no threshold to meet it through
    numbers = _row(card, "numeric", error.name)
    assert "no labels on a categorical aspect" in numbers["labels"]["problem"]
    assert numbers["verdict"]["code"] == "unclear"
    # on a binary aspect, the same kind of numbers meet it through a threshold
    binary = _row(card, "cat", Aspect.objects.get(name__iexact="faithful").name)["labels"]
    assert binary["problem"] is None and binary["threshold"]["split_kind"] == "halves"


def test_ece_comes_from_a_stored_p_positive(labelled):
    dataset, lines = labelled
    faithful = Aspect.objects.get(name__iexact="faithful")
    run = MetricRunFactory(
        dataset=dataset,
        label="label judge",
        metric="geval",
        status="succeeded",
        config={"aspect": faithful.code, "metric": "geval"},
    )
    rng = np.random.default_rng(1)
    outputs = {
        (o.document.doc_key, o.system_id): o for o in Output.objects.select_related("document")
    }
    pairs = []
    for line in lines:
        p = float(np.clip(0.5 + (line["metrics"]["good"] - 0.5) * rng.random(), 0, 1))
        output = outputs[(line["doc_id"], line["system_id"])]
        MetricScore.objects.create(
            run=run, output=output, value=float(p >= 0.5), details={"p_positive": p}
        )
        pairs += [(p, y) for y in line["annotators"]["faithful"].values()]
    run.done = run.total = len(lines)
    run.save()
    found = _row(_card(dataset), "geval", faithful.name)["labels"]["calibration"]
    conf, outcome = np.array(pairs).T
    edges = np.linspace(0, 1, 11)
    which = np.searchsorted(edges[1:-1], conf, side="left")
    ece = sum(
        abs(outcome[which == b].mean() - conf[which == b].mean()) * (which == b).mean()
        for b in range(10)
        if (which == b).any()
    )
    assert found["problem"] is None and found["target"] == "positive"
    assert found["ece"]["value"] == pytest.approx(ece, abs=1e-12)
    assert sum(b["n"] for b in found["bins"]) == len(pairs)


def test_the_exports_and_the_page_carry_the_label_rows(labelled, client, cast):
    dataset, _ = labelled
    card = _card(dataset)
    rows = list(csv.DictReader(io.StringIO(to_csv(card))))
    faithful = [r for r in rows if r["aspect_kind"] == "binary" and r["metric"] == "good"]
    assert faithful and faithful[0]["label_primary"] == "mcc" and faithful[0]["mcc"]
    assert faithful[0]["tpr_low"] and faithful[0]["rogan_gladen_prevalence"]
    assert "MCC" in to_latex(card) and r"$\kappa$" in to_latex(card)


def test_the_page_mixes_scale_and_label_rows_sortable_by_the_label_statistic(
    labelled, client, cast
):
    dataset, _ = labelled
    card_for(dataset, CardParams())  # as the light worker would have
    client.force_login(cast["owner"])
    url = reverse("studies:dataset-report-card", args=[dataset.pk])
    response = client.get(url, {"sort": "label"})
    body = response.content.decode()
    assert 'id="sort-label"' in body and "card-label-primary" in body and "scale aspect" in body
    assert "confusion-matrix" in body
    values = [
        r["labels"]["judge"][r["labels"]["primary"]]["value"]
        for r in response.context["rows"]
        if r["labels"] and r["labels"].get("judge")
    ]
    assert values and values == sorted(values, reverse=True)
    header = body.split('id="report-card-table"')[1].split("</thead>")[0]
    for row in body.split('class="card-row')[1:]:  # every row fills the header's columns
        cells = re.sub(r"<details.*?</details>", "", row, flags=re.S).split("</tr>")[0]
        spans = sum(int(n) - 1 for n in re.findall(r'colspan="(\d+)"', cells))
        cell_tags = len(re.findall(r"<t[hd][ >]", cells))
        assert cell_tags + spans == len(re.findall(r"<th[ >]", header))


def test_the_matrix_and_the_drill_down_show_mcc_on_a_binary_aspect(labelled, client, cast):
    dataset, _ = labelled
    faithful = Aspect.objects.get(name__iexact="faithful")
    params = MatrixParams(resamples=200)
    matrix = matrix_for(dataset, params)
    column = next(c for c in matrix["columns"] if c["aspect"]["pk"] == faithful.pk)
    good = MetricRun.objects.get(dataset=dataset, metric="good")
    cell = next(c for c in column["cells"] if c["run"] == good.pk)
    row = _row(_card(dataset), "good", faithful.name)
    assert column["statistic"] == "MCC"
    assert cell["label"] == pytest.approx(row["labels"]["judge"]["mcc"]["value"], abs=1e-12)
    assert column["label_ceiling"] == pytest.approx(row["labels"]["human"]["mcc"]["value"])
    details = drilldown(dataset, good.pk, faithful.pk, params)
    assert details is not None and details["labels"]["primary"] == "mcc"
    assert details["labels"]["judge"]["mcc"]["value"] == pytest.approx(cell["label"])
    client.force_login(cast["owner"])
    page = client.get(reverse("studies:correlations-cell", args=[dataset.pk, good.pk, faithful.pk]))
    assert b'id="cell-confusion"' in page.content and b"TPR" in page.content


def gate(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    try:
        call_command("judge_gate", *args, "--resamples", "200", stdout=out)
    except CommandError as exc:
        return exc.returncode, out.getvalue() + str(exc)
    return 0, out.getvalue()


def test_judge_gate_gates_a_binary_aspect_on_mcc_and_names_it(labelled):
    dataset, _ = labelled
    good = MetricRun.objects.get(dataset=dataset, metric="good")
    coin = MetricRun.objects.get(dataset=dataset, metric="coin")
    code, out = gate("--run", str(good.pk), "--aspect", "faithful", "--min-lower-bound", "0.3")
    assert code == 0 and "PASS" in out and "MCC" in out
    code, out = gate("--run", str(coin.pk), "--aspect", "faithful", "--min-lower-bound", "0.3")
    assert code == 1 and "MCC" in out and "below 0.3" in out
    code, out = gate("--run", str(good.pk), "--aspect", "error", "--min-lower-bound", "0.9")
    assert code == 1 and "κ" in out
    code, out = gate("--run", str(good.pk), "--aspect", "faithful", "--against", str(coin.pk))
    assert code == 2 and "--against" in out


def test_the_api_schema_types_the_rows_pieces():
    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator().get_schema(request=None, public=True)
    row = schema["components"]["schemas"]["ReportCardRow"]["properties"]
    for key in ("correlation", "labels", "agreement", "alt_test", "cost", "verdict"):
        assert key in row
    labels = schema["components"]["schemas"]["CardLabels"]["properties"]
    assert {"judge", "human", "confusion", "prevalence", "calibration"} <= set(labels)


SHARED = Path(os.environ.get("CONCORDIA_SHARED_DATA", "../shared/data")) / "xsumfaith.jsonl"


@pytest.mark.skipif(not SHARED.is_file(), reason=f"{SHARED} is not there (CONCORDIA_SHARED_DATA)")
def test_a_shared_binary_file_gives_a_label_row(tmp_path):
    lines = [json.loads(x) for x in SHARED.read_text().splitlines()[:300]]
    for line in lines:  # a judge that answers as annotator a1 did
        line["metrics"] = {"a1": line["annotators"]["faithful"]["a1"]}
        line["annotators"] = {"faithful": line["annotators"]["faithful"]}
        line["human"] = {}
    dataset = _import(tmp_path, lines, "xsumfaith")
    faithful = Aspect.objects.get(name__iexact="faithful")
    row = _row(_card(dataset), "a1", faithful.name)
    judge = row["labels"]["judge"]
    assert row["labels"]["primary"] == "mcc" and judge["mcc"]["value"] is not None
    assert judge["tpr"]["low"] is not None and row["labels"]["prevalence"]["corrected"]


def _json_schema(node: Any) -> Any:
    """An OpenAPI 3.0 schema node as JSON Schema: ``nullable`` becomes a null type."""
    if isinstance(node, list):
        return [_json_schema(n) for n in node]
    if not isinstance(node, dict):
        return node
    out = {k: _json_schema(v) for k, v in node.items() if k != "nullable"}
    if node.get("nullable"):
        if "type" in out:
            out["type"] = [out["type"], "null"]
        elif "allOf" in out or "$ref" in out or "oneOf" in out:
            out = {"anyOf": [out, {"type": "null"}]}
        if "enum" in out:
            out["enum"] = [*out["enum"], None]
    return out


def _conforms(rows: list[dict[str, Any]]) -> None:
    import jsonschema
    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator().get_schema(request=None, public=True)
    root = {
        "components": _json_schema(schema["components"]),
        "type": "array",
        "items": {"$ref": "#/components/schemas/ReportCardRow"},
    }
    jsonschema.validate(json.loads(json.dumps(rows)), root)


def test_label_and_scale_rows_conform_to_the_schema(labelled, cast):
    from tests.studies.report_card_data import build_panel

    dataset, _ = labelled
    _conforms(_card(dataset)["rows"])
    panel = build_panel(cast["owner"])  # sampled, pairwise, prompt variants, baselines
    _conforms(compute_card(panel.dataset, CardParams(resamples=200, all_runs=True))["rows"])
