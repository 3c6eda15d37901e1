"""GPTScore on a GPU: the engine against a harness-style baseline, at three model sizes.

Run from the repository root on a machine with a CUDA GPU (no download)::

    .venv/bin/python bench/gpu_speed.py [--sizes 135M 1.7B 7B] [--precisions fast exact]
                                        [--docs 40] [--baseline-batch 32] [--tflops N]
    .venv/bin/python bench/gpu_speed.py --cpu-smoke   # the whole script, tiny, on the CPU

Without CUDA (and without ``--cpu-smoke``) it says so and exits with status 0.

Models: random weights of Llama-architecture configurations built here (SmolLM2-135M,
SmolLM2-1.7B, Llama-2-7B shapes; the 7B keeps its own shapes but the default model's
49,152-token vocabulary, as every size uses the default model's tokenizer). Random
weights are enough for speed; the numbers' values mean nothing.

Workload: the first ``--docs`` SummEval documents (16 outputs each: 640 outputs for 40),
coherence, IST, src→hypo, with the project's default template (GPTScore Table 11), as in
``gptscore_speed.py``.

Compared, per size and precision (``fast``: bfloat16; ``exact``: float32, TF32 off):

* ``baseline``: what lm-evaluation-harness's Hugging Face backend does, written here:
  context and output tokenised separately and concatenated, requests sorted by length
  (longest first), right-padded batches of ``--baseline-batch`` across documents,
  full-vocabulary ``log_softmax``, output tokens gathered. No prefix reuse.
* ``engine``: ``score_fast`` called with all outputs at once: whole documents (prefix
  and continuation trie) packed up to the CUDA budget per forward with a tree mask
  (:mod:`scoring.lm._doc_packs`), vocabulary projection only at scored positions.
* ``plain``: one forward per output (the reference), for max |Δ| only; it is not timed.

A second table covers the other model paths on the same outputs, fast against plain
(both timed): ``seq2seq`` (a random T5-base: prompt to the encoder, output to the
decoder) and ``rating`` (G-Eval's label distribution after a form-filling suffix, on
the random 135M Llama). It prints each fast path's fallback rows (rows a failing
strategy handed on, ending one by one with the plain path's numbers) and their latest
error, and whether fast is bit-equal to plain. Issue 15 saw both paths bit-equal in
bf16 on an H100 and suspected a silent fallback; bit-equality alone does not show one
(on this CPU the tiny smoke models are bit-equal in both dtypes with no fallback, since
a batch row's products can round exactly as a lone row's): the fallback count does.

Printed: a table of size, precision, outputs/s, the ratio engine/baseline, the engine's
share of the useful-FLOP floor (2 × parameters × (each document's prefix tokens once +
every output's remaining tokens) at the card's matrix-product rate, measured on a large
matrix product in that dtype unless ``--tflops`` states it) and the largest |Δ| per token
between the engine and the plain path. Targets (issue 15): engine ≥ 3× the baseline at
every size in ``fast``, ≥ 40% of the floor at 7B, ``exact`` within 1e-4 of plain.
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import statistics
import sys
import time
from dataclasses import dataclass
from typing import Any

from _common import REPO, SUMMEVAL
from _speed import MODEL, coherence_config

logger = logging.getLogger("gpu_speed")

# Llama-architecture shapes (hidden, intermediate, layers, heads, key/value heads, tied).
SHAPES: dict[str, tuple[int, int, int, int, int, bool]] = {
    "135M": (576, 1536, 30, 9, 3, True),  # SmolLM2-135M
    "1.7B": (2048, 8192, 24, 32, 32, True),  # SmolLM2-1.7B
    "7B": (4096, 11008, 32, 32, 32, False),  # Llama-2-7B
    "tiny": (64, 128, 2, 4, 2, True),  # --cpu-smoke
}
DTYPES = {"fast": "bfloat16", "exact": "float32"}
SMOKE_TEXTS = [
    "The council approved the new budget on Tuesday after a long debate about taxes.",
    "The storm closed roads and schools across the region for two days.",
]


def options(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="+", default=["135M", "1.7B", "7B"], choices=SHAPES)
    parser.add_argument("--precisions", nargs="+", default=["fast", "exact"], choices=DTYPES)
    parser.add_argument(
        "--paths",
        nargs="+",
        default=["gptscore", "seq2seq", "rating"],
        choices=["gptscore", "seq2seq", "rating"],
    )
    parser.add_argument("--docs", type=int, default=40)
    parser.add_argument("--outputs-per-doc", type=int, default=16)
    parser.add_argument("--baseline-batch", type=int, default=32)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--doc-pack-tokens", type=int, help="default: the engine's CUDA budget")
    parser.add_argument(
        "--tree-rows",
        type=int,
        help="query rows per tree-attention block (default: the engine's CUDA "
        "default, 0: one dense masked call per forward)",
    )
    parser.add_argument("--tflops", type=float, help="the card's rate (default: measured)")
    parser.add_argument(
        "--cpu-smoke",
        action="store_true",
        help="run everything on a tiny random model on the CPU (a check)",
    )
    args = parser.parse_args(argv)
    if args.cpu_smoke:
        args.sizes, args.docs, args.outputs_per_doc, args.repeat = ["tiny"], 2, 3, 1
    return args


@dataclass(frozen=True)
class Row:
    """One line of the table."""

    size: str
    precision: str
    outputs_per_s: float
    baseline_per_s: float
    floor_share: float
    max_delta: float


@dataclass(frozen=True)
class Tables:
    """What a run measured: the GPTScore table's rows and the other paths' rows."""

    rows: list[Row]
    paths: list[PathRow]


def main(argv: list[str] | None = None) -> Tables:
    """Run the benchmark; return both tables' rows (empty without a device to run on)."""
    logging.basicConfig(level=logging.WARNING)
    args = options(argv)
    sys.path.insert(0, str(REPO))
    import torch

    if not args.cpu_smoke and not torch.cuda.is_available():
        print(
            "bench/gpu_speed.py needs a CUDA GPU and none is visible here; nothing was "
            "measured. (Run with --cpu-smoke to check the script on a tiny CPU model.)"
        )
        return Tables([], [])
    device = "cpu" if args.cpu_smoke else "cuda"
    tokenizer = _tokenizer(args.cpu_smoke)
    requests = _requests(args)
    print(
        f"{len(requests)} outputs from {args.docs} documents on {_device_name(device)}; "
        f"baseline batch {args.baseline_batch}"
    )
    rows: list[Row] = []
    for size in args.sizes if "gptscore" in args.paths else []:
        for precision in args.precisions:
            rows.append(_measure(size, precision, device, tokenizer, requests, args))
            _print(rows[-1:])  # as each is measured: a run cut short keeps its rows
            gc.collect()
            if device == "cuda":
                torch.cuda.empty_cache()
    paths = other_paths(args, device, tokenizer, requests)
    _print(rows)
    _print_paths(paths)
    return Tables(rows, paths)


