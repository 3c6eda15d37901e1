"""``pip install ./client`` works in a fresh virtual environment (no Django, no project):
the package installs from PyPI's setuptools and httpx, imports, knows its version and
ships its type marker. About fifteen seconds (pip needs PyPI)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys

from tests.conftest import ROOT

CLIENT = ROOT / "client"
CHECK = """
import importlib.metadata as metadata, sys
import concordia_client
from concordia_client import Client
assert not any(name.split(".")[0] in ("django", "studies", "scoring") for name in sys.modules)
files = {str(f) for f in metadata.files("concordia-client")}
print(concordia_client.__version__, metadata.version("concordia-client"),
      "concordia_client/py.typed" in files, metadata.requires("concordia-client"))
"""


def test_pip_installs_the_client_into_a_fresh_venv_where_it_imports_with_its_version(tmp_path):
    source = tmp_path / "client"  # a copy: pip builds in the source tree (build/, egg-info)
    shutil.copytree(
        CLIENT, source, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__")
    )
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    install = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "-q"]
        + ["--disable-pip-version-check", str(source)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert install.returncode == 0, install.stdout + install.stderr
    done = subprocess.run([str(python), "-c", CHECK], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    version = re.search(
        r'__version__ = "(.+)"', (CLIENT / "src/concordia_client/_version.py").read_text()
    )
    assert version is not None
    assert done.stdout.strip().split(maxsplit=3) == [
        version[1],
        version[1],
        "True",
        "['httpx<1,>=0.27']",
    ]
