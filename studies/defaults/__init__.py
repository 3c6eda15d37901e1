"""Default task kinds, aspects and prompt templates (GPTScore Tables 1, 11, 12 and
G-Eval's SummEval prompts), transcribed into ``defaults.json``.

:func:`load_defaults` works on the historical models a data migration receives, so it
writes the version-1 history rows itself instead of relying on ``save()``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from studies.models import aspect_key

DEFAULTS_FILE = Path(__file__).with_name("defaults.json")
ROLE_GROUPS = ("researcher", "annotator")


def read_defaults() -> dict[str, Any]:
    return json.loads(DEFAULTS_FILE.read_text(encoding="utf-8"))


KIND_FIELDS = ("kind", "labels", "positive", "ordered")  # optional in defaults.json


def _kind_fields(row: dict[str, Any], has_kind: bool) -> dict[str, Any]:
    """A default aspect's kind and labels (a scale unless ``defaults.json`` says so),
    for models that have them."""
    return {k: row[k] for k in KIND_FIELDS if k in row} if has_kind else {}


def load_defaults(apps: Any) -> None:
    """Create the default rows that do not exist yet (idempotent)."""
    data = read_defaults()
    task_model = apps.get_model("studies", "TaskKind")
    aspect_model = apps.get_model("studies", "Aspect")
    aspect_version_model = apps.get_model("studies", "AspectVersion")
    template_model = apps.get_model("studies", "PromptTemplate")
    template_version_model = apps.get_model("studies", "PromptTemplateVersion")
    group_model = apps.get_model("auth", "Group")
    # the historical model of the first data migration has no owner or key yet
    has_owner = any(f.name == "owner" for f in aspect_model._meta.get_fields())
    # nor a kind (binary and categorical aspects came with migration 0014)
    has_kind = any(f.name == "kind" for f in aspect_model._meta.get_fields())

    for role in ROLE_GROUPS:
        group_model.objects.get_or_create(name=role)

    tasks = {}
    for row in data["tasks"]:
        tasks[row["code"]], _ = task_model.objects.get_or_create(
            code=row["code"], defaults={"name": row["name"], "description": row["description"]}
        )

    # bulk_create, not save(): the same code then runs on historical models (migration)
    # and on the real ones (tests that restore defaults), whose save() would version twice.
    aspects = (
        {a.code: a for a in aspect_model.objects.filter(owner__isnull=True)}
        if has_owner
        else {a.code: a for a in aspect_model.objects.all()}
    )
    new_aspects = [
        aspect_model(
            code=row["code"],
            source=row.get("source", ""),
            version=1,
            **({"key": aspect_key(row["name"])} if has_owner else {}),
            **{k: row[k] for k in ("name", "definition", "scale_min", "scale_max", "anchors")},
            **_kind_fields(row, has_kind),
        )
        for row in data["aspects"]
        if row["code"] not in aspects
    ]
    aspect_model.objects.bulk_create(new_aspects)
    created = aspect_model.objects.filter(code__in=[a.code for a in new_aspects])
    for aspect in created.filter(owner__isnull=True) if has_owner else created:
        row = next(r for r in data["aspects"] if r["code"] == aspect.code)
        aspect_version_model.objects.create(
            aspect=aspect,
            version=1,
            **{k: row[k] for k in ("name", "definition", "scale_min", "scale_max", "anchors")},
            **_kind_fields(row, has_kind),
        )
        aspect.tasks.set([tasks[code] for code in row["tasks"]])
        aspects[aspect.code] = aspect

    for row in data["templates"]:
        key = {
            "task": tasks[row["task"]],
            "aspect": aspects[row["aspect"]] if row["aspect"] else None,
            "dimension": row["dimension"],
            "kind": row["kind"],
            "setting": row["setting"],
            "variant": row["variant"],
        }
        if template_model.objects.filter(**key).exists():
            continue
        template_model.objects.bulk_create(
            [
                template_model(
                    **key,
                    text=row["text"],
                    target=row["target"],
                    source=row.get("source", ""),
                    notes=row.get("notes", ""),
                    version=1,
                )
            ]
        )
        template_version_model.objects.create(
            template=template_model.objects.get(**key),
            version=1,
            text=row["text"],
            target=row["target"],
        )
