"""G-Eval's evaluation steps: generated once per (task, aspect-definition version) by a
model from the introduction and criteria (greedy, seed recorded), shown and edited by
researchers (an edit is a new version). Generation runs in a worker, never in a request.
"""

from __future__ import annotations

import time
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Max

from scoring.lm.rating import TextGenerator
from scoring.metrics import geval
from studies.models import AspectVersion, EvaluationSteps, PromptTemplate, TaskKind

MAX_NEW_TOKENS = 160  # the paper's steps are about 60-100 tokens


class StepsError(ValueError):
    """Steps that cannot be generated or saved as asked; the message says why."""


def current_steps(task: TaskKind, aspect_version: AspectVersion) -> EvaluationSteps | None:
    """The latest version of the steps for this task and aspect definition, if any."""
    return (
        EvaluationSteps.objects.filter(task=task, aspect_version=aspect_version)
        .order_by("-version")
        .first()
    )


def base_config(task: TaskKind, aspect_version: AspectVersion, **options: Any) -> geval.GEvalConfig:
    """The G-Eval configuration of a task and aspect version, without steps: the task's
    G-Eval template supplies the introduction when there is one."""
    template = PromptTemplate.objects.filter(
        task=task, aspect=aspect_version.aspect, kind=PromptTemplate.Kind.GEVAL
    ).first()
    text = template.current_version().text if template else ""
    introduction, source_label, output_label = geval.introduction_for(task.code, text)
    try:
        scale = geval.integer_scale(aspect_version.scale_min, aspect_version.scale_max)
    except ValueError as exc:
        raise StepsError(str(exc)) from exc
    criteria = geval.criteria_text(
        aspect_version.name, aspect_version.definition, scale, aspect_version.anchors
    )
    return geval.GEvalConfig(
        introduction=introduction, aspect_name=aspect_version.name, criteria=criteria,
        scale=scale, source_label=source_label, output_label=output_label, **options,
    )  # fmt: skip


def _save_version(
    task: TaskKind, aspect_version: AspectVersion, text: str, origin: str, **fields: Any
) -> EvaluationSteps:
    for _attempt in range(3):  # two writers may race for the next version number
        try:
            with transaction.atomic():
                last = EvaluationSteps.objects.filter(
                    task=task, aspect_version=aspect_version
                ).aggregate(top=Max("version"))["top"]
                return EvaluationSteps.objects.create(
                    task=task, aspect_version=aspect_version, version=(last or 0) + 1,
                    text=text, origin=origin, **fields,
                )  # fmt: skip
        except IntegrityError:
            continue
    raise StepsError("Another version of these steps was saved at the same time; try again.")


def generate_steps(
    task: TaskKind,
    aspect_version: AspectVersion,
    model: object,
    *,
    model_info: dict[str, Any],
    seed: int = 0,
    max_new_tokens: int = MAX_NEW_TOKENS,
    force: bool = False,
    user: Any = None,
) -> EvaluationSteps:
    """The current steps, generated now (greedy) when there are none or ``force`` is set."""
    existing = current_steps(task, aspect_version)
    if existing is not None and not force:
        return existing
    if not isinstance(model, TextGenerator):
        raise StepsError(f"{type(model).__name__} cannot generate text for the evaluation steps.")
    config = base_config(task, aspect_version)
    # A plain completion, not a chat turn (see geval.steps_prompt); the model goes on
    # with the first step.
    prompt = geval.steps_prompt(config) + geval.STEPS_PRIMER
    import torch

    torch.manual_seed(seed)  # greedy decoding needs none; recorded for sampled decoders
    started = time.perf_counter()
    generated = model.generate(prompt, max_new_tokens=max_new_tokens)
    text = geval.clean_steps(geval.STEPS_PRIMER.strip() + generated)
    if not text:
        raise StepsError("The model generated no evaluation steps.")
    generation = {**model_info, "prompt": prompt, "output": generated, "chat_template": False,
                  "decoding": "greedy", "seed": seed,
                  "max_new_tokens": max_new_tokens,
                  "seconds": round(time.perf_counter() - started, 3)}  # fmt: skip
    return _save_version(task, aspect_version, text, EvaluationSteps.Origin.GENERATED,
                         generation=generation, created_by=user)  # fmt: skip


def edit_steps(
    task: TaskKind, aspect_version: AspectVersion, text: str, *, user: Any = None
) -> EvaluationSteps:
    """Save a researcher's text as a new version (unchanged text saves nothing)."""
    text = text.replace("\r\n", "\n").strip()
    if not text:
        raise StepsError("The evaluation steps cannot be empty.")
    current = current_steps(task, aspect_version)
    if current is not None and current.text == text:
        return current
    return _save_version(task, aspect_version, text, EvaluationSteps.Origin.EDITED,
                         generation={}, created_by=user)  # fmt: skip


def load_generator(location: str) -> Any:
    from scoring.lm.hf import HFLanguageModel

    return HFLanguageModel(location)


def generate_steps_job(
    task_id: int, aspect_version_id: int, model: str = "default", seed: int = 0,
    force: bool = False, user_id: int | None = None,
) -> int:  # fmt: skip
    """What the Celery task runs: load the model and generate; returns the steps' id."""
    from django.contrib.auth import get_user_model

    from studies.services.models import fingerprint, resolve_model

    user = get_user_model().objects.filter(pk=user_id).first() if user_id else None
    task = TaskKind.objects.get(pk=task_id)
    aspect_version = AspectVersion.objects.select_related("aspect").get(pk=aspect_version_id)
    location, label = resolve_model(model)
    info = {"model": model, "model_label": label, "model_files": fingerprint(location)}
    steps = generate_steps(task, aspect_version, load_generator(location), model_info=info,
                           seed=seed, force=force, user=user)  # fmt: skip
    return steps.pk


def request_generation(
    task: TaskKind, aspect_version: AspectVersion, *, model: str = "default", seed: int = 0,
    force: bool = False, user: Any = None,
) -> None:  # fmt: skip
    """Enqueue the generation on the ``gpu`` queue once the transaction commits."""
    from studies.tasks import generate_steps as task_fn

    args = (task.pk, aspect_version.pk, model, seed, force, getattr(user, "pk", None))
    transaction.on_commit(lambda: task_fn.delay(*args))
