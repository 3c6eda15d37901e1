"""The client stays true to the server: every operation it calls is in the OpenAPI
schema with the parameters and body fields it sends, every answer it reads is the schema
component its dataclass models, and the values it offers for a choice are the schema's.
A route, parameter, field or choice the server changes fails here."""

from __future__ import annotations

import dataclasses
import inspect
import re
import string
from typing import Any, get_args

import pytest
from concordia_client import _uploads, client, models, operations

pytestmark = pytest.mark.django_db


def resolve(schema: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        node = schema["components"]["schemas"][node["$ref"].rsplit("/", 1)[1]]
    return node


def component_name(node: dict[str, Any]) -> str:
    return str(node["$ref"].rsplit("/", 1)[1])


def parameters(schema: dict[str, Any], op: operations.Operation) -> dict[str, dict[str, Any]]:
    entry = schema["paths"][op.path][op.method.lower()]
    return {(p["in"], p["name"]): p for p in entry.get("parameters", [])}


def answered_component(schema: dict[str, Any], op: operations.Operation) -> str:
    """The component of a 2xx answer's items: the object itself, a list's or a page's."""
    responses = schema["paths"][op.path][op.method.lower()]["responses"]
    status = min(s for s in responses if s.startswith("2"))  # a 202 says "computing"
    node = responses[status]["content"]["application/json"]["schema"]
    if "$ref" in node and "results" in resolve(schema, node).get("properties", {}):
        node = resolve(schema, node)["properties"]["results"]["items"]
    elif node.get("type") == "array":
        node = node["items"]
    return component_name(node)


@pytest.mark.parametrize("op", operations.OPERATIONS, ids=lambda op: f"{op.method} {op.path}")
def test_each_operation_the_client_calls_is_in_the_schema_with_what_it_sends(schema, op):
    assert op.path in schema["paths"], f"the server has no {op.path}"
    assert op.method.lower() in schema["paths"][op.path], f"{op.path} takes no {op.method}"
    params = parameters(schema, op)
    path_args = {name for _, name, _, _ in string.Formatter().parse(op.path) if name}
    assert path_args == {name for where, name in params if where == "path"}
    query = {name for where, name in params if where == "query"}
    assert op.query <= query, f"not in the schema: {sorted(op.query - query)}"
    headers = {name for where, name in params if where == "header"}
    assert op.headers <= headers, f"headers not in the schema: {sorted(op.headers - headers)}"
    body = schema["paths"][op.path][op.method.lower()].get("requestBody")
    if op.content_type == operations.CHUNK:  # a raw body of bytes, no fields
        assert body is not None and op.content_type in body["content"], body
        assert body["content"][op.content_type]["schema"]["format"] == "binary"
        return
    if not op.body:
        assert body is None or not body.get("required"), "the server needs a body"
        return
    assert body is not None and op.content_type in body["content"]
    fields = resolve(schema, body["content"][op.content_type]["schema"])
    assert op.body <= set(fields["properties"]), sorted(op.body - set(fields["properties"]))
    assert set(fields.get("required", [])) <= op.body, "the client cannot send a required field"


@pytest.mark.parametrize(
    "op", [op for op in operations.OPERATIONS if op.response], ids=lambda op: op.path
)
def test_each_answer_the_client_reads_is_the_component_it_models(schema, op):
    assert answered_component(schema, op) == op.response


MODELS = [cls for _, cls in inspect.getmembers(models, inspect.isclass) if hasattr(cls, "SCHEMA")]


@pytest.mark.parametrize("cls", MODELS, ids=lambda cls: cls.__name__)
def test_each_dataclass_field_is_in_its_schema_component_and_always_there(schema, cls):
    component = schema["components"]["schemas"][cls.SCHEMA]
    properties, required = set(component["properties"]), set(component.get("required", []))
    fields = [f for f in dataclasses.fields(cls) if f.name != "raw"]
    assert {f.name for f in fields} <= properties, {f.name for f in fields} - properties
    without_default = {
        f.name
        for f in fields
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    }
    assert without_default <= required, f"may be absent: {without_default - required}"


def test_every_component_an_operation_answers_has_a_dataclass():
    modelled = {cls.SCHEMA for cls in MODELS}
    assert {op.response for op in operations.OPERATIONS if op.response} <= modelled


def enum(schema: dict[str, Any], node: dict[str, Any]) -> set[str]:
    node = resolve(schema, node)
    if "allOf" in node:
        node = resolve(schema, node["allOf"][0])
    return set(node["enum"])


@pytest.mark.parametrize(
    ("choices", "op", "name"),
    [
        (models.Level, operations.CORRELATIONS, "level"),
        (models.Coefficient, operations.CORRELATIONS, "coef"),
        (models.Average, operations.CORRELATIONS, "average"),
        (models.Ties, operations.CORRELATIONS, "ties"),
        (models.Flagged, operations.CORRELATIONS, "flagged"),
        (models.Weights, operations.CORRELATIONS, "weights"),
        (models.TableFormat, operations.CORRELATIONS_EXPORT, "file_format"),
        (models.DataFormat, operations.DATASET_EXPORT, "file_format"),
        (models.DataFormat, operations.RUN_SCORES_EXPORT, "file_format"),
    ],
)
def test_the_choices_the_client_offers_are_the_schemas(schema, choices, op, name):
    parameter = parameters(schema, op)[("query", name)]
    assert set(get_args(choices)) == enum(schema, parameter["schema"])


@pytest.mark.parametrize(
    ("choices", "component"),
    [
        (models.RunStatus, "Run"),
        (models.ImportStatus, "ImportJob"),
        (models.UploadStatus, "UploadSession"),
    ],
)
def test_the_statuses_the_client_knows_are_the_schemas(schema, choices, component):
    status = schema["components"]["schemas"][component]["properties"]["status"]
    assert set(get_args(choices)) == enum(schema, status)


def test_the_client_calls_every_operation_of_its_table_and_no_other_path():
    source = inspect.getsource(client) + inspect.getsource(_uploads)
    named = {name for name, value in vars(operations).items() if value in operations.OPERATIONS}
    assert named == set(re.findall(r"\bops\.([A-Z_]+)\b", source))
    assert not re.search(r"[\"']/api/", source)  # every path comes from the table


def test_the_tune_operation_sends_every_field_the_servers_tuners_declare(schema):
    # the tuners' options are the server's (derived from their declarations): a tuner's
    # new option fails here until the client's table lists it, so ``tune(**options)``
    # can send it
    body = schema["paths"][operations.TUNE.path]["post"]["requestBody"]["content"]
    fields = resolve(schema, body[operations.JSON]["schema"])
    assert set(fields["properties"]) == operations.TUNE.body


def test_start_run_sends_every_run_option_the_servers_runners_declare(schema):
    # the runs API's fields are derived from the runners' option declarations: a runner's
    # new option fails here until the client's table and start_run's parameters list it
    body = schema["paths"][operations.START_RUNS.path]["post"]["requestBody"]["content"]
    fields = resolve(schema, body[operations.JSON]["schema"])
    assert set(fields["properties"]) == operations.START_RUNS.body
    parameters = set(inspect.signature(client.Client.start_run).parameters) - {"self"}
    assert parameters == operations.START_RUNS.body
