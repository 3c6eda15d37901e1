"""G-Eval speed: the prefix-sharing rating path against a plain one, on the default model.

Run from the repository root (after ``python3 manage.py install_model``)::

    .venv/bin/python bench/geval_speed.py [--docs 2] [--repeat 3] [--threads 2]

Workload: the first ``--docs`` SummEval documents (16 outputs each), coherence, the
prompt built as a G-Eval run builds it (the paper's SummEval introduction, criteria
from the default coherence aspect, the paper's evaluation steps, the texts, the form),
wrapped in the model's chat template, labels 1-5. Both paths rate the same requests in
the same run:

* ``plain``: one forward per output over its whole prompt, full-vocabulary logits at
  every position (what a straightforward implementation does);
* ``fast``: the document's shared prefix (chat header, introduction, criteria, steps,
  source) computed once and its key/value cache reused, each output's remaining tokens
  batched longest first, the vocabulary projection only at the rating position.

Printed: outputs/s of each (median of ``--repeat``), the speed ratio, and the largest
absolute difference between their label probabilities.
"""

from __future__ import annotations

import statistics
import time

from _common import timed
from _speed import MODEL, options, prepare

PAPER_STEPS = (
    "1. Read the news article carefully and identify the main topic and key points.\n"
    "2. Read the summary and compare it to the news article. Check if the summary covers the "
    "main topic and key points of the news article, and if it presents them in a clear and "
    "logical order.\n"
    "3. Assign a score for coherence on a scale of 1 to 5, where 1 is the lowest and 5 is the "
    "highest based on the Evaluation Criteria."
)


def main() -> None:
    args = options(__doc__.splitlines()[0]).parse_args()
    defaults, docs, records = prepare(args)
    from scoring.lm import HFLanguageModel
    from scoring.metrics import geval
    from scoring.metrics.base import Item

    template = next(
        t for t in defaults["templates"] if t["kind"] == "geval" and t["aspect"] == "COH"
    )
    aspect = next(a for a in defaults["aspects"] if a["code"] == "COH")
    intro, source_label, output_label = geval.introduction_for("summarization", template["text"])
    scale = geval.integer_scale(aspect["scale_min"], aspect["scale_max"])
    config = geval.GEvalConfig(
        introduction=intro,
        aspect_name=aspect["name"],
        scale=scale,
        steps=PAPER_STEPS,
        criteria=geval.criteria_text(
            aspect["name"], aspect["definition"], scale, aspect["anchors"]
        ),
        source_label=source_label,
        output_label=output_label,
    )
    items = [
        Item(key=i, doc_key=r["doc_id"], source=r["source"], hypothesis=r["output"])
        for i, r in enumerate(records)
    ]

    started = time.perf_counter()
    lm = HFLanguageModel(MODEL, batch_size=args.batch_size, device="cpu")
    requests = geval.requests(config, items, geval.formatter(lm, config))
    lengths = [len(lm.loaded.tokenizer(r.prompt)["input_ids"]) for r in requests]
    print(
        f"model {MODEL.name} loaded in {time.perf_counter() - started:.1f} s; {len(requests)} outputs "
        f"from {len(docs)} documents; prompts {min(lengths)}-{max(lengths)} tokens; "
        f"{args.threads} threads; batch size {args.batch_size}"
    )

    fast_times, (*_, fast) = timed(lambda: lm.rating_distributions(requests), args.repeat)
    plain_times, (*_, plain) = timed(lambda: lm.rating_distributions_plain(requests), args.repeat)
    assert all(d.ok for d in fast) and all(d.ok for d in plain)
    delta = max(
        abs(a - b)
        for f, p in zip(fast, plain, strict=True)
        for a, b in zip(f.probs, p.probs, strict=True)
    )
    weighted = [d.weighted([float(v) for v in scale]) for d in fast]
    score_delta = max(
        abs(a - p.weighted([float(v) for v in scale])) for a, p in zip(weighted, plain, strict=True)
    )
    n = len(requests)
    for name, times in (("plain", plain_times), ("fast", fast_times)):
        med = statistics.median(times)
        print(
            f"  {name:<6} {med:8.2f} s  {n / med:6.2f} outputs/s  "
            f"(runs: {', '.join(f'{t:.2f}' for t in times)})"
        )
    ratio = statistics.median(plain_times) / statistics.median(fast_times)
    print(
        f"  speed ratio fast/plain: {ratio:.2f}x   max |Δ| label probability: {delta:.2e}   "
        f"max |Δ| score Σp·s: {score_delta:.2e}"
    )
    print(
        f"  scores {min(weighted):.3f}-{max(weighted):.3f}; mean label mass "
        f"{statistics.mean(d.label_mass or 0 for d in fast):.3f}"
    )


if __name__ == "__main__":
    main()
