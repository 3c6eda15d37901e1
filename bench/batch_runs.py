"""Batch runs: a GPTScore run written as a batch request file, answered by the real
``vllm run-batch`` and read back, against the same run online.

Run from the repository root (after ``python3 manage.py install_model``)::

    .venv/bin/python bench/batch_runs.py [--docs 10] [--format vllm-batch]

Workload: the first ``--docs`` SummEval documents (16 outputs each; 10 documents are
the issue's 160 outputs), coherence, IST, src→hypo, the project's default template.
The script starts a CPU vLLM server for the default model (the online run, and the
probe), writes the run's requests with :class:`~scoring.lm.served.batch.BatchClient`
(nothing sent), answers the file with ``vllm run-batch``
(:func:`~scoring.lm.served.local_server.run_batch`), reads the results back and scores
them. Printed: requests, seconds online and by batch (the batch's including its model
load), and max |Δ| per output in mean log-probability (target: ≤ 1e-6).
"""

from __future__ import annotations

import logging
import tempfile
import time
from pathlib import Path

from _speed import MODEL, coherence_requests, options, prepare


def main() -> None:
    parser = options(__doc__.splitlines()[0])
    parser.set_defaults(docs=10)
    parser.add_argument("--format", default="vllm-batch", choices=["vllm-batch", "openai-batch"])
    args = parser.parse_args()
    defaults, docs, records = prepare(args)
    logging.basicConfig(level=logging.WARNING)
    from scoring.lm.served import EndpointSpec, ServedClient, ServedModel, probe
    from scoring.lm.served.batch import BatchClient, batch_format, read_results
    from scoring.lm.served.local_server import VLLMServer, install, run_batch

    requests = coherence_requests(defaults, records)
    fmt = batch_format(args.format)
    venv = install()
    with VLLMServer(MODEL, venv=venv) as server, tempfile.TemporaryDirectory() as tmp:
        spec = EndpointSpec(server.base_url, server.model_id, max_concurrency=8, timeout=600)
        caps = probe(ServedClient(spec))
        started = time.perf_counter()
        online = ServedModel(ServedClient(spec), capabilities=caps).score_targets(requests)
        online_s = time.perf_counter() - started

        writer = BatchClient(spec)
        ServedModel(writer, capabilities=caps).score_targets(requests)
        lines = writer.request_lines(fmt)
        ask, out = Path(tmp) / "requests.jsonl", Path(tmp) / "results.jsonl"
        ask.write_text("".join(f"{line}\n" for line in lines))
        batch_s = run_batch(ask, out, MODEL, model_id=server.model_id, venv=venv)
        found = read_results(out.read_text().splitlines(), fmt)
        reader = BatchClient(spec, answers=found.answers)
        batch = ServedModel(reader, capabilities=caps).score_targets(requests)
    failed = [s.error for s in [*online, *batch] if not s.ok]
    delta = max(
        (abs(a.mean - b.mean) for a, b in zip(online, batch, strict=True) if a.ok and b.ok),
        default=float("nan"),
    )
    print(
        f"{len(requests)} outputs from {len(docs)} documents, {len(lines)} requests "
        f"({args.format}); online {online_s:.1f} s, vllm run-batch {batch_s:.1f} s "
        f"(model load included); unanswered {len(reader.pending)}, failed lines "
        f"{len(found.failed)}, outputs failed {len(failed)}; max |Δ| {delta:.2e} "
        f"(target ≤ 1e-6)"
    )


if __name__ == "__main__":
    main()
