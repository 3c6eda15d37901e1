"""``python manage.py endpoint add NAME --base-url URL --model-id ID [--api-key-env VAR |
--api-key-stdin] [--owner USERNAME] [--max-concurrency N] [--rpm N] [--tpm N]
[--price-in X --price-out Y] [--batch-price-in X --batch-price-out Y] [--timeout S] [--no-probe] [--keep-existing]``, ``endpoint probe NAME
[--owner USERNAME]``, ``endpoint list``, ``endpoint rekey``.

A key is never an argument (the process list would show it): ``--api-key-env`` names
the variable the workers read it from (a shared endpoint's only, one that
``ENDPOINT_KEY_ENV_ALLOWED`` lists; it is bound to this base URL), ``--api-key-stdin``
reads it from standard input and stores it encrypted. ``rekey`` encrypts every stored
key again with the current ``ENDPOINT_KEY`` (after a rotation: the old key kept in
``ENDPOINT_KEY_PREVIOUS`` until it has run)."""

from __future__ import annotations

import sys
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from scoring.lm.served.probe import IGNORABLE
from studies.models import Endpoint
from studies.services.catalog.endpoints import (
    EndpointProblem,
    create_endpoint,
    find_endpoint,
    probe_endpoint,
    rekey_endpoints,
)


