"""CSV exports a spreadsheet cannot turn into formulas, and one column per run."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command, get_commands, load_command_class
from django.urls import URLPattern, URLResolver, get_resolver, resolve, reverse
from hypothesis import given, settings
from hypothesis import strategies as st

from studies.models import Aspect, Dataset, MetricRun, MetricScore, Output
from studies.services.analysis import tables
from studies.services.analysis.tables import to_csv
from studies.services.csvfile import neutralise_cell, restore_cell
from studies.services.imports import ImportOptions, export_dataset, import_file
from tests.conftest import record
from tests.factories import import_jsonl, synthetic_records

pytestmark = pytest.mark.django_db

HOSTILE = {
    "doc_id": '=HYPERLINK("http://x")',
    "system_id": "+sys",
    "source": "-2+3",
    "references": ["@SUM(A1)", "\tcmd", "\rcr", "'=quoted already", "plain"],
    "output": "=1+1",
}


def run_import(path: Path, dataset: str, file_format: str = "jsonl") -> None:
    import_file(
        path,
        ImportOptions(
            dataset=dataset, task="summarization", file_format=file_format, file_name=path.name
        ),
    )


def csv_rows(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


@pytest.fixture
def hostile(write_jsonl) -> Dataset:
    rows = [
        record(**HOSTILE, human={"coherence": 2.0}, metrics={"delta": -0.5}),  # type: ignore[arg-type]
        record("plain", "s1", context={"k": -1}, metrics={"delta": 0.25}),
    ]
    run_import(write_jsonl(rows), "hostile")
    return Dataset.objects.get(name="hostile")


def test_csv_export_neutralises_formula_text_but_not_numbers(hostile):
    rows = csv_rows("".join(export_dataset(hostile, "csv")))
    row = next(r for r in rows if r["system_id"] != "s1")
    assert row["doc_id"] == '\'=HYPERLINK("http://x")'
    assert (row["system_id"], row["source"], row["output"]) == ("'+sys", "'-2+3", "'=1+1")
    assert [row[f"reference_{i}"] for i in range(1, 6)] == [
        "'@SUM(A1)",
        "'\tcmd",
        "'\rcr",
        "''=quoted already",
        "plain",
    ]
    assert row["metric_delta"] == "-0.5" and row["human_coherence"] == "2.0"
    plain = next(r for r in rows if r["system_id"] == "s1")
    assert plain["context"] == '{"k": -1}' and plain["doc_id"] == "plain"
    for cell in (
        value for r in rows for key, value in r.items() if not key.startswith(("metric_", "human_"))
    ):
        assert not cell.startswith(("=", "+", "-", "@", "\t", "\r")), cell


def test_raw_csv_writes_cells_as_stored(hostile, tmp_path):
    rows = csv_rows("".join(export_dataset(hostile, "csv", raw=True)))
    row = next(r for r in rows if r["system_id"] != "s1")
    assert (row["doc_id"], row["output"]) == (HOSTILE["doc_id"], "=1+1")
    target = tmp_path / "raw.csv"
    call_command("export_dataset", "hostile", "--format", "csv", "--raw-csv", "-o", str(target))
    assert target.read_bytes().decode() == "".join(export_dataset(hostile, "csv", raw=True))
    call_command("export_dataset", "hostile", "--format", "csv", "-o", str(target))
    assert "'=1+1" in target.read_bytes().decode()


def test_export_url_neutralises_unless_raw(client, cast, hostile):
    hostile.owner = cast["owner"]
    hostile.save()
    client.force_login(cast["owner"])
    url = reverse("studies:dataset-export", args=[hostile.pk, "csv"])
    safe = csv_rows(b"".join(client.get(url).streaming_content).decode())
    raw = csv_rows(b"".join(client.get(url + "?raw=1").streaming_content).decode())
    assert "'=1+1" in [r["output"] for r in safe] and "=1+1" not in [r["output"] for r in safe]
    assert "=1+1" in [r["output"] for r in raw]


def test_neutralised_csv_imports_back_to_the_original_text(hostile, tmp_path):
    path = tmp_path / "copy.csv"
    path.write_text("".join(export_dataset(hostile, "csv")), encoding="utf-8", newline="")
    run_import(path, "copy", "csv")
    copy = Dataset.objects.get(name="copy")
    assert list(export_dataset(copy, "jsonl")) == list(export_dataset(hostile, "jsonl"))
    assert Output.objects.filter(document__dataset=copy, text="=1+1").exists()


def test_raw_csv_import_loses_only_the_quote_of_a_quoted_formula(hostile, tmp_path):
    """The importer takes one ' off a cell that starts with ' and then a formula
    character, so a raw export round-trips except for such cells (use the default CSV
    or JSONL for exact round trips)."""
    path = tmp_path / "raw.csv"
    path.write_text("".join(export_dataset(hostile, "csv", raw=True)), encoding="utf-8", newline="")
    run_import(path, "copy", "csv")
    copy = Dataset.objects.get(name="copy")
    expected = "".join(export_dataset(hostile, "jsonl")).replace("'=quoted", "=quoted")
    assert "".join(export_dataset(copy, "jsonl")) == expected


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from("'=+-@\t\rab1 "), max_size=8))
def test_restore_undoes_neutralise_exactly(text):
    safe = neutralise_cell(text)
    assert restore_cell(safe) == text
    assert not safe.startswith(("=", "+", "-", "@", "\t", "\r"))


def test_correlation_csv_neutralises_labels_but_not_values():
    cell = {
        "value": -0.25,
        "low": -0.5,
        "high": 0.1,
        "n_outputs": 4,
        "p_vs_best": None,
        "coverage_outputs": 4,
        "coverage_documents": 1,
        "judged_outputs": 4,
        "judged_documents": 1,
        "coverage": 1.0,
        "partial": False,
        "n_shared_with_best": None,
    }
    result = {
        "columns": [{"aspect": {"code": "=COH"}, "cells": [cell, cell]}],
        "runs": [
            {"label": "@evil", "metric": "m", "model": "-m", "setting": "", "dimension": ""},
            {"label": "a\rb", "metric": "+m", "model": None, "setting": "", "dimension": ""},
        ],
    }
    safe = list(csv.reader(io.StringIO(to_csv(result), newline="")))
    assert safe[0][5] == "'=COH" and safe[1][:3] == ["'@evil", "m", "'-m"]
    assert safe[1][5:8] == ["-0.250000", "-0.500000", "0.100000"]
    assert safe[2][:3] == ["a\rb", "'+m", ""] and len(safe) == 3
    raw = list(csv.reader(io.StringIO(to_csv(result, raw=True), newline="")))
    assert raw[0][5] == "=COH" and raw[1][0] == "@evil" and raw[2][1] == "+m"


def test_runs_sharing_a_label_export_as_separate_columns_and_round_trip(write_jsonl, tmp_path):
    run_import(
        write_jsonl(
            [
                record("d1", "s1", metrics={"rouge1": 0.5}),
                record("d1", "s2", metrics={"rouge1": 0.25}),
            ]
        ),
        "shared",
    )
    dataset = Dataset.objects.get(name="shared")
    imported = MetricRun.objects.get(dataset=dataset, label="rouge1")
    computed = MetricRun.objects.create(
        dataset=dataset, metric="rouge1", label="rouge1", status=MetricRun.Status.SUCCEEDED
    )
    for output in Output.objects.filter(document__dataset=dataset):
        MetricScore.objects.create(
            run=computed, output=output, value=1.0 if output.system_id == "s1" else 0.0
        )
    for file_format in ("jsonl", "csv"):
        text = "".join(export_dataset(dataset, file_format))
        if file_format == "jsonl":
            metrics = [json.loads(line)["metrics"] for line in text.splitlines()]
            assert metrics == [
                {f"rouge1:run{imported.pk}": 0.5, f"rouge1:run{computed.pk}": 1.0},
                {f"rouge1:run{imported.pk}": 0.25, f"rouge1:run{computed.pk}": 0.0},
            ]
        else:
            header = text.splitlines()[0].split(",")
            assert f"metric_rouge1:run{imported.pk}" in header
            assert f"metric_rouge1:run{computed.pk}" in header
        path = tmp_path / f"shared.{file_format}"
        path.write_text(text, encoding="utf-8")
        run_import(path, f"copy-{file_format}", file_format)
        copy = Dataset.objects.get(name=f"copy-{file_format}")
        assert "".join(export_dataset(copy, file_format)) == text


# --- every CSV the product writes -----------------------------------------------------

TRIGGERS = ("=", "+", "-", "@", "\t", "\r")
NUMBER = re.compile(r"-?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?")
HOSTILE_DOC = '=HYPERLINK("http://x","y")'
HOSTILE_SYSTEMS = {"sys0": "+cmd|' /C calc'!A0", "sys1": "@SUM(1+1)"}
# How to reach hostile text in each CSV route (URL name -> URLs) and command (name ->
# argument lists). A route or command that writes CSV and is missing here fails
# test_every_csv_route_and_command_is_checked: add it, so that it is checked too.
CSV_ROUTES: dict[str, Any] = {
    "studies:dataset-export": lambda d, r: [reverse("studies:dataset-export", args=[d.pk, "csv"])],
    "studies:correlations-export": lambda d, r: [
        reverse("studies:correlations-export", args=[d.pk, "csv"]) + "?level=dataset"
    ],
    "studies:correlations-paper-export": lambda d, r: [
        reverse("studies:correlations-paper-export", args=[d.pk, "csv"]) + f"?table={t}"
        for t in tables.PAPER_TABLES
    ],
    "studies:dataset-report-card-export": lambda d, r: [
        reverse("studies:dataset-report-card-export", args=[d.pk, "csv"])
        + "?level=dataset&runs=all"
    ],
    "api:dataset-export": lambda d, r: [
        reverse("api:dataset-export", args=[d.pk]) + "?file_format=csv"
    ],
    "api:run-scores-export": lambda d, r: [
        reverse("api:run-scores-export", args=[r.pk]) + "?file_format=csv"
    ],
    "api:correlations-export": lambda d, r: [
        reverse("api:correlations-export", args=[d.pk]) + "?file_format=csv&level=dataset"
    ],
}
CSV_COMMANDS: dict[str, Any] = {  # a command writing to a file writes to ``target``
    "export_dataset": lambda d, target: [[str(d.pk), "--format", "csv", "-o", str(target)]],
    "correlations": lambda d, target: [
        ["--dataset", str(d.pk), "--format", "csv", "--level", "dataset"]
    ],
}
CSV_READING_COMMANDS = {"import_records"}  # their CSV option names what they read
OUR_APPS = ("studies", "annotation", "learned")


@pytest.fixture
def hostile_world(write_jsonl, cast, settings) -> tuple[Dataset, MetricRun]:
    """An owner's scored dataset whose ids, run labels, model, aspect code and score error
    all start like formulas, with one negative score."""
    settings.CONCORDIA = {**settings.CONCORDIA, "DASHBOARD_INLINE_SECONDS": 1000.0}
    records = synthetic_records(n_docs=6, n_systems=3)
    for r in records:
        r["doc_id"] = HOSTILE_DOC if r["doc_id"] == "doc00" else r["doc_id"]
        r["system_id"] = HOSTILE_SYSTEMS.get(str(r["system_id"]), r["system_id"])
    path = write_jsonl(records, name="world.jsonl")
    dataset = import_jsonl(path, "world", cast["owner"])
    good = MetricRun.objects.get(dataset=dataset, label="good")
    good.label, good.config = "-good", {"model": "=MODEL()", "setting": "VAL"}
    good.save()
    MetricRun.objects.filter(dataset=dataset, label="noise").update(label="@noise")
    Aspect.objects.filter(code="COH").update(code="=COH")
    scores = MetricScore.objects.filter(run=good).order_by("pk")
    scores.filter(pk=scores[0].pk).update(value=None, error="=ERR()")
    scores.filter(pk=scores[1].pk).update(value=-0.5)
    dataset.bump_data_version()
    return dataset, good


def csv_cells(text: str) -> list[str]:
    return [cell for row in csv.reader(io.StringIO(text, newline="")) for cell in row]


def assert_neutralised(text: str, where: str) -> None:
    """No cell of ``text`` starts like a formula unless it is a number, and some hostile
    text reached it (neutralised)."""
    cells = csv_cells(text)
    unsafe = [c for c in cells if c.startswith(TRIGGERS) and not NUMBER.fullmatch(c)]
    assert not unsafe, f"{where} writes formula cells: {unsafe[:5]}"
    assert any(c.startswith("'") and c.lstrip("'").startswith(TRIGGERS) for c in cells), (
        f"{where}: no hostile text reached this CSV; fill it from the hostile world"
    )


def csv_routes() -> dict[str, str]:
    """Every URL pattern that may answer with CSV, found by walking the resolver: its
    name or pattern mentions export or csv. URL name -> pattern."""
    found = {}

    def walk(patterns: list[Any], prefix: str, namespace: str) -> None:
        for p in patterns:
            if isinstance(p, URLResolver):
                inner = ":".join(n for n in (namespace, p.namespace) if n)
                walk(p.url_patterns, prefix + str(p.pattern), inner)
            elif isinstance(p, URLPattern):
                route = prefix + str(p.pattern)
                name = f"{namespace}:{p.name}" if namespace else str(p.name)
                if re.search("export|csv", route + " " + name, re.IGNORECASE):
                    found[name] = route

    walk(get_resolver().url_patterns, "", "")
    return found


def csv_api_operations() -> set[str]:
    """The API operations whose schema says they answer with text/csv (their paths)."""
    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator().get_schema(request=None, public=True)
    return {
        path
        for path, operations in schema["paths"].items()
        for operation in operations.values()
        for response in operation.get("responses", {}).values()
        if "text/csv" in response.get("content", {})
    }


def csv_commands() -> set[str]:
    """Our management commands with an option that chooses CSV."""
    found = set()
    for name, app in get_commands().items():
        if app not in OUR_APPS:
            continue
        parser = load_command_class(app, name).create_parser("manage.py", name)
        for action in parser._actions:
            if "csv" in (action.choices or ()) or any("csv" in o for o in action.option_strings):
                found.add(name)
    return found


def test_every_csv_route_and_command_is_checked():
    routes = csv_routes()
    assert set(routes) == set(CSV_ROUTES), (
        f"CSV routes not in CSV_ROUTES: {sorted(set(routes) - set(CSV_ROUTES))}; "
        f"gone: {sorted(set(CSV_ROUTES) - set(routes))}"
    )
    operations = csv_api_operations()
    assert operations
    for path in operations:
        assert resolve(re.sub(r"\{[^}]+\}", "1", path)).view_name in routes, (
            f"the API operation {path} answers text/csv but no CSV route covers it"
        )
    commands = csv_commands() - CSV_READING_COMMANDS
    assert commands == set(CSV_COMMANDS), (
        f"CSV commands not in CSV_COMMANDS: {sorted(commands - set(CSV_COMMANDS))}"
    )


def test_only_the_csv_module_writes_csv():
    root = Path(__file__).resolve().parents[2]
    writers = [
        str(path.relative_to(root))
        for app in (*OUR_APPS, "evalsite", "scoring")
        for path in (root / app).rglob("*.py")
        if re.search(r"csv\.(writer|DictWriter)\(", path.read_text(encoding="utf-8"))
    ]
    assert writers == ["studies/services/csvfile.py"], writers


def test_every_csv_route_and_command_neutralises_hostile_text(
    hostile_world, client, cast, tmp_path
):
    dataset, run = hostile_world
    client.force_login(cast["owner"])
    for name, fill in CSV_ROUTES.items():
        for url in fill(dataset, run):
            response = client.get(url)
            assert response.status_code == 200, (url, response.status_code)
            assert response["Content-Type"].startswith("text/csv"), url
            body = b"".join(response.streaming_content) if response.streaming else response.content
            assert_neutralised(body.decode("utf-8"), f"{name} ({url})")
    for name, fill in CSV_COMMANDS.items():
        target = tmp_path / f"{name}.csv"
        for args in fill(dataset, target):
            stdout = io.StringIO()
            call_command(name, *args, stdout=stdout)
            text = target.read_text(encoding="utf-8") if target.exists() else stdout.getvalue()
            assert_neutralised(text, f"manage.py {name} {' '.join(args)}")


def test_the_run_scores_csv_neutralises_ids_and_errors_but_keeps_numbers(
    hostile_world, client, cast
):
    dataset, run = hostile_world
    client.force_login(cast["owner"])
    url = reverse("api:run-scores-export", args=[run.pk]) + "?file_format=csv"
    rows = csv_rows(b"".join(client.get(url).streaming_content).decode())
    assert {r["doc_key"] for r in rows} >= {"'" + HOSTILE_DOC}
    assert {r["system_id"] for r in rows} >= {"'" + s for s in HOSTILE_SYSTEMS.values()}
    assert "'=ERR()" in [r["error"] for r in rows]
    assert "-0.5" in [r["value"] for r in rows]


def test_the_latex_legend_states_the_rule_the_matrix_marks_by():
    """† marks p ≤ ALPHA against the best (analysis/matrix.py); the LaTeX legend and the
    page say the same, not "p < 0.05"."""
    from studies.services.analysis import matrix

    dagger = next(line for line in tables.LATEX_LEGEND if "dagger" in line)
    assert matrix.ALPHA == 0.05 and r"$p \le 0.05$" in dagger and "p < 0.05" not in dagger
    page = (Path(__file__).parents[2] / "templates/studies/correlations.html").read_text()
    assert "paired bootstrap, p ≤ 0.05" in page
