"""GPTScore speed: the fast path against a plain path, on the real default model.

Run from the repository root (after ``python3 manage.py install_model``)::

    .venv/bin/python bench/gptscore_speed.py [--docs 2] [--repeat 3] [--threads 2]

Workload: the first ``--docs`` SummEval documents (16 outputs each), coherence, IST,
src→hypo, with the project's default template (GPTScore Table 11). Both paths score the
same requests in the same run:

* ``plain``: mirrors the GPTScore reference implementation -- one forward per output
  over the full prompt+output text, full-vocabulary logits at every position;
* ``fast``: the document's prompt prefix computed once and reused (past key values);
  the outputs' continuations merged into token tries (an opening several outputs share
  is computed once) run with a tree attention mask, ``--pack-tokens`` nodes per
  forward, no padding; vocabulary projection only where a target token is predicted
  (with ``--doc-pack-tokens N``: whole documents packed together, N tokens per forward,
  no prefix cache);
* ``batches`` (for comparison): the fast path's fallback for models whose attention
  ignores custom masks: the same prefix cache, targets in right-padded batches of
  ``--batch-size``.

Printed: outputs/s of each (median of ``--repeat``), the speed ratio fast/plain, and the
largest absolute difference between fast and plain per-token log-probabilities.
Target: ratio ≥ 6 with max |Δ| ≤ 1e-4.
"""

from __future__ import annotations

import dataclasses
import statistics
import time

from _speed import MODEL, options, prepare, timed


def main() -> None:
    parser = options(__doc__.splitlines()[0])
    parser.add_argument(
        "--pack-tokens", type=int, help="trie nodes per forward (default: the engine's)"
    )
    parser.add_argument(
        "--doc-pack-tokens", type=int, default=0,
        help="tokens per forward packing whole documents together (default 0: one document "
        "at a time, the CPU default; the fast path is then called with all documents at once)",
    )  # fmt: skip
    args = parser.parse_args()
    defaults, docs, records = prepare(args)
    from scoring.lm import HFLanguageModel, _causal
    from scoring.metrics.gptscore import GPTScoreConfig, Item, Template, build_requests

    row = next(t for t in defaults["templates"] if t["task"] == "summarization" and t["kind"] == "gptscore"
               and t["aspect"] == "COH" and t["dimension"] == "src_hypo")  # fmt: skip
    config = GPTScoreConfig(template=Template(row["text"], row["target"]))
    items = [Item(key=i, doc_key=r["doc_id"], source=r["source"], hypothesis=r["output"])
             for i, r in enumerate(records)]  # fmt: skip
    requests = build_requests(items, config)

    started = time.perf_counter()
    lm = HFLanguageModel(
        MODEL, batch_size=args.batch_size, device="cpu", doc_pack_tokens=args.doc_pack_tokens
    )
    assert lm._causal is not None
    if args.pack_tokens:
        lm._causal = dataclasses.replace(lm._causal, pack_tokens=args.pack_tokens)
    tree = _causal.tree_attention_works(lm._causal)
    print(f"model {MODEL.name} loaded in {time.perf_counter() - started:.1f} s; {len(requests)} outputs "
          f"from {len(docs)} documents; {args.threads} threads; batch size {args.batch_size}; "
          f"tree attention {'on' if tree else 'UNAVAILABLE'}, {lm._causal.pack_tokens} nodes per pack, "
          f"documents packed together: {args.doc_pack_tokens or 'no'}")  # fmt: skip

    def padded_batches(reqs):  # type: ignore[no-untyped-def]
        assert lm._causal is not None
        return _causal.score_fast(lm._causal, reqs, args.batch_size, tree=False)

    fast_times, fast = timed(lm.score_targets, requests, args.repeat)
    batch_times, _ = timed(padded_batches, requests, args.repeat)
    plain_times, plain = timed(lm.score_targets_plain, requests, args.repeat)
    delta = max(abs(a - b) for f, p in zip(fast, plain, strict=True)
                for a, b in zip(f.token_logprobs, p.token_logprobs, strict=True))  # fmt: skip
    tokens = sum(s.n_tokens for s in fast)
    n = len(requests)
    for name, times in (("plain", plain_times), ("batches", batch_times), ("fast", fast_times)):
        med = statistics.median(times)
        print(f"  {name:<7} {med:8.2f} s  {n / med:6.2f} outputs/s  {tokens / med:8.1f} target tokens/s  "
              f"(runs: {', '.join(f'{t:.2f}' for t in times)})")  # fmt: skip
    ratio = statistics.median(plain_times) / statistics.median(fast_times)
    verdict = "PASS" if ratio >= 6 and delta <= 1e-4 else "FAIL"
    print(
        f"  speed ratio fast/plain: {ratio:.2f}x   max |Δ| per token: {delta:.2e}   target ≥ 6x, ≤ 1e-4: {verdict}"
    )


if __name__ == "__main__":
    main()