class Command(BaseCommand):
    help = "Add, probe and list served endpoints (OpenAI-compatible: vLLM, SGLang, hosted)."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        add = sub.add_parser("add", help="add an endpoint (probed unless --no-probe)")
        add.add_argument("name")
        add.add_argument("--base-url", required=True, help="e.g. http://gpu-1:8000")
        add.add_argument("--model-id", required=True, help="the model id the server serves")
        key = add.add_mutually_exclusive_group()
        key.add_argument("--api-key-env", default="", help="the workers' variable with the key")
        key.add_argument(
            "--api-key-stdin",
            action="store_true",
            help="read the key from stdin (stored encrypted)",
        )
        add.add_argument("--owner", help="a researcher's username (default: shared)")
        add.add_argument("--max-concurrency", type=int, default=8)
        add.add_argument("--rpm", type=int, help="requests a minute")
        add.add_argument("--tpm", type=int, help="tokens a minute")
        add.add_argument("--price-in", type=float, default=0.0, help="per million input tokens")
        add.add_argument("--price-out", type=float, default=0.0, help="per million output tokens")
        add.add_argument(
            "--batch-price-in", type=float, help="per million input tokens by batch file"
        )
        add.add_argument(
            "--batch-price-out", type=float, help="per million output tokens by batch file"
        )
        add.add_argument("--timeout", type=float, default=60.0, help="seconds per request")
        add.add_argument("--no-probe", action="store_true", help="save without probing")
        add.add_argument(*IGNORE_ARGS, **IGNORE_OPTIONS)  # type: ignore[arg-type]
        add.add_argument(
            "--keep-existing",
            action="store_true",
            help="an endpoint of that name and owner exists already: leave it, exit 0",
        )
        probe = sub.add_parser("probe", help="find out again what an endpoint can do")
        probe.add_argument("name")
        probe.add_argument("--owner", help="whose endpoint (default: the shared one)")
        probe.add_argument(*IGNORE_ARGS, **IGNORE_OPTIONS)  # type: ignore[arg-type]
        sub.add_parser("list", help="every endpoint, with what its probe found")
        sub.add_parser("rekey", help="encrypt every stored key again with ENDPOINT_KEY")

    def handle(self, *args: Any, **opts: Any) -> None:
        try:
            getattr(self, f"do_{opts['action']}")(opts)
        except EndpointProblem as exc:
            raise CommandError(str(exc)) from exc

    def _owner(self, username: str | None) -> Any:
        if not username:
            return None
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"No user named {username!r}.")
        return user

    def do_add(self, opts: dict[str, Any]) -> None:
        owner = self._owner(opts["owner"])
        existing = Endpoint.objects.filter(name=opts["name"], owner=owner).first()
        if existing is not None and opts["keep_existing"]:
            self.stdout.write(f"endpoint {existing.pk} {existing.name} exists; left as it is")
            return
        key = sys.stdin.readline().strip() if opts["api_key_stdin"] else None
        if opts["api_key_stdin"] and not key:
            raise CommandError("--api-key-stdin read no key from standard input.")
        endpoint = create_endpoint(
            opts["name"],
            opts["base_url"],
            opts["model_id"],
            owner=owner,
            api_key=key,
            api_key_env=opts["api_key_env"],
            max_concurrency=opts["max_concurrency"],
            rpm=opts["rpm"],
            tpm=opts["tpm"],
            price_in=opts["price_in"],
            price_out=opts["price_out"],
            batch_price_in=opts["batch_price_in"],
            batch_price_out=opts["batch_price_out"],
            timeout=opts["timeout"],
        )
        self.stdout.write(f"endpoint {endpoint.pk} {endpoint.name} added ({self._where(endpoint)})")
        if not opts["no_probe"]:
            self._probe(endpoint, opts["ignore"])

    def do_probe(self, opts: dict[str, Any]) -> None:
        # the owner's (else a shared one); without --owner: a shared one first, else any
        self._probe(find_endpoint(opts["name"], self._owner(opts["owner"])), opts["ignore"])

    def _probe(self, endpoint: Endpoint, ignore: list[str] | None) -> None:
        if ignore is not None:
            ignore = [name for name in ignore if name != "none"]
        try:
            found = probe_endpoint(endpoint, ignore=ignore)
        except EndpointProblem as exc:
            self.stderr.write(str(exc))
            raise CommandError(f"endpoint {endpoint.name} saved, but its probe failed") from exc
        self.stdout.write(f"probe of {endpoint.name}: {summary(found.as_dict())}")

    def do_list(self, opts: dict[str, Any]) -> None:
        for endpoint in Endpoint.objects.select_related("owner"):
            owner = endpoint.owner.username if endpoint.owner else "shared"
            found = summary(endpoint.capabilities) if endpoint.probed_at else "not probed"
            if endpoint.probe_error:
                found = f"probe failed: {endpoint.probe_error}"
            self.stdout.write(
                f"{endpoint.pk}\t{endpoint.name}\t{owner}\t{self._where(endpoint)}\t{found}"
            )

    def do_rekey(self, opts: dict[str, Any]) -> None:
        done, unreadable = rekey_endpoints()
        self.stdout.write(f"{done} stored key(s) encrypted again with the current ENDPOINT_KEY")
        if unreadable:
            raise CommandError(
                f"{len(unreadable)} stored key(s) no key can read (endpoints "
                f"{', '.join(unreadable)}): store them again"
            )

    def _where(self, endpoint: Endpoint) -> str:
        key = (
            "key stored"
            if endpoint.has_api_key
            else f"key from ${endpoint.api_key_env}"
            if endpoint.api_key_env
            else "no key"
        )
        return f"{endpoint.model_id} at {endpoint.host}, {key}"


IGNORE_ARGS = ("--ignore",)
IGNORE_OPTIONS = {
    "action": "append",
    "choices": [*IGNORABLE, "none"],
    "help": "record this capability as absent, here and at every later probe (repeatable; "
    "'none' ignores nothing again): an endpoint treated as a hosted API's top-k only",
}


def summary(capabilities: dict[str, Any]) -> str:
    """The probe's findings in one line."""
    if not capabilities:
        return "nothing found"
    parts = [
        f"chat top_logprobs {capabilities.get('chat_top_logprobs', 0)}",
        f"completion top_logprobs {capabilities.get('completion_top_logprobs', 0)}",
        f"echo {'yes' if capabilities.get('echo_logprobs') else 'no'}",
        f"prompt_logprobs {'yes' if capabilities.get('prompt_logprobs') else 'no'}",
        f"n {'yes' if capabilities.get('sampling_n') else 'no'}",
        f"seed {'yes' if capabilities.get('seed') else 'no'}",
        f"chat prompt_logprobs {'yes' if capabilities.get('chat_prompt_logprobs') else 'no'}",
    ]
    if capabilities.get("ignored"):
        parts.append(f"told to ignore {', '.join(capabilities['ignored'])}")
    return ", ".join(parts)
