"""One registry of typed runners: a toy metric registered here (and taken out after) shows
up everywhere metrics are listed — METRICS, the form's and the API's choices, the
command's choices, the per-aspect rule, the run page's label — and its runs go to the
queue it declares."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from scoring.metrics.base import Item, ScoreResult
from studies.api.serializers.runs import RunCreateSerializer
from studies.forms import RunForm
from studies.management.commands.run_metric import Command
from studies.models import Dataset, MetricRun, MetricScore, Output
from studies.services import queue
from studies.services.options import Option
from studies.services.runs import (
    METRICS,
    Runner,
    RunRequest,
    execute_run,
    label_of,
    metric_choices,
    per_aspect,
    queue_for,
    start_requested,
    start_run,
)
from studies.services.runs.gptscore import SETTING
from studies.services.runs.registry import register, runner, unregister
from studies.services.runs.types import ModelFactory, Plan, Scorer
from tests.conftest import record
from tests.factories import import_jsonl

pytestmark = pytest.mark.django_db


def _build(dataset: Dataset, request: RunRequest, user: Any = None) -> Plan:
    config = {"metric": request.metric, "limit_docs": request.limit_docs, "aspect": request.aspect}
    return Plan(request.metric, f"{request.metric}:{request.aspect or 'all'}", config)


def _prepare(run: MetricRun, todo: list[Output], model_factory: ModelFactory | None) -> Scorer:
    def score(items: list[Item]) -> list[ScoreResult]:
        return [ScoreResult(i.key, float(len(i.hypothesis))) for i in items]

    return score


TOY_CPU = Runner(
    names=("toycount",),
    label="Toy character count",
    hint="(a test's)",
    build=_build,
    prepare=_prepare,
    queue="cpu",
    checks_model=False,
)
TOY_GPU = Runner(
    names=("toyjudge",),
    label="Toy judge",
    build=_build,
    prepare=_prepare,
    queue="gpu",
    per_aspect=True,
    options=(SETTING,),  # GPTScore's, declared once: read by the toy too
)


@pytest.fixture
def toys():  # type: ignore[no-untyped-def]
    register(TOY_CPU)
    register(TOY_GPU)
    yield
    unregister(TOY_CPU)
    unregister(TOY_GPU)


@pytest.fixture
def toy_dataset(write_jsonl, cast):  # type: ignore[no-untyped-def]
    return import_jsonl(
        write_jsonl([record(f"d{d}", f"s{s}") for d in range(2) for s in range(2)]),
        "toy",
        cast["owner"],
    )


def _form(dataset: Dataset, **data: Any) -> RunForm:
    base = {"model": "default", "k": 0, "setting": "IST", "dimension": "src_hypo"}
    return RunForm({**base, **data}, dataset=dataset)


def test_a_registered_metric_is_listed_everywhere_and_gone_once_unregistered(toys, toy_dataset):
    assert {"toycount", "toyjudge"} <= set(METRICS)
    assert ("toycount", "Toy character count (a test's)") in metric_choices()
    assert ("toyjudge", "Toy judge") in list(RunForm.base_fields["metric"].choices)
    assert _form(toy_dataset, metric="toycount").is_valid()
    api = RunCreateSerializer().fields["metric"].choices
    assert api["toycount"] == "Toy character count (a test's)" and "toyjudge" in api
    assert RunCreateSerializer(data={"dataset": toy_dataset.pk, "metric": "toyjudge"}).is_valid()
    parser = Command().create_parser("manage.py", "run_metric")
    (action,) = [a for a in parser._actions if "--metric" in a.option_strings]
    assert {"toycount", "toyjudge"} <= set(action.choices)  # type: ignore[arg-type]
    # an option's help names the runners that read it, wherever it is derived
    assert (
        RunForm(dataset=toy_dataset)
        .fields["setting"]
        .help_text.startswith("GPTScore and Toy judge: ")
    )
    assert RunCreateSerializer().fields["setting"].help_text.startswith("GPTScore and Toy judge: ")
    (flag,) = [a for a in parser._actions if "--setting" in a.option_strings]
    assert flag.help.startswith("GPTScore and Toy judge: ")  # type: ignore[union-attr]

    unregister(TOY_CPU)
    unregister(TOY_GPU)
    assert "toycount" not in METRICS and runner("toyjudge") is None
    assert "toycount" not in dict(metric_choices())
    assert "toycount" not in RunCreateSerializer().fields["metric"].choices
    assert not _form(toy_dataset, metric="toycount").is_valid()
    assert RunForm(dataset=toy_dataset).fields["setting"].help_text.startswith("GPTScore: ")


def test_the_per_aspect_rule_follows_the_runner(toys, toy_dataset):
    assert per_aspect("toyjudge") and not per_aspect("toycount")
    form = _form(toy_dataset, metric="toyjudge")
    assert not form.is_valid()
    assert (
        "Choose at least one aspect for GPTScore or G-Eval or Pairwise judge or Yes/no judge or Toy judge."
        in form.errors["aspects"]
    )
    aspects = list(form.fields["aspects"].queryset.order_by("code")[:2])  # type: ignore[attr-defined]
    assert len(aspects) == 2
    runs = start_requested(toy_dataset, RunRequest(metric="toyjudge"), aspects)
    assert sorted(r.label for r in runs) == sorted(f"toyjudge:{a.code}" for a in aspects)
    (single,) = start_requested(toy_dataset, RunRequest(metric="toycount"), aspects)
    assert single.label == "toycount:all"
    with pytest.raises(
        CommandError, match="--aspect for gptscore and geval and pairwise and yesno and toyjudge"
    ):
        call_command("run_metric", "--dataset", toy_dataset.name, "--metric", "toyjudge")


def test_runs_go_to_the_queue_their_runner_declares(
    toys, toy_dataset, django_capture_on_commit_callbacks, monkeypatch
):
    sent: list[tuple[str, int]] = []
    monkeypatch.setattr(queue, "send", lambda name, *args, **kw: sent.append((name, args[0])))
    assert (queue_for("toycount"), queue_for("toyjudge")) == ("cpu", "gpu")
    with django_capture_on_commit_callbacks(execute=True):
        cpu = start_run(toy_dataset, RunRequest(metric="toycount"))
        gpu = start_run(toy_dataset, RunRequest(metric="toyjudge", aspect="coherence"))
    assert sent == [(queue.RUN_METRIC_CPU, cpu.pk), (queue.RUN_METRIC, gpu.pk)]


def test_a_toy_run_scores_and_its_page_shows_the_runner_label(toys, toy_dataset, client, cast):
    run = start_run(toy_dataset, RunRequest(metric="toycount"), enqueue=False)
    assert execute_run(run.pk) == "succeeded"
    assert MetricScore.objects.filter(run=run, value__isnull=False).count() == 4
    assert label_of("toycount") == "Toy character count"
    client.force_login(cast["owner"])
    page = client.get(reverse("studies:run-detail", args=[run.pk])).content.decode()
    assert "Toy character count against the document's references" in page


def test_a_name_is_served_by_one_runner_only(toys):
    clash = Runner(names=("toycount",), label="Again", build=_build, prepare=_prepare)
    with pytest.raises(ValueError, match="toycount"):
        register(clash)
    register(TOY_CPU)  # the same runner again changes nothing
    assert runner("toycount") is TOY_CPU


def test_an_option_is_declared_once_and_carried_by_the_request(toys):
    # another meaning under a name a runner already declares is refused …
    other = Option("setting", str, "VAL", "another setting", choices=("VAL",))
    clash = Runner(names=("toyclash",), label="C", build=_build, prepare=_prepare, options=(other,))
    with pytest.raises(ValueError, match="declared otherwise before: setting"):
        register(clash)
    # … and so is an option RunRequest, the typed carrier, has no field for
    loose = Option("toy_knob", int, 1, "a knob nothing carries")
    lost = Runner(names=("toylost",), label="L", build=_build, prepare=_prepare, options=(loose,))
    with pytest.raises(ValueError, match="does not carry: toy_knob"):
        register(lost)
    assert runner("toyclash") is None and runner("toylost") is None


def test_the_learned_app_registers_its_runner_when_apps_are_ready():
    found = runner("learned")
    assert found is not None and found.build.__module__ == "learned.runners"
    assert found.queue == "gpu" and not found.checks_model
