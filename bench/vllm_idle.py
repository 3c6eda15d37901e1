"""What an idle vLLM costs the machine: CPU seconds of the server's processes per request
for a client that sends one request, works a moment, sends the next (a run's worker, the
served tests), with vLLM's own 1-s spin after each message and with Concordia's
(``$CONCORDIA_VLLM_SPIN_S``, scoring/lm/served/vllm_idle.py), both measured here.

Run from the repository root (after ``python3 manage.py install_model``)::

    .venv/bin/python bench/vllm_idle.py [--seconds 12] [--repeat 3] [--gap 0.3]

Each setting starts the CPU vLLM server for the default model (scoring/lm/served/
local_server.py) and runs ``--repeat`` rounds of ``--seconds``: a one-token chat
request, then ``--gap`` seconds of the client's own work (a sleep), again. Printed per
setting (medians of the rounds, min-max): requests answered, the server's CPU seconds
(all its processes, from /proc) per request, the slowest request (a lost wake-up shows
as seconds); then ``--generations`` greedy generations of ``--tokens`` tokens (the
engine and its worker hand each step to each other): seconds and CPU seconds each. Then
the CPU ratios vLLM-default / Concordia and a check that both settings answer the same
top log-probabilities.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from _common import REPO, median_range, print_table
from _machine import tree_cpu_seconds
from _speed import MODEL

sys.path.insert(0, str(REPO))
from scoring.lm.served import local_server, vllm_idle  # noqa: E402


def ask(base_url: str, model_id: str, tokens: int = 1) -> dict[str, Any]:
    """A chat request for ``tokens`` tokens (greedy, all of them: no early stop)."""
    body = {
        "model": model_id,
        "messages": [{"role": "user", "content": "Rate the summary from 1 to 5: the cat sat."}],
        "max_tokens": tokens,
        "ignore_eos": True,
        "temperature": 0,
        "logprobs": True,
        "top_logprobs": 5,
    }
    request = urllib.request.Request(
        f"{base_url}/v1/chat/completions",
        json.dumps(body).encode(),
        {"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=120) as answer:
        reply: dict[str, Any] = json.loads(answer.read())
    return reply


def measure(spin: str, args: argparse.Namespace) -> tuple[list[list[float]], Any]:
    """With ``spin``: each round's requests, server CPU s per request, slowest request s,
    seconds per generation and server CPU s per generation; the first answer's
    log-probabilities."""
    os.environ[vllm_idle.VARIABLE] = spin
    log = Path(tempfile.mkdtemp(prefix="vllm-idle-")) / "server.log"
    server = local_server.VLLMServer(
        MODEL, venv=local_server.install(), model_id="smollm2", log_path=log
    )
    server.start()
    assert server.process is not None
    try:
        first = ask(server.base_url, server.model_id)  # warm, and the answer compared
        rounds = []
        for _ in range(args.repeat):
            before, started, latencies = tree_cpu_seconds(server.process.pid), time.monotonic(), []
            while time.monotonic() - started < args.seconds:
                sent = time.monotonic()
                ask(server.base_url, server.model_id)
                latencies.append(time.monotonic() - sent)
                time.sleep(args.gap)
            spent = tree_cpu_seconds(server.process.pid) - before
            before, started = tree_cpu_seconds(server.process.pid), time.monotonic()
            for _ in range(args.generations):
                ask(server.base_url, server.model_id, args.tokens)
            generated = time.monotonic() - started
            spent_generating = tree_cpu_seconds(server.process.pid) - before
            rounds.append(
                [
                    len(latencies),
                    spent / len(latencies),
                    max(latencies),
                    generated / args.generations,
                    spent_generating / args.generations,
                ]
            )
        return rounds, first["choices"][0]["logprobs"]
    finally:
        server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=12.0)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--gap", type=float, default=0.3)
    parser.add_argument("--generations", type=int, default=3)
    parser.add_argument("--tokens", type=int, default=64)
    args = parser.parse_args()
    if not (MODEL / "config.json").is_file():
        sys.exit(f"no model at {MODEL}: run `python3 manage.py install_model` first")
    settings = {
        "vLLM's 1 s": "1",
        f"Concordia's {local_server.SPIN_SECONDS} s": local_server.SPIN_SECONDS,
    }
    results, answers = {}, {}
    for name, spin in settings.items():
        results[name], answers[name] = measure(spin, args)
    body = [
        [
            name,
            median_range((r[0] for r in rounds), ".0f"),
            median_range(r[1] for r in rounds),
            median_range(r[2] for r in rounds),
            median_range((r[3] for r in rounds), ".2f"),
            median_range((r[4] for r in rounds), ".2f"),
        ]
        for name, rounds in results.items()
    ]
    print(
        f"\n{args.repeat} rounds: {args.seconds:.0f} s of one-token requests with {args.gap} s "
        f"of the client's work between them, then {args.generations} generations of "
        f"{args.tokens} tokens one after the other"
    )
    header = ["spin", "requests", "CPU s/request", "slowest s", "generation s", "CPU s/generation"]
    print_table(header, body, 1)
    for column, what in ((1, "one-token request"), (4, "generation")):
        default, ours = (
            statistics.median(r[column] for r in rounds) for rounds in results.values()
        )
        print(f"server CPU per {what}, vLLM's spin / Concordia's: {default / ours:.1f}x")
    same = len({json.dumps(a, sort_keys=True) for a in answers.values()}) == 1
    print(f"same top log-probabilities under both: {'yes' if same else 'NO'}")


if __name__ == "__main__":
    main()
