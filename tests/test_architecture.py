"""The architecture checks CI runs (ARCHITECTURE.md): import-linter's layer contracts and
``scripts/check_architecture.py`` (cycles, imports inside functions, private names taken
from another module, test modules imported, module length, ``# fmt: skip``), each run on the project, and the checker shown to catch what it checks."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import textwrap
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _checker() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "check_architecture", ROOT / "scripts" / "check_architecture.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_layer_contracts_hold() -> None:
    lint = Path(sys.executable).with_name("lint-imports")
    done = subprocess.run([str(lint)], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout


def test_the_project_passes_its_own_checker(capsys: pytest.CaptureFixture[str]) -> None:
    assert _checker().main([]) == 0, capsys.readouterr().out


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))


def test_the_checker_finds_a_cycle_an_inner_import_and_a_long_module(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    check = _checker()
    _write(
        tmp_path,
        {
            "studies/__init__.py": "",
            "studies/a.py": "from studies import b\n",
            "studies/b.py": "import studies.c\n",
            "studies/c.py": "from studies.a import x\nx = 1\n",
            # a TYPE_CHECKING import never runs: no cycle through it
            "studies/d.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
            "    from studies import e\n",
            "studies/e.py": "from studies import d\n",
            "studies/f.py": "def g():\n    from studies import e\n    import torch\n",
            "studies/long.py": "x = 1\n" * 601,
            "studies/apps.py": "class C:\n    def ready(self):\n        from studies import e\n",
        },
    )
    monkeypatch.setattr(check, "ROOT", tmp_path)
    assert check.main([]) == 1
    out = capsys.readouterr().out
    assert "import cycles: 1 (largest 3 modules)" in out
    assert "cycle: studies.a studies.b studies.c" in out
    assert "studies/f.py:2: imports studies inside a function" in out
    assert "torch" not in out  # a listed heavy library may load lazily
    assert "apps.py" not in out  # AppConfig.ready() is where Django wants registrations
    assert "studies/long.py: 601 lines" in out


def test_the_fmt_skip_count_is_a_ratchet(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    check = _checker()
    _write(tmp_path, {"studies/__init__.py": "", "studies/t.py": "x = [1,2]  # fmt: skip\n"})
    monkeypatch.setattr(check, "ROOT", tmp_path)
    assert check.main([]) == 1
    assert "'# fmt: skip' or '# fmt: off': 1 (at most 0)" in capsys.readouterr().out


def test_the_checker_refuses_a_private_name_taken_from_another_module(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    check = _checker()
    _write(
        tmp_path,
        {
            "studies/__init__.py": "",
            "studies/a.py": "def _helper():\n    pass\n\n\nfrom studies.a import _helper\n",
            "studies/b.py": "from studies.a import _helper\n",
            "studies/c.py": "from .a import _helper as h, __doc__\n",
            # a private module is a module, not a name
            "studies/lm/__init__.py": "from studies.lm import _causal\n",
            "studies/lm/_causal.py": "",
            "studies/d.py": "from studies.lm import _causal\n",
            # tests and bench scripts may (white-box tests, timings of a helper)
            "tests/test_a.py": "from studies.a import _helper\n",
            "bench/b.py": "from studies.a import _helper\n",
        },
    )
    monkeypatch.setattr(check, "ROOT", tmp_path)
    assert check.main([]) == 1
    out = capsys.readouterr().out
    assert "private names imported from another module: 2" in out
    assert "studies/b.py:1: imports the private studies.a._helper" in out
    assert "studies/c.py:1: imports the private studies.a._helper" in out


def test_the_checker_refuses_a_test_module_imported_by_another_module(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    check = _checker()
    _write(
        tmp_path,
        {
            "tests/__init__.py": "",
            "tests/factories.py": "def build():\n    pass\n",
            "tests/conftest.py": "from tests.test_b import helper\n",
            "tests/test_a.py": "from tests.factories import build\nfrom tests.test_b import helper\n",
            "tests/sub/__init__.py": "",
            "tests/sub/test_c.py": "from tests import test_b as b\n\n\n"
            "def test_x():\n    import tests.sub.test_d\n",
            "tests/sub/test_d.py": "import tests.sub.test_d\n",  # itself: no finding
            "tests/test_b.py": "def helper():\n    pass\n",
        },
    )
    monkeypatch.setattr(check, "ROOT", tmp_path)
    assert check.main([]) == 1
    out = capsys.readouterr().out
    assert "test modules imported by another module: 4" in out
    assert "tests/conftest.py:1: imports the test module tests.test_b" in out
    assert "tests/test_a.py:2: imports the test module tests.test_b" in out
    assert "tests/sub/test_c.py:1: imports the test module tests.test_b" in out
    assert "tests/sub/test_c.py:5: imports the test module tests.sub.test_d" in out
    assert "factories" not in out and "test_d.py" not in out


def test_a_light_worker_loads_every_task_without_torch() -> None:
    """Every worker imports every app's tasks; only those that train or score with a model
    may load torch, so a light worker computing matrices stays small."""
    code = (
        "import os, sys; os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'evalsite.settings');"
        "import django; django.setup();"
        "import studies.tasks, annotation.tasks, learned.tasks, evalsite.urls;"
        "print(sorted(m for m in ('torch', 'transformers') if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip().splitlines()[-1] == "[]"
