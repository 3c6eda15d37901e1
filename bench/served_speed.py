"""Served speed: GPTScore by the local engine and through vLLM serving the same model.

Run from the repository root (after ``python3 manage.py install_model``)::

    .venv/bin/python bench/served_speed.py [--docs 40] [--repeat 3] [--concurrency 8]
        [--url http://host:8000 --model-id ID]

Workload: the first ``--docs`` SummEval documents (16 outputs each; 40 documents are
the issue's 640 outputs), coherence, IST, src→hypo, with the project's default template.
Without ``--url`` the script installs vLLM's own virtualenv if needed
(scoring/lm/served/local_server.py; ``$CONCORDIA_VLLM_VENV``) and starts a CPU vLLM
server for the default model on a free loopback port; with ``--url`` it uses that
server (a GPU one, say), which must serve the same weights for |Δ| to mean anything.
Each repeat runs, in turn:

* ``local``: the in-process engine's fast path (scoring/lm/hf.py);
* ``served``: Concordia's client (scoring/lm/served), ``--concurrency`` requests in
  flight, no cache;
* ``naive``: every request fired at once with unlimited connections (no limiter, no
  retries): what the server can take.

Printed: outputs/s of each (median of ``--repeat``), max |Δ| per output in mean
log-probability between local and served, and served/naive (the median of per-repeat
ratios; target ≥ 0.9: the server, not the client, is the limit).
"""

from __future__ import annotations

import asyncio
import logging
import statistics
import time
from typing import Any

import httpx
from _common import timed
from _speed import MODEL, coherence_requests, options, prepare


def naive(base_url: str, bodies: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every request at once, unlimited connections, no timeout (the last request waits
    behind all the others); the parsed answers, in order."""

    async def fire() -> list[dict[str, Any]]:
        limits = httpx.Limits(max_connections=None, max_keepalive_connections=None)
        async with httpx.AsyncClient(base_url=base_url, timeout=None, limits=limits) as client:
            answers = await asyncio.gather(
                *(client.post("/v1/completions", json=body) for body in bodies)
            )
        for answer in answers:
            answer.raise_for_status()
        return [answer.json() for answer in answers]

    return asyncio.run(fire())


def main() -> None:
    parser = options(__doc__.splitlines()[0])
    parser.set_defaults(docs=40)
    parser.add_argument("--concurrency", type=int, default=8, help="Concordia's client")
    parser.add_argument("--url", help="a running OpenAI-compatible server (default: start one)")
    parser.add_argument("--model-id", default=MODEL.name, help="the model id it serves")
    parser.add_argument("--timeout", type=float, default=600.0, help="per request, seconds")
    parser.add_argument("--kv-cache-gb", type=int, default=2, help="a started server's cache")
    parser.add_argument(
        "--gpu", action="store_true", help="local engine on CUDA against a GPU server (--url)"
    )
    args = parser.parse_args()
    if args.gpu:
        import torch

        if not torch.cuda.is_available() or not args.url:
            print(
                "--gpu needs a CUDA device here and a GPU vLLM server (--url): none, so nothing to run"
            )
            return
    defaults, docs, records = prepare(args)
    logging.basicConfig(level=logging.WARNING)
    from scoring.lm import HFLanguageModel
    from scoring.lm.served import Capabilities, EndpointSpec, ServedClient, ServedModel, probe
    from scoring.lm.served.local_server import VLLMServer, install

    requests = coherence_requests(defaults, records)
    n = len(requests)

    server = None
    url = args.url
    if url is None:
        started = time.perf_counter()
        venv = install()
        print(f"vLLM virtualenv ready at {venv} ({time.perf_counter() - started:.0f} s)")
        server = VLLMServer(MODEL, model_id=args.model_id, venv=venv, kv_cache_gb=args.kv_cache_gb)
        server.start()
        url = server.base_url
        print(f"vLLM started at {url} in {server.startup_seconds:.0f} s (log: {server.log_path})")
    try:
        spec = EndpointSpec(
            url, args.model_id, max_concurrency=args.concurrency, timeout=args.timeout
        )
        caps: Capabilities = probe(ServedClient(spec))
        if not caps.target_logprobs:
            print(f"{url} gives no prompt log-probabilities: nothing to compare")
            return
        started = time.perf_counter()
        local = HFLanguageModel(
            MODEL, batch_size=args.batch_size, device="cuda" if args.gpu else "cpu"
        )
        print(
            f"local model loaded in {time.perf_counter() - started:.1f} s; {n} outputs from "
            f"{len(docs)} documents; {args.threads} threads; client concurrency {args.concurrency}"
        )
        echo = ServedModel(ServedClient(spec), capabilities=caps)
        bodies = [
            {"model": args.model_id, **echo._echo_body(r.prompt + r.target)} for r in requests
        ]
        paths = {
            "local": local.score_targets,
            "served": lambda reqs: ServedModel(ServedClient(spec), capabilities=caps).score_targets(
                reqs
            ),
            "naive": lambda reqs: naive(url, bodies),
        }
        times: dict[str, list[float]] = {name: [] for name in paths}
        results: dict[str, Any] = {}
        for _ in range(args.repeat):
            for name, path in paths.items():
                (took,), (results[name],) = timed(lambda path=path: path(requests), 1)
                times[name].append(took)
                print(f"    {name}: {took:.2f} s ({n / took:.2f} outputs/s)", flush=True)
        here, there = results["local"], results["served"]
        failed = [s.error for s in [*here, *there] if not s.ok]
        if failed:
            print(f"  {len(failed)} outputs failed, e.g. {failed[0]}")
        delta = max(
            (abs(a.mean - b.mean) for a, b in zip(here, there, strict=True) if a.ok and b.ok),
            default=float("nan"),
        )
        for name, runs in times.items():
            med = statistics.median(runs)
            print(
                f"  {name:<7} {med:8.2f} s  {n / med:7.2f} outputs/s  "
                f"(runs: {', '.join(f'{t:.2f}' for t in runs)})"
            )
        ratios = [
            naive_t / ours for ours, naive_t in zip(times["served"], times["naive"], strict=True)
        ]
        ratio = statistics.median(ratios)
        verdict = "PASS" if ratio >= 0.9 and delta <= 1e-3 else "FAIL"
        print(
            f"  served/local speed: {statistics.median(times['local']) / statistics.median(times['served']):.2f}x   "
            f"max |Δ| per output (mean log-prob): {delta:.2e}   "
            f"Concordia's client / naive: {ratio:.2f}x (runs: {', '.join(f'{r:.2f}' for r in ratios)})   "
            f"target ≥ 0.9x, ≤ 1e-3: {verdict}"
        )
    finally:
        if server is not None:
            server.stop()


if __name__ == "__main__":
    main()
