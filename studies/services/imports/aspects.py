"""The aspects an import writes into: the ones it creates for new score names, the wider
copies it makes when asked to widen, and the linear maps of the scores it rescales."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.db import IntegrityError, transaction

import studies.services.imports.scales as scales
from studies.models import Aspect, TaskKind
from studies.permissions import owned_aspects
from studies.services.imports.labels import NewKind
from studies.services.imports.options import ImportOptions, ImportSummary, ImportValidationError
from studies.services.imports.records import LineError
from studies.services.imports.validate import Plan, new_aspect_fields


def resolve_aspects(
    plan: Plan, options: ImportOptions, summary: ImportSummary
) -> dict[str, Aspect]:
    resolved: dict[str, Aspect] = {}
    task = TaskKind.objects.get(code=options.task)
    for name, aspect in plan.aspects.items():
        low, high = plan.observed_range[name]
        if aspect is None:
            kind = plan.kinds[name]
            scale_min, scale_max = scales.rounded_range(low, high)
            fields = new_aspect_fields(name)
            aspect = Aspect(
                **{**fields, "code": free_code(fields["code"], options.owner)},
                owner=options.owner,
                definition=f"Imported from {options.file_name}; edit this definition.",
                scale_min=scale_min,
                scale_max=scale_max,
                kind=kind.kind,
                labels=list(kind.labels),
                positive=kind.positive,
                source=f"created by import of {options.file_name}",
            )
            aspect._changed_by = options.owner
            try:
                with transaction.atomic():  # a savepoint: the import goes on after a clash
                    aspect.save()
            except IntegrityError:
                aspect = _created_meanwhile(name, fields["key"], low, high, options, kind)
            else:
                summary.aspects_created.append(aspect.code)
                summary.scales.append(_created(aspect, name, kind, plan, low, high))
            aspect.tasks.add(task)
        elif (
            options.widen_aspects
            and not aspect.is_labelled
            and name in plan.valued  # an aspect pairs name alone has no values to hold
            and name.lower() not in options.rescale
            and not scales.holds(aspect, low, high)
        ):
            aspect = _wider_aspect(aspect, low, high, options, summary, name)
        resolved[name] = aspect
    return resolved


def _created(aspect: Aspect, name: str, kind: NewKind, plan: Plan, low: float, high: float) -> str:
    """What the summary says of an aspect the import created."""
    if kind.kind == Aspect.Kind.SCALE and name not in plan.valued:
        return (
            f"created {aspect.code} with the scale {scales.fmt_range(low, high)}, the "
            f"default: the file names {name} for pairwise preferences only"
        )
    if kind.kind == Aspect.Kind.SCALE:
        return (
            f"created {aspect.code} with the scale "
            f"{scales.fmt_range(aspect.scale_min, aspect.scale_max)} "
            f"from the file's {name} values ({scales.fmt_range(low, high)})"
        )
    return f"created {aspect.code}, {kind.describe()}, from the file's {name} values"


def _created_meanwhile(
    name: str, key: str, low: float, high: float, options: ImportOptions, kind: NewKind
) -> Aspect:
    """The aspect another import of the same owner created for ``name`` between this
    import's validation and its write (two uploads at once): used when this file's
    scores fit its scale (its labels), else a located error (the whole import is rolled
    back)."""
    aspect = owned_aspects(options.owner).filter(owner=options.owner, key=key).first()
    field_name = f"human.{name}"
    if aspect is None:
        raise ImportValidationError(
            [
                LineError(
                    0,
                    field_name,
                    f"the aspect for {name!r} "
                    "clashed with one created at the same moment; "
                    "import the file again",
                )
            ]
        )
    if aspect.kind != kind.kind or (aspect.is_labelled and list(kind.labels) != aspect.labels):
        raise ImportValidationError(
            [
                LineError(
                    0,
                    field_name,
                    f"another import created {aspect.code} at the same moment as another "
                    "kind of aspect, or with other labels; import the file again",
                )
            ]
        )
    if not aspect.is_labelled and not scales.holds(aspect, low, high):
        raise ImportValidationError(
            [
                LineError(
                    0,
                    field_name,
                    (
                        f"another import created {aspect.code} at the same moment with the scale "
                        f"{scales.fmt_range(aspect.scale_min, aspect.scale_max)}, which does not hold this "
                        f"file's values ({scales.fmt_range(low, high)}); import the file again with "
                        "--rescale or --widen-aspects"
                    ),
                )
            ]
        )
    return aspect


def free_code(code: str, owner: Any) -> str:
    """``code`` cut to the field's 32 characters, numbered if the owner's or a shared
    aspect holds it."""
    code = code[:32] or "ASPECT"
    candidate, n = code, 1
    while owned_aspects(owner).filter(code=candidate).exists():
        n += 1
        candidate = f"{code[: 31 - len(str(n))]}_{n}"
    return candidate


def _wider_aspect(
    aspect: Aspect,
    low: float,
    high: float,
    options: ImportOptions,
    summary: ImportSummary,
    file_key: str,
) -> Aspect:
    """The copy of ``aspect`` whose scale also covers ``low..high`` (made once, then
    found again by its name on a re-import)."""
    scale_min, scale_max = scales.rounded_range(
        min(low, aspect.scale_min), max(high, aspect.scale_max)
    )
    name, code = scales.wider_name(aspect.name, aspect.code, scale_min, scale_max)
    wider = owned_aspects(options.owner).filter(name=name).first()
    if wider is None:
        wider = Aspect(
            code=free_code(code, options.owner),
            name=name,
            owner=options.owner,
            definition=aspect.definition,
            anchors=aspect.anchors,
            scale_min=scale_min,
            scale_max=scale_max,
            source=f"{aspect.code} widened by import of {options.file_name}",
        )
        wider._changed_by = options.owner
        wider.save()
        wider.tasks.set(aspect.tasks.all())
        summary.aspects_created.append(wider.code)
    elif not scales.holds(wider, low, high):  # edited since it was made
        raise ImportValidationError(
            [
                LineError(
                    0,
                    f"human.{file_key}",
                    f"the wider aspect {wider.code} exists with the scale "
                    f"{scales.fmt_range(wider.scale_min, wider.scale_max)}, which does not "
                    f"cover the file's values {scales.fmt_range(low, high)}",
                )
            ]
        )
    summary.scales.append(
        f"{file_key} ({scales.fmt_range(low, high)}) imported into {wider.code} "
        f"({scales.fmt_range(wider.scale_min, wider.scale_max)}), a wider copy of {aspect.code}"
    )
    return wider


def rescalers(
    plan: Plan, options: ImportOptions, summary: ImportSummary
) -> dict[str, Callable[[float], float]]:
    """File key -> the linear map of its stated source range onto its aspect's scale."""
    maps = {}
    for name, aspect in plan.aspects.items():
        source = options.rescale.get(name.lower())
        if source is None or aspect is None:
            continue
        target = (aspect.scale_min, aspect.scale_max)
        maps[name] = scales.linear(source, target)
        summary.scales.append(
            f"{name} rescaled linearly from {scales.fmt_range(*source)} "
            f"onto {aspect.code}'s scale {scales.fmt_range(*target)}"
        )
    return maps
