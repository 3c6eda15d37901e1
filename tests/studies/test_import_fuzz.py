"""Property-based fuzzing of the import service (hypothesis), on whichever database the
suite runs on (SQLite by default, PostgreSQL in CI).

Random valid files, and the same files broken at random (bytes inserted, deleted or
replaced; a value swapped for any JSON value, a repeated key, deep nesting, NUL,
lone surrogates, out-of-scale scores, numeric ids; CSV cells replaced, added or
dropped), go through ``import_file``. The properties:

- a valid file imports fully (every output, judgment and metric score);
- anything else raises ImportValidationError whose every error names a line (or the
  file, for file-level problems such as an empty file), with text a database can store;
- an error changes no row: counts are the same before and after.

The number of cases run is printed in pytest's terminal summary ("import fuzzing: ...").
"""

from __future__ import annotations

import csv
import io
import itertools
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from studies.models import Judgment, MetricScore, Output
from studies.services.imports import ImportOptions, ImportValidationError, import_file
from tests.conftest import FUZZ_CASES, row_counts

pytestmark = pytest.mark.django_db

EXAMPLES = 100  # per format: about 10 s each on SQLite
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
FILE_LEVEL = ("the file is empty",)  # the only errors that are about no line
ASPECTS = ("coherence", "fluency")
METRICS = ("m1", "rouge-1")
_names = itertools.count()

# text a database can store (no NUL, no lone surrogates)
storable = st.characters(exclude_categories=("Cs",), exclude_characters="\x00")
ids = st.text(alphabet="ab1=-'", min_size=1, max_size=3).filter(str.strip)
texts = st.text(alphabet=storable, min_size=1, max_size=12).filter(str.strip)
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**400), max_value=10**400)
    | st.floats(allow_nan=False)
    | st.text(max_size=6),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=8,
)
hostile_strings = st.sampled_from(
    ["", " ", "\x00", "a\x00b", "\ud800", "x\udfffy", "=1+1", "'", "\r", "\n", '"', "1e308"]
)


@st.composite
def datasets(draw: Any) -> list[dict[str, Any]]:
    """Consistent records: one source, references and context per document, one text
    per (document, system); scores inside 1–5 (the default aspects' scale)."""
    docs = draw(
        st.dictionaries(ids, st.tuples(texts, st.lists(texts, max_size=2)), min_size=1, max_size=3)
    )
    context = draw(
        st.none() | st.dictionaries(st.sampled_from("kv"), st.integers() | texts, max_size=2)
    )
    records = []
    for (doc, system), output in draw(
        st.dictionaries(
            st.tuples(st.sampled_from(sorted(docs)), ids), texts, min_size=1, max_size=6
        )
    ).items():
        source, references = docs[doc]
        human = draw(st.dictionaries(st.sampled_from(ASPECTS), st.floats(1, 5) | st.none()))
        metrics = draw(st.dictionaries(st.sampled_from(METRICS), st.floats(-1e6, 1e6) | st.none()))
        records.append(
            {
                "doc_id": doc,
                "system_id": system,
                "source": source,
                "references": references,
                "output": output,
                "human": human,
                "metrics": metrics,
                "context": context,
            }
        )
    return records


def to_jsonl(records: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records).encode("utf-8")


def csv_rows(records: list[dict[str, Any]]) -> list[list[str]]:
    n_refs = max(len(r["references"]) for r in records)
    header = ["doc_id", "system_id", "source", *[f"reference_{i + 1}" for i in range(n_refs)]]
    header += [
        "output",
        *[f"human_{a}" for a in ASPECTS],
        *[f"metric_{m}" for m in METRICS],
        "context",
    ]
    rows = [header]
    for r in records:
        refs = r["references"] + [""] * (n_refs - len(r["references"]))
        scores = [r["human"].get(a) for a in ASPECTS] + [r["metrics"].get(m) for m in METRICS]
        context = "" if r["context"] is None else json.dumps(r["context"])
        # text cells starting with a formula character carry the exporter's quote
        text = [_quoted(t) for t in (r["doc_id"], r["system_id"], r["source"], *refs)]
        rows.append(
            [
                *text,
                _quoted(r["output"]),
                *["" if s is None else repr(s) for s in scores],
                _quoted(context),
            ]
        )
    return rows


def _quoted(text: str) -> str:
    from studies.services.csvfile import neutralise_cell

    return neutralise_cell(text)


def to_csv(rows: list[list[str]]) -> bytes:
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n", quoting=csv.QUOTE_ALL).writerows(rows)
    # a lone surrogate a mutation put in a cell becomes the invalid UTF-8 a broken file holds
    return buffer.getvalue().encode("utf-8", "surrogatepass")


@st.composite
def byte_mutation(draw: Any, data: bytes) -> bytes:
    start = draw(st.integers(0, len(data)))
    end = draw(st.integers(start, min(len(data), start + 8)))
    insert = draw(
        st.binary(max_size=6)
        | st.sampled_from([b"\x00", b"\xff", b"\n", b'"', b",", b"{", b"\\ud800"])
    )
    return data[:start] + insert + data[end:]


