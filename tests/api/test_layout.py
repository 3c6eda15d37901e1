"""Each app owns its API: ``studies.api`` (the shared plumbing and the studies app's own
routes) never imports ``annotation`` or ``learned``, whose APIs register their routes on
the project's router (``evalsite.api_urls``)."""

from __future__ import annotations

import ast
from pathlib import Path

from evalsite import api_urls

STUDIES_API = Path(__file__).resolve().parents[2] / "studies" / "api"


def imported_modules(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def test_studies_api_imports_neither_annotation_nor_learned() -> None:
    reached = {
        f"{path.relative_to(STUDIES_API.parent.parent)}: {name}"
        for path in STUDIES_API.rglob("*.py")
        for name in imported_modules(path)
        if name.split(".")[0] in ("annotation", "learned")
    }
    assert not reached


def test_the_project_router_registers_every_app_in_the_api_roots_order() -> None:
    prefixes = [prefix for prefix, _, _ in api_urls.router.registry]
    assert prefixes == [
        "datasets",
        "imports",
        "uploads",
        "documents",
        "outputs",
        "judgments",
        "aspects",
        "templates",
        "runs",
        "endpoints",
        "learned",
        "studies",
        "campaigns",
        "annotate/campaigns",
        "annotate/assignments",
    ]
