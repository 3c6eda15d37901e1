#!/usr/bin/env python3
"""Django's command-line utility for Concordia.

Run with any Python 3.11: it sets up ``.venv`` on first use (see evalsite/bootstrap.py).
"""

import importlib.util
import os
import sys


def main() -> None:
    # Loaded by path: importing the evalsite package would import Celery before it exists.
    here = os.path.dirname(os.path.abspath(__file__))
    spec = importlib.util.spec_from_file_location(
        "concordia_bootstrap", os.path.join(here, "evalsite", "bootstrap.py")
    )
    assert spec is not None and spec.loader is not None
    bootstrap = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bootstrap)
    bootstrap.ensure_environment([os.path.abspath(__file__), *sys.argv[1:]])
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalsite.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
