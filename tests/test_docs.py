"""The README stays a five-minute read, the manual in docs/ keeps every setting and
benchmark, and every benchmark runs from the repository root exactly as documented.
(The site itself is built with ``mkdocs build --strict`` in ``.ci/run``: a broken link
or anchor fails CI.)"""

from __future__ import annotations

import ast
import re
import subprocess
import sys

import pytest
import yaml

from tests.conftest import ROOT

DOCS = ROOT / "docs"
BENCHES = sorted(p for p in (ROOT / "bench").glob("[a-z]*.py"))


def environment_variables() -> set[str]:
    """The names ``evalsite/`` reads through its typed readers (``env_int("X", …)``…)."""
    names: set[str] = set()
    for path in (ROOT / "evalsite").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id.startswith("env_")
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
            ):
                names.add(node.args[0].value)
    return names


def test_the_readme_is_short_and_links_only_to_pages_that_exist():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 300
    for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", readme):
        if not target.startswith("http"):
            assert (ROOT / target).exists(), target


def test_every_page_is_in_the_site_navigation():
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())

    def pages(nav: object) -> list[str]:
        if isinstance(nav, str):
            return [nav]
        if isinstance(nav, list):
            return [p for item in nav for p in pages(item)]
        if isinstance(nav, dict):
            return [p for value in nav.values() for p in pages(value)]
        return []

    assert sorted(pages(config["nav"])) == sorted(p.name for p in DOCS.glob("*.md"))


def test_the_configuration_page_lists_every_environment_variable_the_site_reads():
    names = environment_variables()
    assert len(names) > 50 and "SECRET_KEY" in names  # the reader found them
    page = (DOCS / "configuration.md").read_text()
    assert sorted(n for n in names if f"`{n}`" not in page) == []


def test_every_benchmark_is_documented():
    documented = (DOCS / "benchmarks.md").read_text()
    missing = [p.name for p in BENCHES if f".venv/bin/python bench/{p.name}`" not in documented]
    assert missing == []


@pytest.mark.parametrize("bench", [p.name for p in BENCHES])
def test_every_benchmark_runs_as_written(bench):
    """``.venv/bin/python bench/NAME.py --help`` from the root: imports resolve, options parse."""
    done = subprocess.run(
        [sys.executable, f"bench/{bench}", "--help"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "usage:" in done.stdout


def test_the_vllm_command_registers_a_shared_endpoint_it_points_again(db):
    from scoring.lm.served.local_server import VLLMServer
    from studies.management.commands.vllm import Command
    from studies.models import Endpoint

    command = Command()
    first = VLLMServer(ROOT, 8123, model_id="smollm2")  # not started: only its address is read
    command._register("local-vllm", first)
    endpoint = Endpoint.objects.get(name="local-vllm", owner__isnull=True)
    assert (endpoint.base_url, endpoint.model_id) == ("http://127.0.0.1:8123", "smollm2")
    command._register("local-vllm", VLLMServer(ROOT, 8124, model_id="smollm2"))
    endpoint.refresh_from_db()
    assert endpoint.base_url == "http://127.0.0.1:8124" and endpoint.probed_at is None
    assert Endpoint.objects.filter(name="local-vllm").count() == 1
