"""studies reaches annotation and learned only through :mod:`studies.hooks`: the apps fill
the hooks in ``AppConfig.ready()``, no studies module imports them, and with the hooks
empty (a deployment without those apps) the studies services still work."""

from __future__ import annotations

import ast
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pytest

from annotation import hooks as annotation_hooks
from learned import hooks as learned_hooks
from studies import hooks, tasks
from studies.models import Aspect, Dataset, StepsGeneration, Study, TaskKind
from studies.services import queue
from studies.services.analysis import dashboards
from studies.services.analysis.params import MatrixParams
from studies.services.catalog import steps
from studies.services.imports import ImportOptions, import_file
from studies.services.studies import overview
from tests.conftest import ROOT, record

FORBIDDEN = ("annotation", "learned")


def _imported_modules(path: Path) -> list[tuple[int, str]]:
    """Every module a file names in an import, anywhere in it (inside functions and under
    ``if TYPE_CHECKING:`` too), relative imports resolved."""
    package = list(path.relative_to(ROOT).with_suffix("").parts)[:-1]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            anchor = package[: len(package) - node.level + 1] if node.level else []
            found.append(
                (node.lineno, ".".join([*anchor, *([node.module] if node.module else [])]))
            )
    return found


def test_no_studies_module_imports_annotation_or_learned():
    files = sorted((ROOT / "studies").rglob("*.py"))
    assert len(files) > 50
    offending = [
        f"{path.relative_to(ROOT)}:{line}: {name}"
        for path in files
        for line, name in _imported_modules(path)
        if name.split(".")[0] in FORBIDDEN
    ]
    assert offending == []


def test_the_apps_fill_every_hook_once_ready():
    assert all(len(hook) >= 1 for hook in hooks.HOOKS), hooks.HOOKS
    assert hooks.judgment_source("campaign") is annotation_hooks.CAMPAIGN_SOURCE
    assert learned_hooks.TRAINED_SPLIT in list(hooks.trained_splits)
    assert annotation_hooks.study_campaigns in list(hooks.study_campaigns)
    assert annotation_hooks.demo_campaign in list(hooks.demo_setup)
    before = [len(hook) for hook in hooks.HOOKS]
    annotation_hooks.register()  # a second ready() adds nothing
    learned_hooks.register()
    assert [len(hook) for hook in hooks.HOOKS] == before


@pytest.fixture
def no_hooks(monkeypatch):  # type: ignore[no-untyped-def]
    """The hooks as a deployment without annotation and learned has them: empty."""
    for hook in hooks.HOOKS:
        monkeypatch.setattr(hook, "_providers", [])


@pytest.fixture
def judged(write_jsonl, cast):  # type: ignore[no-untyped-def]
    records = [
        record(doc=f"d{d}", system=f"s{s}", human={"coherence": float((d + s) % 5 + 1)})
        for d in range(4)
        for s in range(3)
    ]
    path = write_jsonl(records, name="judged.jsonl")
    options = ImportOptions(
        dataset="judged",
        task="summarization",
        file_format="jsonl",
        file_name=path.name,
        owner=cast["owner"],
    )
    import_file(path, options)
    dataset = Dataset.objects.get(name="judged")
    return dataset, Study.objects.create(name="hooked", dataset=dataset, owner=cast["owner"])


def test_studies_services_work_with_the_hooks_empty(judged, no_hooks):
    dataset, study = judged
    plain = dashboards.frame_for(dataset, MatrixParams())
    asked = MatrixParams(exclude_flagged=True, weight_by_competence=True)
    frame = dashboards.frame_for(dataset, asked)  # nobody flagged, every judgment weighs 1
    assert frame.n_outputs == plain.n_outputs == 12
    assert np.array_equal(frame.human, plain.human, equal_nan=True)
    assert dashboards.frame_for(dataset, MatrixParams(test_of=123)).n_outputs == 0
    assert dashboards.excluded_annotators(dataset, asked) == []
    assert dashboards.trained_metrics(dataset) == []
    sources = [value for value, _ in dashboards._judgment_sources(dataset)]
    assert sources and all(value.startswith(("import:", "file:")) for value in sources)
    assert dashboards.source_filter(dataset, "campaign:1") is dashboards.NO_JUDGMENT
    assert overview(study).campaigns == []


def test_the_hooks_answer_for_a_dataset_without_campaigns_or_learned_metrics(judged):
    dataset, study = judged
    assert hooks.flagged(dataset) == set()
    assert hooks.weights(dataset) == {}
    assert hooks.held_out_documents(dataset, 123) == []  # no such learned metric
    assert hooks.trained_models(dataset) == []
    assert hooks.campaigns(study) == []
    assert dashboards.source_filter(dataset, "campaign:123") is dashboards.NO_JUDGMENT


def test_the_matrix_and_the_steps_are_enqueued_by_name(
    judged, monkeypatch, cast, django_capture_on_commit_callbacks
):
    dataset, _ = judged
    sent: list[tuple[str, tuple[object, ...], str | None]] = []

    def send(name: str, *args: object, queue: str | None = None) -> None:
        sent.append((name, args, queue))

    monkeypatch.setattr(queue, "send", send)
    assert dashboards.request_matrix(dataset, MatrixParams())
    # routed by CELERY_TASK_ROUTES to the light queue (tests/test_celery.py)
    assert sent == [(tasks.compute_correlations.name, (dataset.pk, asdict(MatrixParams())), None)]
    version = Aspect.objects.get(owner__isnull=True, code="COH").current_version()
    task = TaskKind.objects.get(code="summarization")
    with django_capture_on_commit_callbacks(execute=True):
        steps.request_generation(task, version, seed=3, user=cast["owner"])
        assert len(sent) == 1  # once the transaction commits
    request = StepsGeneration.objects.get(requested_by=cast["owner"])
    args = (task.pk, version.pk, "default", 3, False, cast["owner"].pk, False, request.pk)
    assert sent[1] == (tasks.generate_steps.name, args, "gpu")
