"""A run's options are declared once, by the runners that read them (and every run's in
``runs/options.py``): the run form's fields, the runs API's fields and ``run_metric``'s
flags are derived from the declarations, and RunRequest, the typed carrier, defaults to
what they declare. The names, flags and defaults users know stay as they were."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from django.core.management import call_command
from rest_framework.fields import empty

from studies.api.serializers.runs import RunCreateSerializer
from studies.forms import RunForm
from studies.management.commands import run_metric
from studies.services.runs import RunRequest, run_options
from studies.services.runs.registry import runner
from tests.conftest import record
from tests.factories import import_jsonl

pytestmark = pytest.mark.django_db

# the command's run option flags as users have typed them: none may go
FLAGS = {
    "--setting": "IST",
    "--dimension": "src-hypo",
    "--model": "default",
    "--endpoint": "",
    "--cost-cap": None,
    "--k": 2,
    "--seed": 0,
    "--reduction": "mean",
    "--references": "",
    "--steps": "auto",
    "--weighting": "prob",
    "--estimation": "probs",
    "--require-exact-labels": False,
    "--samples": 20,
    "--pairs": "all",
    "--pairs-per-doc": 10,
    "--campaign": None,
    "--ties": False,
    "--layer": None,
    "--batch-size": 8,
    "--precision": "auto",
    "--limit-docs": None,
}


@pytest.fixture
def dataset(write_jsonl, cast):  # type: ignore[no-untyped-def]
    records = [record(f"d{d}", f"s{s}") for d in range(2) for s in range(2)]
    return import_jsonl(write_jsonl(records), "opts", cast["owner"])


def flags() -> dict[str, Any]:
    parser = run_metric.Command().create_parser("manage.py", "run_metric")
    return {s: a for a in parser._actions for s in a.option_strings}


def test_run_request_defaults_to_what_the_options_declare():
    fields = {f.name: f.default for f in dataclasses.fields(RunRequest)}
    for option in run_options():
        assert fields[option.field] == option.default, option.name


def test_each_runner_declares_the_options_it_reads():
    assert {"setting", "dimension", "k", "references", "reduction"} <= runner("gptscore").fields
    assert {"steps", "weighting", "estimation", "n_samples", "require_exact_labels"} <= (
        runner("geval").fields
    )
    assert {"pairs", "pairs_per_doc", "campaign", "ties"} <= runner("pairwise").fields
    assert runner("bertscore").fields == {"references", "layer"}
    assert not runner("length").fields


def test_the_form_the_api_and_the_command_are_derived_from_the_declarations(dataset):
    form, api, parser = RunForm(dataset=dataset), RunCreateSerializer().fields, flags()
    for option in run_options():
        flag = parser[option.flag]
        assert flag.help.startswith(option.help) or option.help in flag.help
        if option.command_only:  # seed, batch size, reduction, layer: the command's only
            assert option.name not in form.fields and option.name not in api
            continue
        assert form.fields[option.name].initial == option.default
        assert api[option.name].default in (option.default, empty)
        if option.choices:
            assert [c for c, _ in form.fields[option.name].choices] == list(option.choices)
            assert list(api[option.name].choices) == list(option.choices)
    assert form.fields["pairs_per_doc"].label == "k pairs per document"
    assert (api["k"].min_value, api["k"].max_value) == (0, 8)


def test_the_commands_flags_and_defaults_are_those_users_know():
    parser = flags()
    assert {flag: parser[flag].default for flag in FLAGS} == FLAGS
    assert set(parser["--dimension"].choices) == {
        "src-hypo",
        "ref-hypo",
        "hypo-ref",
        "avg-f",
        "hypo",
    }
    assert parser["--samples"].dest == "samples"  # call_command(samples=…) as before


def test_the_form_fills_what_is_left_empty_with_the_declared_default(dataset):
    form = RunForm({"metric": "rouge", "k": "0"}, dataset=dataset)
    assert form.is_valid(), form.errors
    request = form.run_request()
    assert request.k == 0  # given: kept, even when falsy
    assert (request.setting, request.dimension, request.model) == ("IST", "src_hypo", "default")
    assert (request.n_samples, request.pairs_per_doc, request.precision) == (20, 10, "auto")
    assert not RunForm({"metric": "rouge", "k": "9"}, dataset=dataset).is_valid()  # k ≤ 8


def test_the_command_fills_the_request_from_its_flags(dataset, monkeypatch):
    asked: list[RunRequest] = []
    monkeypatch.setattr(run_metric, "start_runs", lambda d, r, **kw: asked.append(r) or [])
    call_command(
        "run_metric",
        *("--dataset", dataset.name, "--metric", "rouge", "--dimension", "ref-hypo"),
        *("--samples", "5", "--references", "max", "--ties", "--layer", "3"),
    )
    (request,) = asked
    assert (request.dimension, request.n_samples, request.ties) == ("ref_hypo", 5, True)
    assert (request.reference_aggregation, request.layer, request.k) == ("max", 3, 2)
