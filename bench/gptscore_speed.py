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
  no prefix cache). Attention runs in blocks of ``--tree-rows`` nodes, each against only
  the keys its nodes may see (scoring/lm/_tree_attention.py);
* ``tree, dense mask`` (for comparison): the fast path with one dense masked attention
  call per pack (``--tree-rows 0``), as before the blocks;
* ``batches`` (for comparison): the fast path's fallback for models whose attention
  ignores custom masks: the same prefix cache, targets in right-padded batches of
  ``--batch-size``.

Each repeat runs every path once, in turn, so that a shared host's drifting speed moves
them alike. Printed: outputs/s of each (median of ``--repeat``), the speed ratio
fast/plain (the median of the per-repeat ratios), and the largest absolute difference
between fast and plain per-token log-probabilities.
Target: ratio ≥ 6 with max |Δ| ≤ 1e-4.
"""

from __future__ import annotations

import dataclasses
import statistics
import time

from _common import timed
from _speed import MODEL, coherence_requests, options, prepare


def main() -> None:
    parser = options(__doc__.splitlines()[0])
    parser.add_argument(
        "--pack-tokens", type=int, help="trie nodes per forward (default: the engine's)"
    )
    parser.add_argument(
        "--tree-rows",
        type=int,
        help="query rows per tree-attention block (default: the engine's; 0: dense mask)",
    )
    parser.add_argument(
        "--doc-pack-tokens",
        type=int,
        default=0,
        help="tokens per forward packing whole documents together (default 0: one document "
        "at a time, the CPU default; the fast path is then called with all documents at once)",
    )
    args = parser.parse_args()
    defaults, docs, records = prepare(args)
    from scoring.lm import HFLanguageModel, _causal

    requests = coherence_requests(defaults, records)

    started = time.perf_counter()
    lm = HFLanguageModel(
        MODEL, batch_size=args.batch_size, device="cpu", doc_pack_tokens=args.doc_pack_tokens
    )
    assert lm._causal is not None
    changes = {"pack_tokens": args.pack_tokens, "tree_rows": args.tree_rows}
    lm._causal = dataclasses.replace(
        lm._causal, **{k: v for k, v in changes.items() if v is not None}
    )
    tree = _causal.tree_attention_works(lm._causal)
    rows = _causal.tree_rows_used(lm._causal)
    print(
        f"model {MODEL.name} loaded in {time.perf_counter() - started:.1f} s; {len(requests)} outputs "
        f"from {len(docs)} documents; {args.threads} threads; batch size {args.batch_size}; "
        f"tree attention {'on' if tree else 'UNAVAILABLE'}, {_causal.pack_budget(lm._causal)} nodes per pack, "
        f"attention blocks of {rows or 'all (dense mask)'} rows, "
        f"documents packed together: {args.doc_pack_tokens or 'no'}"
    )

    # Dense: the pack size that suits the dense mask, unless one was asked for.
    dense = dataclasses.replace(lm._causal, tree_rows=0)
    paths = {
        "plain": lm.score_targets_plain,
        "batches": lambda reqs: _causal.score_fast(lm._causal, reqs, args.batch_size, tree=False),
        "dense": lambda reqs: _causal.score_fast(dense, reqs, args.batch_size),
        "fast": lm.score_targets,
    }
    # Interleaved: each repeat runs every path once, so a machine that speeds up or slows
    # down during the run (shared hosts do) moves all of them alike.
    # CPU time (both threads) is printed beside wall time: a neighbour slowing the host
    # moves it less.
    times: dict[str, list[float]] = {name: [] for name in paths}
    cpu: dict[str, list[float]] = {name: [] for name in paths}
    results = {}
    for _ in range(args.repeat):
        for name, path in paths.items():
            before = time.process_time()
            (took,), (results[name],) = timed(lambda path=path: path(requests), 1)
            cpu[name].append(time.process_time() - before)
            times[name].append(took)
    fast, plain = results["fast"], results["plain"]
    delta = max(
        abs(a - b)
        for f, p in zip(fast, plain, strict=True)
        for a, b in zip(f.token_logprobs, p.token_logprobs, strict=True)
    )
    tokens = sum(s.n_tokens for s in fast)
    n = len(requests)
    labels = {"dense": "tree, dense mask", "fast": "fast"}
    for name, runs in times.items():
        med = statistics.median(runs)
        print(
            f"  {labels.get(name, name):<17} {med:8.2f} s  {n / med:6.2f} outputs/s  "
            f"{tokens / med:8.1f} target tokens/s  (runs: {', '.join(f'{t:.2f}' for t in runs)})"
        )

    def ratio_of(slow: str, quick: str, clock: dict[str, list[float]]) -> float:
        return statistics.median(a / b for a, b in zip(clock[slow], clock[quick], strict=True))

    ratios = [p / f for p, f in zip(times["plain"], times["fast"], strict=True)]
    ratio = statistics.median(ratios)
    verdict = "PASS" if ratio >= 6 and delta <= 1e-4 else "FAIL"
    print(
        f"  CPU time, median: {', '.join(f'{k} {statistics.median(v):.2f} s' for k, v in cpu.items())}; "
        f"fast/plain {ratio_of('plain', 'fast', cpu):.2f}x"
    )
    print(
        f"  blocked attention against the dense mask: {ratio_of('dense', 'fast', times):.2f}x wall, "
        f"{ratio_of('dense', 'fast', cpu):.2f}x CPU time (medians of per-repeat ratios)"
    )
    print(
        f"  speed ratio fast/plain: {ratio:.2f}x (median of per-repeat ratios: "
        f"{', '.join(f'{r:.2f}' for r in ratios)})   max |Δ| per token: {delta:.2e}   "
        f"target ≥ 6x, ≤ 1e-4: {verdict}"
    )


if __name__ == "__main__":
    main()
