"""The human ceiling in the matrix, and the diagnostics page (length bias, per-system
and per-document agreement), against computations from the raw rows."""

from __future__ import annotations

import numpy as np
import pytest
from django.urls import reverse
from scipy import stats

from studies.models import Aspect, Dataset, Judgment, MetricScore, Output, TaskKind
from studies.services.analysis.dashboards import compute_and_cache
from studies.services.analysis.diagnostics import UnknownChoice, diagnostics
from studies.services.analysis.params import MatrixParams
from tests.factories import MetricRunFactory, UserFactory, import_jsonl, synthetic_records

pytestmark = pytest.mark.django_db
N_DOCS, N_SYSTEMS = 8, 5


@pytest.fixture
def judged(cast):  # type: ignore[no-untyped-def]
    """Three annotator accounts judge coherence with some gaps; one judges fluency; a
    metric follows coherence and length, another is noise; outputs vary in length."""
    rng = np.random.default_rng(11)
    dataset = Dataset.objects.create(
        name="judged", task=TaskKind.objects.get(code="summarization"), owner=cast["owner"]
    )
    coh, flu = Aspect.objects.get(code="COH"), Aspect.objects.get(code="FLU")
    annotators = [UserFactory(username=f"ann{k}", role="annotator") for k in range(3)]
    good = MetricRunFactory(dataset=dataset, label="good")
    noise = MetricRunFactory(dataset=dataset, label="noise")
    for d in range(N_DOCS):
        document = dataset.documents.create(doc_key=f"doc{d}", source="S.", references=["R."])
        for s in range(N_SYSTEMS):
            length = int(rng.integers(3, 40))
            output = Output.objects.create(
                document=document, system_id=f"sys{s}", text=" ".join(["word"] * length)
            )
            quality = rng.normal() + s * 0.4
            for k, annotator in enumerate(annotators):
                if rng.random() < 0.8 or k == 0:
                    value = float(np.clip(np.round(quality + rng.normal(0, 0.7) + 3), 1, 5))
                    Judgment.objects.create(
                        output=output, aspect=coh, value=value, annotator=annotator
                    )
            Judgment.objects.create(
                output=output, aspect=flu, value=float(rng.integers(1, 6)), annotator=annotators[0]
            )
            MetricScore.objects.create(
                run=good, output=output, value=quality + 0.05 * length + rng.normal(0, 0.5)
            )
            MetricScore.objects.create(run=noise, output=output, value=float(rng.normal()))
    dataset.refresh_from_db()
    return dataset


def raw_rows(dataset: Dataset):  # type: ignore[no-untyped-def]
    """Per output: doc, system, length, metric scores by run label, judgments by aspect
    code and annotator (straight from the models)."""
    rows = {}
    for output in Output.objects.filter(document__dataset=dataset).select_related("document"):
        rows[output.pk] = {
            "doc": output.document.doc_key,
            "system": output.system_id,
            "length": len(output.text.split()),
            "metric": {},
            "judged": {},
        }
    for score in MetricScore.objects.filter(run__dataset=dataset).select_related("run"):
        rows[score.output_id]["metric"][score.run.label] = score.value
    for j in Judgment.objects.filter(output__document__dataset=dataset).select_related(
        "aspect", "annotator"
    ):
        rows[j.output_id]["judged"].setdefault(j.aspect.code, {})[j.annotator.username] = j.value
    return [rows[k] for k in sorted(rows)]


def brute_ceiling(rows, level: str):  # type: ignore[no-untyped-def]
    """Each annotator's Spearman with the mean of the others, the textbook way."""
    names = sorted({a for r in rows for a in r["judged"].get("COH", {})})
    values = {}
    for name in names:
        pairs = []
        for r in rows:
            judged = r["judged"].get("COH", {})
            others = [v for a, v in judged.items() if a != name]
            if name in judged and others:
                pairs.append((r["doc"], judged[name], float(np.mean(others))))
        if level == "dataset":
            values[name] = stats.spearmanr([p[1] for p in pairs], [p[2] for p in pairs])[0]
        else:
            per_doc = []
            for doc in sorted({p[0] for p in pairs}):
                a = [p[1] for p in pairs if p[0] == doc]
                b = [p[2] for p in pairs if p[0] == doc]
                if len(a) >= 2 and len(set(a)) > 1 and len(set(b)) > 1:
                    per_doc.append(stats.spearmanr(a, b)[0])
            values[name] = float(np.mean(per_doc))
    return values


