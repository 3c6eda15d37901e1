"""Default task kinds, aspects and prompt templates (GPTScore Tables 1, 11, 12 and
G-Eval's SummEval prompts), transcribed into ``defaults.json``.

:func:`load_defaults` works on the historical models a data migration receives, so it
writes the version-1 history rows itself instead of relying on ``save()``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

DEFAULTS_FILE = Path(__file__).with_name("defaults.json")
ROLE_GROUPS = ("researcher", "annotator")


def read_defaults() -> dict[str, Any]:
    return json.loads(DEFAULTS_FILE.read_text(encoding="utf-8"))


def load_defaults(apps: Any) -> None:
    """Create the default rows that do not exist yet (idempotent)."""
    data = read_defaults()
    task_model = apps.get_model("studies", "TaskKind")
    aspect_model = apps.get_model("studies", "Aspect")
    aspect_version_model = apps.get_model("studies", "AspectVersion")
    template_model = apps.get_model("studies", "PromptTemplate")
    template_version_model = apps.get_model("studies", "PromptTemplateVersion")
    group_model = apps.get_model("auth", "Group")

    for role in ROLE_GROUPS:
        group_model.objects.get_or_create(name=role)

    tasks = {}
    for row in data["tasks"]:
        tasks[row["code"]], _ = task_model.objects.get_or_create(
            code=row["code"], defaults={"name": row["name"], "description": row["description"]}
        )

    aspects = {}
    for row in data["aspects"]:
        fields = {k: row[k] for k in ("name", "definition", "scale_min", "scale_max", "anchors")}
        aspect, created = aspect_model.objects.get_or_create(
            code=row["code"], defaults={**fields, "source": row.get("source", ""), "version": 1}
        )
        if created:
            aspect_version_model.objects.create(aspect=aspect, version=1, **fields)
            aspect.tasks.set([tasks[code] for code in row["tasks"]])
        aspects[row["code"]] = aspect

    for row in data["templates"]:
        key = {
            "task": tasks[row["task"]],
            "aspect": aspects[row["aspect"]] if row["aspect"] else None,
            "dimension": row["dimension"],
            "kind": row["kind"],
            "setting": row["setting"],
            "variant": row["variant"],
        }
        template, created = template_model.objects.get_or_create(
            **key,
            defaults={
                "text": row["text"],
                "target": row["target"],
                "source": row.get("source", ""),
                "notes": row.get("notes", ""),
                "version": 1,
            },
        )
        if created:
            template_version_model.objects.create(
                template=template, version=1, text=row["text"], target=row["target"]
            )
