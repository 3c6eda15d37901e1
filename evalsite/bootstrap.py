"""Set up the project's virtual environment before Django is imported (stdlib only).

``python3 manage.py demo`` and ``python3 manage.py runtests`` work on a fresh clone with
nothing but Python 3.11: when Django is not importable from the running interpreter,
this module creates ``.venv``, installs the project into it (the CPU build of torch
first, pinned, so pip never pulls CUDA wheels) and re-executes the command there.
The install is skipped when ``pyproject.toml`` has not changed since the last one.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV = Path(os.environ.get("CONCORDIA_VENV", ROOT / ".venv"))
TORCH_PIN = "torch==2.13.0"
_STAMP = VENV / ".concordia-installed"


def _venv_python() -> Path:
    return VENV / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def _wanted_stamp() -> str:
    digest = hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()
    return f"{digest} {TORCH_PIN}"


def _log(message: str) -> None:
    sys.stderr.write(f"[concordia setup] {message}\n")
    sys.stderr.flush()


def install() -> None:
    """Create ``.venv`` if needed and install the project with its dev extras."""
    python = _venv_python()
    if not python.exists():
        _log(f"creating virtual environment in {VENV}")
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
    if _STAMP.exists() and _STAMP.read_text() == _wanted_stamp():
        return
    pip = [str(python), "-m", "pip", "install", "--disable-pip-version-check", "-q"]
    _log(f"installing {TORCH_PIN} (CPU build) and the project's dependencies; takes a few minutes")
    subprocess.run([*pip, "--upgrade", "pip"], check=True)
    subprocess.run([*pip, TORCH_PIN], check=True)
    subprocess.run([*pip, "-e", f"{ROOT}[dev]"], check=True)
    _STAMP.write_text(_wanted_stamp())


def ensure_environment(argv: list[str]) -> None:
    """Re-execute ``argv`` inside ``.venv`` unless this interpreter already has Django."""
    in_venv = Path(sys.prefix).resolve() == VENV.resolve()
    if in_venv:
        if _STAMP.exists() and _STAMP.read_text() != _wanted_stamp():
            install()  # pyproject.toml changed since the last install
        return
    if importlib.util.find_spec("django") is not None:
        return  # the user runs an environment of their own
    install()
    python = str(_venv_python())
    os.execv(python, [python, *argv])