@pytest.mark.parametrize("level", ["dataset", "sample"])
def test_the_matrix_carries_the_human_ceiling_of_each_aspect(judged, level):
    result = compute_and_cache(judged, MatrixParams(level=level, ci=False))
    ceiling = {c["aspect"]: c for c in result["ceiling"]}
    assert [c["aspect"] for c in result["ceiling"]] == [
        col["aspect"]["code"] for col in result["columns"]
    ]
    expected = brute_ceiling(raw_rows(judged), level)
    coh = ceiling["COH"]
    got = {a["annotator"]: a["value"] for a in coh["per_annotator"]}
    assert got == pytest.approx(expected, abs=1e-12)
    assert coh["value"] == pytest.approx(np.mean(list(expected.values())), abs=1e-12)
    assert coh["n_annotators"] == 3 and coh["reason"] is None
    flu = ceiling["FLU"]  # one annotator: nobody to compare with
    assert flu["value"] is None and "fewer than 2 annotators" in flu["reason"]


def test_the_matrix_page_and_csv_show_the_ceiling_row(client, judged, cast):
    client.force_login(cast["owner"])
    url = reverse("studies:correlations", args=[judged.pk])
    body = client.get(url + "?level=dataset").content.decode()
    assert 'id="ceiling-row"' in body and "Human ceiling" in body
    result = compute_and_cache(judged, MatrixParams(level="dataset"))
    coh = next(c for c in result["ceiling"] if c["aspect"] == "COH")
    assert f'data-ceiling="{coh["value"]}"' in body
    assert "fewer than 2 annotators judged the same outputs" in body  # FLU's tooltip
    assert "ann1: " in body  # per-annotator values in the tooltip
    export = reverse("studies:correlations-export", args=[judged.pk, "csv"])
    lines = client.get(export + "?level=dataset").content.decode().splitlines()
    header, last = lines[0].split(","), lines[-1].split(",")
    assert last[0] == "human ceiling" and len(last) == len(header)
    assert float(last[header.index("COH")]) == pytest.approx(coh["value"], abs=1e-6)
    assert last[header.index("FLU")] == ""
    latex = reverse("studies:correlations-export", args=[judged.pk, "tex"])
    tex = client.get(latex + "?level=dataset").content.decode()
    assert rf"\textit{{Human ceiling}} & {coh['value']:.3f} & -- &  \\" in tex  # avg. rank blank


def test_a_dataset_judged_once_has_no_ceiling_value(client, cast, write_jsonl):

    path = write_jsonl(synthetic_records(), name="once.jsonl")
    dataset = import_jsonl(path, "once", cast["owner"])
    result = compute_and_cache(dataset, MatrixParams(ci=False))
    assert all(c["value"] is None and c["n_annotators"] == 0 for c in result["ceiling"])
    client.force_login(cast["owner"])
    body = client.get(reverse("studies:correlations", args=[dataset.pk])).content.decode()
    assert 'id="ceiling-row"' in body and body.count('data-ceiling=""') == 2


def residual_partial(x, y, z, ranks):  # type: ignore[no-untyped-def]
    x, y, z = (np.asarray(v, dtype=float) for v in (x, y, z))
    if ranks:
        x, y, z = stats.rankdata(x), stats.rankdata(y), stats.rankdata(z)
    design = np.column_stack([np.ones_like(z), z])
    rx = x - design @ np.linalg.lstsq(design, x, rcond=None)[0]
    ry = y - design @ np.linalg.lstsq(design, y, rcond=None)[0]
    return stats.pearsonr(rx, ry)[0]


@pytest.mark.parametrize("coef", ["pearson", "spearman"])
def test_length_bias_matches_the_raw_rows_at_dataset_level(judged, coef):
    data = diagnostics(judged, MatrixParams(level="dataset", coefficient=coef))
    rows = raw_rows(judged)
    fn = stats.pearsonr if coef == "pearson" else stats.spearmanr
    length = data["length"]
    assert length["coefficient"] == coef and length["unit"] == "whitespace tokens"
    lengths = [r["length"] for r in rows]
    assert length["mean_length"] == pytest.approx(np.mean(lengths))
    for entry in length["runs"]:
        label = entry["run"]["label"]
        metric = [r["metric"][label] for r in rows]
        assert entry["length"] == pytest.approx(fn(metric, lengths)[0], abs=1e-10)
        for aspect, cell in zip(length["aspects"], entry["cells"], strict=True):
            code = aspect["aspect"]["code"]
            human = [float(np.mean(list(r["judged"][code].values()))) for r in rows]
            assert aspect["length"] == pytest.approx(fn(human, lengths)[0], abs=1e-10)
            assert cell["raw"] == pytest.approx(fn(metric, human)[0], abs=1e-10)
            expected = residual_partial(metric, human, lengths, coef == "spearman")
            assert cell["partial"] == pytest.approx(expected, abs=1e-10)
            assert cell["change"] == pytest.approx(cell["partial"] - cell["raw"])
    good = next(e for e in length["runs"] if e["run"]["label"] == "good")
    assert good["length"] > 0.3  # the metric that rewards length is seen doing so