@st.composite
def jsonl_mutation(draw: Any, records: list[dict[str, Any]]) -> bytes:
    records = json.loads(json.dumps(records))
    index = draw(st.integers(0, len(records) - 1))
    target = records[index]
    kind = draw(
        st.sampled_from(["value", "score", "id", "duplicate", "deep", "unknown", "hostile"])
    )
    field = draw(st.sampled_from(sorted(target)))
    if kind == "value":
        target[field] = draw(json_values)
    elif kind == "score":
        target["human"][draw(st.sampled_from(ASPECTS))] = draw(
            st.floats(allow_nan=False) | st.sampled_from([0, 6, -7, 99, 1e308, "high"])
        )
    elif kind == "id":
        target[draw(st.sampled_from(["doc_id", "system_id"]))] = draw(st.integers() | st.floats())
    elif kind == "unknown":
        target[draw(st.text(min_size=1, max_size=5))] = 1
    elif kind == "hostile":
        target[draw(st.sampled_from(["doc_id", "source", "output"]))] = draw(hostile_strings)
    # ASCII escapes: a lone surrogate travels as \ud800, as a real file would carry it
    lines = [json.dumps(r) for r in records]
    if kind == "duplicate":
        lines[index] = (
            lines[index][:-1] + f", {json.dumps(field)}: {json.dumps(draw(json_values))}}}"
        )
    elif kind == "deep":
        depth = draw(st.sampled_from([70, 1000, 10_000]))
        lines[index] = lines[index][:-1] + ', "context": ' + "[" * depth + "]" * depth + "}"
    return "".join(line + "\n" for line in lines).encode()


@st.composite
def csv_mutation(draw: Any, rows: list[list[str]]) -> bytes:
    rows = [list(r) for r in rows]
    row = draw(st.sampled_from(rows))
    kind = draw(st.sampled_from(["cell", "add", "drop", "score"]))
    position = draw(st.integers(0, len(row) - 1))
    if kind == "cell":
        row[position] = draw(hostile_strings | st.text(max_size=5))
    elif kind == "add":
        row.insert(position, draw(st.text(max_size=3)))
    elif kind == "drop":
        del row[position]
    else:
        row[rows[0].index(f"human_{draw(st.sampled_from(ASPECTS))}")] = draw(
            st.sampled_from(["0", "6", "-7", "99", "1e308", "inf", "nan", "1" + "0" * 400])
        )
    return to_csv(rows)


def check(
    path: Path, content: bytes, file_format: str, valid: bool, records: list[dict[str, Any]]
) -> None:
    """Import ``content``; assert the properties; count the case."""
    path.write_bytes(content)
    name = f"fuzz-{next(_names)}"
    before = row_counts()
    options = ImportOptions(
        dataset=name, task="summarization", file_format=file_format, file_name=path.name
    )
    try:
        import_file(path, options)
    except ImportValidationError as exc:
        assert not valid, f"a valid file was rejected: {exc}"
        assert exc.errors
        for error in exc.errors:
            text = str(error)
            assert error.line > 0 or error.message.startswith(FILE_LEVEL), text
            assert text.startswith(f"line {error.line}" if error.line else "file"), text
            assert "\x00" not in text
            text.encode("utf-8")  # storable: no lone surrogate
        assert row_counts() == before, f"rows changed after: {exc}"
        FUZZ_CASES[f"{file_format} rejected"] += 1
        return
    FUZZ_CASES[f"{file_format} imported"] += 1
    if valid:
        outputs = Output.objects.filter(document__dataset__name=name)
        assert outputs.count() == len(records)
        judgments = sum(v is not None for r in records for v in r["human"].values())
        scores = sum(v is not None for r in records for v in r["metrics"].values())
        assert Judgment.objects.filter(output__in=outputs).count() == judgments
        assert MetricScore.objects.filter(output__in=outputs).count() == scores


@FUZZ
@given(data=st.data())
def test_fuzzed_jsonl_imports_fully_or_is_rejected_with_located_errors(tmp_path, data):
    records = data.draw(datasets())
    valid = data.draw(st.integers(0, 2)) == 0  # a third valid, two thirds broken
    content = to_jsonl(records)
    if not valid:
        content = data.draw(byte_mutation(content) | jsonl_mutation(records))
    check(tmp_path / "fuzz.jsonl", content, "jsonl", valid, records)


@FUZZ
@given(data=st.data())
def test_fuzzed_csv_imports_fully_or_is_rejected_with_located_errors(tmp_path, data):
    records = data.draw(datasets())
    valid = data.draw(st.integers(0, 2)) == 0  # a third valid, two thirds broken
    rows = csv_rows(records)
    content = to_csv(rows)
    if not valid:
        content = data.draw(byte_mutation(content) | csv_mutation(rows))
    check(tmp_path / "fuzz.csv", content, "csv", valid, records)