def _device_name(device: str) -> str:
    import torch

    return torch.cuda.get_device_name() if device == "cuda" else "the CPU"


def _tokenizer(smoke: bool) -> Any:
    """The default model's tokenizer; for the smoke run, a small BPE trained on the smoke
    texts (a 49,152-token vocabulary would make the tiny model's run slow)."""
    import transformers

    if not smoke:
        if not (MODEL / "tokenizer.json").is_file():
            sys.exit(f"no tokenizer at {MODEL}: run `python3 manage.py install_model` first")
        return transformers.AutoTokenizer.from_pretrained(MODEL)
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    raw = Tokenizer(models.BPE())
    raw.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(
        vocab_size=300,
        special_tokens=["<pad>", "</s>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    raw.train_from_iterator(SMOKE_TEXTS, trainer)
    return transformers.PreTrainedTokenizerFast(
        tokenizer_object=raw, eos_token="</s>", pad_token="<pad>"
    )


def _requests(args: argparse.Namespace) -> list[Any]:
    """GPTScore requests for the first ``args.docs`` SummEval documents (smoke: two
    built-in documents if the file is absent)."""
    from scoring.metrics.gptscore import Item, build_requests

    config = coherence_config()
    if SUMMEVAL.is_file():
        records = [json.loads(line) for line in SUMMEVAL.read_text().splitlines()]
        docs = list(dict.fromkeys(r["doc_id"] for r in records))[: args.docs]
        records = [r for r in records if r["doc_id"] in docs]
    elif args.cpu_smoke:
        records = [
            {"doc_id": d, "source": text, "output": text[: 20 + 9 * k]}
            for d, text in enumerate(SMOKE_TEXTS)
            for k in range(4)
        ]
    else:
        sys.exit(f"needs {SUMMEVAL} (the shared data folder beside the repository)")
    kept: dict[Any, int] = {}
    items = []
    for i, r in enumerate(records):
        if kept.setdefault(r["doc_id"], 0) < args.outputs_per_doc:
            kept[r["doc_id"]] += 1
            items.append(
                Item(
                    key=i,
                    doc_key=r["doc_id"],
                    source=r["source"][:300] if args.cpu_smoke else r["source"],
                    hypothesis=r["output"],
                )
            )
    return build_requests(items, config)


def _build(size: str, dtype: str, device: str, vocab: int) -> Any:
    """A Llama-architecture model of ``size`` with random weights, built on ``device``."""
    import torch
    import transformers

    hidden, intermediate, layers, heads, kv_heads, tied = SHAPES[size]
    config = transformers.LlamaConfig(
        vocab_size=vocab,
        hidden_size=hidden,
        intermediate_size=intermediate,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        max_position_embeddings=8192,
        tie_word_embeddings=tied,
        attn_implementation="sdpa",
    )
    torch.manual_seed(0)
    with torch.device(device):
        model = transformers.LlamaForCausalLM(config).to(getattr(torch, dtype))
    return model.eval()


def _measure(
    size: str, precision: str, device: str, tokenizer: Any, requests: list[Any], args: Any
) -> Row:
    import torch

    from scoring.lm import _causal, _doc_packs, _tree_attention, hf

    dtype = _dtype_for(precision)
    model = _build(size, dtype, device, len(tokenizer))
    rows = args.tree_rows if args.tree_rows is not None else _tree_attention.default_rows("cuda")
    lm = hf.causal_model(model, tokenizer, device, tree_rows=rows)
    budget = args.doc_pack_tokens
    if budget is None:
        budget = _doc_packs.CUDA_DOC_PACK_TOKENS  # the CUDA default, on the CPU smoke too
    lm = _replace(lm, doc_pack_tokens=budget)
    tree = _causal.tree_attention_works(lm)
    parameters = sum(p.numel() for p in model.parameters())
    print(
        f"{size}/{precision}: {parameters / 1e9:.2f}B parameters, {dtype}, tree attention "
        f"{'on' if tree else 'UNAVAILABLE'}, {budget} tokens per packed forward, attention "
        f"blocks of {_causal.tree_rows_used(lm) or 'all (dense mask)'} rows"
    )

    engine_times, engine = _timed(lambda: _causal.score_fast(lm, requests, 8), args.repeat, device)
    base_times, _ = _timed(lambda: baseline(lm, requests, args.baseline_batch), args.repeat, device)
    with torch.inference_mode():
        plain = _causal.score_plain(lm, requests)
    delta = max(
        abs(a - b)
        for f, p in zip(engine, plain, strict=True)
        for a, b in zip(f.token_logprobs, p.token_logprobs, strict=True)
    )
    seconds = statistics.median(engine_times)
    tflops = args.tflops or _matmul_tflops(dtype, device)
    floor = 2 * parameters * useful_tokens(lm, requests) / (tflops * 1e12)
    return Row(
        size=size,
        precision=precision,
        outputs_per_s=len(requests) / seconds,
        baseline_per_s=len(requests) / statistics.median(base_times),
        floor_share=floor / seconds,
        max_delta=delta,
    )


def _dtype_for(precision: str) -> str:
    """The dtype a precision runs in; for ``exact``, TF32 turned off first."""
    if precision == "exact":
        from scoring.lm import precision as _precision

        _precision.use_exact_matmul()
    return DTYPES[precision]


def _replace(lm: Any, **changes: Any) -> Any:
    import dataclasses

    return dataclasses.replace(lm, **changes)


def _timed(fn: Any, repeat: int, device: str) -> tuple[list[float], Any]:
    """Wall times of ``repeat`` calls after one warm-up call, and the last result."""
    import torch

    result = fn()  # warm-up: kernels chosen, caches allocated
    times = []
    for _ in range(repeat):
        if device == "cuda":
            torch.cuda.synchronize()
        start = time.perf_counter()
        result = fn()
        if device == "cuda":
            torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    return times, result


def baseline(lm: Any, requests: list[Any], batch_size: int) -> list[list[float]]:
    """Target log-probabilities the lm-evaluation-harness way (see the module docstring);
    results in request order."""
    import torch

    contexts = lm.tokenizer([r.prompt for r in requests])["input_ids"]
    outputs = lm.tokenizer([r.target for r in requests], add_special_tokens=False)["input_ids"]
    rows = []
    for i, (context, output) in enumerate(zip(contexts, outputs, strict=True)):
        whole = (list(context) + list(output))[-(lm.context_limit or 10**9) - 1 :]
        rows.append((i, whole, len(output)))
    rows.sort(key=lambda row: -len(row[1]))  # longest first, as the harness's collator
    found: dict[int, list[float]] = {}
    with torch.inference_mode():
        for start in range(0, len(rows), batch_size):
            batch = rows[start : start + batch_size]
            width = len(batch[0][1]) - 1  # the last token is fed by nobody: it predicts nothing
            ids = torch.full((len(batch), width), lm.pad_id, dtype=torch.long)
            for b, (_, whole, _) in enumerate(batch):
                ids[b, : len(whole) - 1] = torch.tensor(whole[:-1])
            ids = ids.to(lm.device)
            logprobs = torch.log_softmax(lm.model(input_ids=ids).logits.float(), dim=-1)
            for b, (i, whole, n_out) in enumerate(batch):
                fed = len(whole) - 1
                targets = torch.tensor(whole[-n_out:], device=lm.device)
                picked = logprobs[b, fed - n_out : fed].gather(1, targets.unsqueeze(1))
                found[i] = picked.squeeze(1).tolist()
    return [found[i] for i in range(len(requests))]


def useful_tokens(lm: Any, requests: list[Any]) -> int:
    """Tokens a perfect engine would feed: each document's shared prefix once, plus every
    output's tokens after it."""
    from scoring.lm import _causal
    from scoring.lm._util import common_prefix_len

    encoded = [
        e
        for e in _causal.tokenise(lm, requests, lm.context_limit)
        if isinstance(e, _causal.CausalEncoding)
    ]
    by_prompt: dict[str, list[Any]] = {}
    for request, enc in zip(requests, encoded, strict=True):
        by_prompt.setdefault(request.prompt, []).append(enc)
    total = 0
    for encodings in by_prompt.values():
        shared = common_prefix_len([e.ids for e in encodings], min(len(e.ids) for e in encodings))
        total += shared + sum(len(e.ids) - shared for e in encodings)
    return total


def _matmul_tflops(dtype: str, device: str) -> float:
    """The card's matrix-product rate in this dtype, from a large square product."""
    import torch

    n = 8192 if device == "cuda" else 512
    a = torch.randn((n, n), dtype=getattr(torch, dtype), device=device)
    b = torch.randn((n, n), dtype=getattr(torch, dtype), device=device)
    a @ b  # warm-up
    times = []
    for _ in range(5):
        if device == "cuda":
            torch.cuda.synchronize()
        start = time.perf_counter()
        a @ b
        if device == "cuda":
            torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    return 2 * n**3 / min(times) / 1e12


# -- the seq2seq and G-Eval rating paths -----------------------------------------------

# T5-base shape (d_model, d_ff, layers, heads, key/value size); tiny for the smoke run.
T5_SHAPES = {"t5-base": (768, 3072, 12, 12, 64), "tiny": (32, 64, 2, 4, 8)}
FORM = "\n\nEvaluation Form (scores ONLY):\n- Coherence:"


@dataclass(frozen=True)
class PathRow:
    """One line of the second table: a path's fast and plain speeds and agreement."""

    path: str
    precision: str
    fast_per_s: float
    plain_per_s: float
    max_delta: float
    identical: bool  # bit-equal to plain (possible without a fallback: see the docstring)
    fallbacks: dict[str, int]  # rows each fast strategy handed on per call
    errors: dict[str, str]


def other_paths(
    args: argparse.Namespace, device: str, tokenizer: Any, requests: list[Any]
) -> list[PathRow]:
    """The seq2seq (random T5-base) and G-Eval rating (random 135M Llama) paths: fast
    against plain, timed alike, with the fast path's fallbacks counted."""
    import torch
    import transformers

    from scoring.lm import _rating, _seq2seq, hf
    from scoring.lm.rating import RatingRequest

    found: list[PathRow] = []
    for precision in args.precisions:
        dtype = _dtype_for(precision)
        if "seq2seq" in args.paths:
            d_model, d_ff, layers, heads, d_kv = T5_SHAPES["tiny" if args.cpu_smoke else "t5-base"]
            config = transformers.T5Config(
                vocab_size=len(tokenizer),
                d_model=d_model,
                d_ff=d_ff,
                num_layers=layers,
                num_heads=heads,
                d_kv=d_kv,
                decoder_start_token_id=tokenizer.pad_token_id,
                pad_token_id=tokenizer.pad_token_id,
                eos_token_id=tokenizer.eos_token_id,
            )
            torch.manual_seed(0)
            with torch.device(device):
                t5 = (
                    transformers.T5ForConditionalGeneration(config).to(getattr(torch, dtype)).eval()
                )
            lm = _seq2seq.Seq2SeqModel(
                t5, tokenizer, device, 512, tokenizer.pad_token_id, tokenizer.pad_token_id
            )
            found.append(
                _compare(
                    "seq2seq",
                    precision,
                    device,
                    args.repeat,
                    requests,
                    lambda reqs, lm=lm: _seq2seq.score_fast(lm, reqs, 8),
                    lambda reqs, lm=lm: _seq2seq.score_plain(lm, reqs),
                    lambda r: r.token_logprobs,
                )
            )
            del t5, lm
        if "rating" in args.paths:
            model = _build("tiny" if args.cpu_smoke else "135M", dtype, device, len(tokenizer))
            causal = hf.causal_model(model, tokenizer, device)
            ratings = [
                RatingRequest(
                    r.key,
                    r.prompt + r.target + FORM,
                    tuple(str(k) for k in range(1, 6)),
                    group=r.prompt,
                )
                for r in requests
            ]
            found.append(
                _compare(
                    "rating",
                    precision,
                    device,
                    args.repeat,
                    ratings,
                    lambda reqs, lm=causal: _rating.rate_fast(lm, reqs, 8),
                    lambda reqs, lm=causal: _rating.rate_plain(lm, reqs),
                    lambda r: r.probs,
                )
            )
            del model, causal
        gc.collect()
        if device == "cuda":
            torch.cuda.empty_cache()
    return found


def _compare(
    path: str,
    precision: str,
    device: str,
    repeat: int,
    requests: list[Any],
    fast: Any,
    plain: Any,
    values: Any,
) -> PathRow:
    from scoring.lm._collate import FALLBACKS as fallbacks

    before = fallbacks.rows.copy()
    fast_times, fast_out = _timed(lambda: fast(requests), repeat, device)
    calls = repeat + 1  # _timed's warm-up call included
    handed_on = {name: -(-n // calls) for name, n in fallbacks.since(before).items()}  # per call
    plain_times, plain_out = _timed(lambda: plain(requests), repeat, device)
    pairs = [
        (a, b)
        for f, p in zip(fast_out, plain_out, strict=True)
        for a, b in zip(values(f), values(p), strict=True)
    ]
    row = PathRow(
        path=path,
        precision=precision,
        fast_per_s=len(requests) / statistics.median(fast_times),
        plain_per_s=len(requests) / statistics.median(plain_times),
        max_delta=max((abs(a - b) for a, b in pairs), default=0.0),
        identical=all(a == b for a, b in pairs),
        fallbacks=handed_on,
        errors={k: fallbacks.errors[k] for k in handed_on},
    )
    print(
        f"{path}/{precision}: fast {row.fast_per_s:.1f} out/s, plain {row.plain_per_s:.1f}, "
        f"fallback rows {handed_on or 'none'}{'; errors: ' + str(row.errors) if handed_on else ''}"
    )
    return row


def _print_paths(rows: list[PathRow]) -> None:
    if not rows:
        return
    print(
        f"\n{'path':<8} {'precision':<9} {'fast/s':>8} {'plain/s':>8} {'ratio':>6} "
        f"{'max |Δ|':>9} {'bit-equal':>9} fallback rows"
    )
    for r in rows:
        print(
            f"{r.path:<8} {r.precision:<9} {r.fast_per_s:8.1f} {r.plain_per_s:8.1f} "
            f"{r.fast_per_s / r.plain_per_s:5.2f}x {r.max_delta:9.2e} {str(r.identical):>9} "
            f"{sum(r.fallbacks.values())}"
        )
    print("fallback rows > 0: the fast path failed for those rows (errors printed above)")


def _print(rows: list[Row]) -> None:
    print(
        f"\n{'size':<6} {'precision':<9} {'out/s':>8} {'baseline':>9} {'ratio':>6} "
        f"{'floor':>6} {'max |Δ|':>9}"
    )
    for r in rows:
        ratio = r.outputs_per_s / r.baseline_per_s
        print(
            f"{r.size:<6} {r.precision:<9} {r.outputs_per_s:8.1f} {r.baseline_per_s:9.1f} "
            f"{ratio:5.2f}x {r.floor_share:6.1%} {r.max_delta:9.2e}"
        )
    print("targets: ratio ≥ 3x in fast at every size; floor ≥ 40% at 7B; exact max |Δ| ≤ 1e-4")


if __name__ == "__main__":
    main()