def test_agreement_lists_systems_by_rank_gap_and_documents_worst_first(judged):
    coh = Aspect.objects.get(code="COH")
    good = judged.runs.get(label="good")
    data = diagnostics(judged, MatrixParams(coefficient="kendall"), good.pk, coh.pk)
    assert data["run"] == good.pk and data["aspect"] == coh.pk
    agreement = data["agreement"]
    rows = raw_rows(judged)
    means = {}
    for s in sorted({r["system"] for r in rows}):
        mine = [r for r in rows if r["system"] == s]
        means[s] = (
            np.mean([r["metric"]["good"] for r in mine]),
            np.mean([np.mean(list(r["judged"]["COH"].values())) for r in mine]),
        )
    metric_rank = stats.rankdata([-means[s][0] for s in sorted(means)])
    human_rank = stats.rankdata([-means[s][1] for s in sorted(means)])
    gaps = {s: m - h for s, m, h in zip(sorted(means), metric_rank, human_rank, strict=True)}
    listed = agreement["systems"]
    assert {s["system"]: s["gap"] for s in listed} == gaps
    assert [abs(s["gap"]) for s in listed] == sorted((abs(g) for g in gaps.values()), reverse=True)
    assert listed[0]["metric_mean"] == pytest.approx(means[listed[0]["system"]][0])
    # each system's most misjudged outputs: pooled percentile gaps, largest first
    pks = sorted(o.pk for o in Output.objects.filter(document__dataset=judged))
    metric_all = np.array([r["metric"]["good"] for r in rows])
    human_all = np.array([np.mean(list(r["judged"]["COH"].values())) for r in rows])
    gap_of = dict(
        zip(pks, (stats.rankdata(metric_all) - stats.rankdata(human_all)) / len(rows), strict=True)
    )
    for system in listed:
        outputs = system["outputs"]
        assert len(outputs) == 5 and {o["system"] for o in outputs} == {system["system"]}
        assert [o["gap"] for o in outputs] == pytest.approx([gap_of[o["output"]] for o in outputs])
        mine = sorted(
            (
                abs(g)
                for pk, g in gap_of.items()
                if rows[pks.index(pk)]["system"] == system["system"]
            ),
            reverse=True,
        )
        assert [abs(o["gap"]) for o in outputs] == pytest.approx(mine[:5])
    documents = agreement["documents"]
    assert agreement["document_coefficient"] == "Kendall τ-b"
    assert [d["value"] for d in documents] == sorted(d["value"] for d in documents)
    for doc in documents:
        mine = [r for r in rows if r["doc"] == doc["doc"]]
        expected = stats.kendalltau(
            [r["metric"]["good"] for r in mine],
            [np.mean(list(r["judged"]["COH"].values())) for r in mine],
        )[0]
        assert doc["value"] == pytest.approx(expected, abs=1e-12)
        assert len(doc["outputs"]) == doc["n_outputs"] == N_SYSTEMS
        humans = [o["human"] for o in doc["outputs"]]
        assert humans == sorted(humans, reverse=True)
    with pytest.raises(UnknownChoice):
        diagnostics(judged, MatrixParams(), 999999, coh.pk)


def test_diagnostics_are_cached_until_the_data_changes(judged, django_assert_max_num_queries):
    first = diagnostics(judged, MatrixParams())
    with django_assert_max_num_queries(0):
        assert diagnostics(judged, MatrixParams()) == first
    score = MetricScore.objects.filter(run__label="good").first()
    score.value = 99.0
    score.save()
    judged.refresh_from_db()
    assert diagnostics(judged, MatrixParams())["length"] != first["length"]


def test_the_diagnostics_page_for_owner_others_and_unknown_choices(client, judged, cast):
    url = reverse("studies:dataset-diagnostics", args=[judged.pk])
    client.force_login(cast["annotator"])
    assert client.get(url).status_code == 403
    client.force_login(cast["outsider"])
    assert client.get(url).status_code == 404
    client.force_login(cast["owner"])
    good = judged.runs.get(label="good")
    page = client.get(url, {"run": good.pk, "level": "system", "coef": "pearson"})
    body = page.content.decode()
    assert page.status_code == 200
    for marker in (
        'id="length-table"',
        'id="system-gaps"',
        'class="card doc-disagreement"',
        'id="drilldown-link"',
        "Pearson r, system-level",
    ):
        assert marker in body, marker
    assert body.count("<tr data-system=") == N_SYSTEMS
    assert client.get(url, {"run": 999999}).status_code == 404
    assert client.get(url, {"aspect": "x"}).status_code == 404
    correlations = client.get(reverse("studies:correlations", args=[judged.pk])).content.decode()
    assert 'id="diagnostics-link"' in correlations


def test_the_diagnostics_page_without_runs_or_judgments(client, cast):
    dataset = Dataset.objects.create(
        name="bare", task=TaskKind.objects.get(code="summarization"), owner=cast["owner"]
    )
    client.force_login(cast["owner"])
    body = client.get(reverse("studies:dataset-diagnostics", args=[dataset.pk])).content.decode()
    assert 'id="length-empty"' in body and 'id="agreement-empty"' in body


def test_the_ceiling_exists_for_every_statistic_the_matrix_offers(judged):
    from scoring.stats import Level, unsupported
    from studies.services.analysis.params import COEFFICIENT_NAMES

    for name, coefficient in COEFFICIENT_NAMES.items():
        for level in Level:
            if unsupported(coefficient, level) is not None:
                continue
            params = MatrixParams(level=level.value, coefficient=name, ci=False)
            coh = compute_and_cache(judged, params)["ceiling"][0]
            assert coh["aspect"] == "COH" and coh["n_overlapping"] == 3, (name, level)
            assert coh["value"] is not None and -1 <= coh["value"] <= 1, (name, level)


def test_a_large_datasets_diagnostics_are_computed_by_a_worker_while_the_page_polls(
    client, judged, cast, settings, monkeypatch
):
    from dataclasses import asdict

    from studies import tasks
    from studies.services.analysis import diagnostics as service

    settings.CONCORDIA = {**settings.CONCORDIA, "DASHBOARD_INLINE_SECONDS": 0.0}
    sent = []
    monkeypatch.setattr(service, "send", lambda name, *args: sent.append((name, args)))
    client.force_login(cast["owner"])
    url = reverse("studies:dataset-diagnostics", args=[judged.pk])
    good = judged.runs.get(label="good")
    waiting = client.get(url, {"run": good.pk, "level": "dataset"}).content.decode()
    assert 'id="diagnostics-waiting"' in waiting and 'hx-trigger="every 2s"' in waiting
    assert 'id="length-table"' not in waiting and "poll=1" in waiting
    client.get(url, {"run": good.pk, "level": "dataset"})  # asked already: not sent twice
    assert len(sent) == 1 and sent[0][0] == "studies.tasks.compute_diagnostics"
    params = MatrixParams.from_query({"level": "dataset"})
    assert sent[0][1] == (judged.pk, asdict(params), str(good.pk), "")
    assert settings.CELERY_TASK_ROUTES[sent[0][0]]["queue"] == "light"
    tasks.compute_diagnostics(*sent[0][1])
    done = client.get(
        url,
        {"run": good.pk, "level": "dataset", "poll": "1"},
        headers={"HX-Request": "true", "HX-Target": "diagnostics"},
    )
    assert done.status_code == 286 and done["HX-Refresh"] == "true"
    assert b'id="length-table"' in done.content and b"<html" not in done.content
    page = client.get(url, {"run": good.pk, "level": "dataset"}).content.decode()
    assert 'id="diag-run"' in page and 'id="system-gaps"' in page and len(sent) == 1
    assert client.get(url, {"run": 999999, "level": "dataset"}).status_code == 404


def test_the_correlations_command_prints_the_ceiling(judged, capsys):
    from django.core.management import call_command

    call_command("correlations", "--dataset", "judged", "--level", "dataset", "--format", "table")
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("human ceiling"))
    coh = next(c for c in compute_and_cache(judged, MatrixParams(level="dataset"))["ceiling"])
    assert line.split()[2:] == [f"{coh['value']:.3f}", "—"]  # COH, then FLU judged once


def test_each_import_file_counts_as_one_annotator_of_the_ceiling(cast, write_jsonl):
    from studies.services.imports import ImportOptions, import_file

    first = synthetic_records(seed=3)
    second = synthetic_records(seed=4)  # the same outputs, judged again
    for name, records in (("one.jsonl", first), ("two.jsonl", second)):
        path = write_jsonl(records, name=name)
        import_file(
            path,
            ImportOptions(
                dataset="twice",
                task="summarization",
                file_format="jsonl",
                file_name=name,
                owner=cast["owner"],
            ),
        )
    dataset = Dataset.objects.get(name="twice")
    result = compute_and_cache(dataset, MatrixParams(level="dataset", coefficient="pearson"))
    coh = next(c for c in result["ceiling"] if c["aspect"] == "COH")
    a = [r["human"]["coherence"] for r in first]
    b = [r["human"]["coherence"] for r in second]
    expected = stats.pearsonr(a, b)[0]  # with two annotators, each one's "others" is the other
    assert [x["annotator"] for x in coh["per_annotator"]] == ["file one.jsonl", "file two.jsonl"]
    assert [x["value"] for x in coh["per_annotator"]] == pytest.approx([expected, expected])
    assert coh["value"] == pytest.approx(expected) and coh["n_annotators"] == 2
